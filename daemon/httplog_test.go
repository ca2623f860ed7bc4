package main

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestHTTPErrorLog_Write: failed TLS handshakes give one warning per
// interval with their count; other lines are warnings each.
func TestHTTPErrorLog_Write(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	now := time.Unix(1000, 0)
	l := &httpErrorLog{log: zap.New(core), now: func() time.Time { return now }}
	hs := []byte("http: TLS handshake error from 127.0.0.1:5: EOF\n")
	for i := 0; i < 100; i++ {
		l.Write(hs)
	}
	l.Write([]byte("http: Accept error: too many open files\n"))
	now = now.Add(handshakeLogInterval)
	l.Write(hs)
	var got []string
	var counts []int64
	for _, e := range logs.All() {
		got = append(got, e.Message)
		if c, ok := e.ContextMap()["count"]; ok {
			counts = append(counts, c.(int64))
		}
	}
	want := []string{"TLS handshakes failed (details at debug level)", "http: Accept error: too many open files", "TLS handshakes failed (details at debug level)"}
	if len(got) != len(want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %q, want %q", i, got[i], want[i])
		}
	}
	if len(counts) != 2 || counts[0] != 1 || counts[1] != 100 {
		t.Errorf("counts = %v, want [1 100]", counts)
	}
}
