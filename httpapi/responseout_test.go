package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// countingWriter records each Write and Flush that reaches net/http's
// response writer: over HTTP/2 each is a hand-off to the connection's
// serve loop.
type countingWriter struct {
	*httptest.ResponseRecorder
	writes, flushes int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	return w.ResponseRecorder.Write(b)
}

func (w *countingWriter) Flush() {
	w.flushes++
	w.ResponseRecorder.Flush()
}

func newCountingOut() (*responseOut, *countingWriter) {
	cw := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
	resp := echo.NewResponse(cw, echo.New())
	return &responseOut{resp: resp, rc: http.NewResponseController(resp.Writer)}, cw
}

// TestResponseOut_Flush: the lines of a drain reach net/http as one Write
// and one Flush, whole and in order, however many there are, and a drain
// larger than responseWriteBatch in Writes of about that size.
func TestResponseOut_Flush(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lines      int
		size       int
		wantWrites int
	}{
		{"one event", 1, 1200, 1},
		{"a backlog", 50, 1200, 1},
		{"beyond the batch", 200, 1200, 4},
		{"events larger than the batch", 3, responseWriteBatch + 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, cw := newCountingOut()
			var want bytes.Buffer
			for i := range tc.lines {
				line := append(bytes.Repeat([]byte{'a' + byte(i%26)}, tc.size-8), fmt.Sprintf("%06d\n", i)...)
				want.Write(line)
				if err := o.write(line); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.flush(); err != nil {
				t.Fatal(err)
			}
			if got := cw.Body.Bytes(); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("body: %d bytes, want the %d bytes written, in order", len(got), want.Len())
			}
			if cw.writes != tc.wantWrites || cw.flushes != 1 {
				t.Errorf("net/http got %d writes and %d flushes, want %d and 1", cw.writes, cw.flushes, tc.wantWrites)
			}
			if o.lines != nil || o.size != 0 {
				t.Errorf("after the flush the stream keeps %d bytes of lines, want none", o.size)
			}
		})
	}
}

// TestResponseOut_Stuck: a write counts as stuck only while it is in
// progress and older than watchWriteTimeout.
func TestResponseOut_Stuck(t *testing.T) {
	o, _ := newCountingOut()
	now := time.Now()
	if o.stuck(now) {
		t.Fatal("idle stream stuck, want not")
	}
	o.writing.Store(now.Add(-watchWriteTimeout / 2).UnixNano())
	if o.stuck(now) {
		t.Error("write in progress for half the timeout stuck, want not")
	}
	o.writing.Store(now.Add(-watchWriteTimeout - 1).UnixNano())
	if !o.stuck(now) {
		t.Error("write in progress beyond the timeout not stuck, want stuck")
	}
}
