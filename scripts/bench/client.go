package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults for the HTTP client.
const (
	// DefaultRequestTimeout bounds one non-watch request, response body
	// included.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultIOBufferBytes is the Transport's per-connection read and write
	// buffer size; large enough that a 1 KiB object is one syscall each way.
	DefaultIOBufferBytes = 64 << 10
)

// client talks to one server. It uses Transport.RoundTrip directly (no
// redirects, cookies or per-request copies), shares read-only header maps
// across requests, and lets callers reuse request bodies and response
// buffers, so that the load generator spends as little CPU per request as
// possible on a 2-core machine shared with the daemon.
type client struct {
	base string // "http://127.0.0.1:PORT", no trailing slash
	// tr is the bench's own Transport (newTransport), or another
	// RoundTripper such as client-go's (see tls.go).
	tr http.RoundTripper
}

// newTransport returns a keep-alive Transport able to hold conns idle
// connections to the server. Compression is off so LIST sizes and timings
// are those of the raw JSON.
func newTransport(conns int) *http.Transport {
	if conns < 16 {
		conns = 16
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               nil, // loopback only; never a proxy
		DialContext:         d.DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		WriteBufferSize:     DefaultIOBufferBytes,
		ReadBufferSize:      DefaultIOBufferBytes,
	}
}

func newClient(base string, conns int) *client {
	return &client{base: base, tr: newTransport(conns)}
}

// close closes the transport's idle connections.
func (c *client) close() { closeIdle(c.tr) }

// closeIdle closes rt's idle connections, if it keeps any.
func closeIdle(rt http.RoundTripper) {
	if ci, ok := rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// Shared, read-only header maps. The Transport never writes to
// Request.Header, so one map can serve every request.
var (
	hdrJSON = http.Header{
		"Accept":     {"application/json"},
		"User-Agent": {"edgeapi-bench"},
	}
	// hdrProtobuf asks for Protobuf, as client-go's typed clients do.
	hdrProtobuf = http.Header{
		"Accept":     {"application/vnd.kubernetes.protobuf, application/json"},
		"User-Agent": {"edgeapi-bench"},
	}
	hdrJSONBody = http.Header{
		"Accept":       {"application/json"},
		"Content-Type": {"application/json"},
		"User-Agent":   {"edgeapi-bench"},
	}
	// hdrMergePatch and hdrApplyPatch are the PATCH bodies of the patch
	// and apply workloads: JSON merge patch and server-side apply (YAML,
	// of which JSON is a subset).
	hdrMergePatch = http.Header{
		"Accept":       {"application/json"},
		"Content-Type": {"application/merge-patch+json"},
		"User-Agent":   {"edgeapi-bench"},
	}
	hdrApplyPatch = http.Header{
		"Accept":       {"application/json"},
		"Content-Type": {"application/apply-patch+yaml"},
		"User-Agent":   {"edgeapi-bench"},
	}
)

// reqBody is a request body whose bytes belong to a worker and are reused
// for its next request. RoundTrip may close a body after it has returned
// (net/http documents this), so the worker waits for Close before it
// overwrites the bytes: see acquire.
type reqBody struct {
	r      bytes.Reader
	closed atomic.Bool
	done   chan struct{} // receives one value per Close; capacity 1
	busy   bool          // handed to a request whose Close has not been seen
}

func newReqBody() *reqBody { return &reqBody{done: make(chan struct{}, 1)} }

func (b *reqBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *reqBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.done <- struct{}{}
	}
	return nil
}

// acquire waits until the previous request has closed the body. It reports
// false if that did not happen within a second; the caller must then use a
// fresh body and buffer.
func (b *reqBody) acquire() bool {
	if !b.busy {
		return true
	}
	select {
	case <-b.done:
		b.busy = false
		return true
	case <-time.After(time.Second):
		return false
	}
}

func (b *reqBody) set(p []byte) {
	b.r.Reset(p)
	b.closed.Store(false)
	b.busy = true
}

// httpError is a response with an unexpected status code.
type httpError struct {
	code int
	body string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.code, e.body)
}

func statusOf(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	return 0
}

// do sends one request and reads the whole response. When sink is non-nil
// the body is read into it (reset first), otherwise it is discarded. body,
// when non-nil, must have been set; its length is the Content-Length. It
// returns the status code and the number of body bytes read. A status not
// in 2xx is returned as *httpError with the start of the body.
func (c *client) do(ctx context.Context, method, url string, body *reqBody, sink *bytes.Buffer) (int, int64, error) {
	hdr := hdrJSON
	if body != nil {
		hdr = hdrJSONBody
	}
	return c.doHeader(ctx, method, url, hdr, body, sink)
}

// doHeader is do with the request headers given: one of the shared,
// read-only maps above.
func (c *client) doHeader(ctx context.Context, method, url string, hdr http.Header, body *reqBody, sink *bytes.Buffer) (int, int64, error) {
	var rc io.ReadCloser
	var n int64
	if body != nil {
		rc = body
		n = int64(body.r.Len())
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header = hdr
	if rc != nil {
		req.Body = rc
		req.ContentLength = n
	}
	resp, err := c.tr.RoundTrip(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var read int64
	if sink != nil {
		sink.Reset()
		read, err = sink.ReadFrom(resp.Body)
	} else {
		read, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return resp.StatusCode, read, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := ""
		if sink != nil {
			msg = sink.String()
			if len(msg) > 300 {
				msg = msg[:300]
			}
		}
		return resp.StatusCode, read, &httpError{code: resp.StatusCode, body: msg}
	}
	return resp.StatusCode, read, nil
}

// doSimple sends a small request built from a string body and returns the
// response body. For setup and probes, not for timed loops.
func (c *client) doSimple(ctx context.Context, method, path, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header = hdrJSONBody
	} else {
		req.Header = hdrJSON
	}
	return c.roundTripSimple(req)
}

// doPatch sends a PATCH of the given content type, as doSimple.
func (c *client) doPatch(ctx context.Context, path, contentType, body string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = http.Header{"Content-Type": {contentType}, "Accept": {"application/json"}}
	return c.roundTripSimple(req)
}

func (c *client) roundTripSimple(req *http.Request) (int, []byte, error) {
	resp, err := c.tr.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, err
}

// ensureNamespace creates namespace ns; an existing one is fine.
func (c *client) ensureNamespace(ctx context.Context, ns string) error {
	body := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`
	code, b, err := c.doSimple(ctx, http.MethodPost, "/api/v1/namespaces", body)
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	switch code {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusConflict:
		return nil
	}
	return fmt.Errorf("create namespace %s: HTTP %d: %.300s", ns, code, b)
}

// configMapBody builds ConfigMap JSON bodies into a caller-owned buffer from
// pre-encoded pieces, so a timed loop only appends a name, an optional
// resourceVersion and a couple of numbers to bytes built once.
type configMapBody struct {
	head    []byte // `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`
	payload []byte // `"},"data":{"payload":"xxxx…"` with the rest appended after
}

func newConfigMapBody(namespace string, payloadBytes int) *configMapBody {
	pad := make([]byte, payloadBytes)
	for i := range pad {
		pad[i] = 'a' + byte(i%26)
	}
	return &configMapBody{
		head:    []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"` + namespace + `","name":"`),
		payload: []byte(`,"data":{"payload":"` + string(pad) + `"`),
	}
}

// sentAnnotation carries the writer's send time (UnixNano) for the watch
// workload's delivery latency.
const sentAnnotation = "bench.edgeapi.io/sent"

// appendCreate appends a ConfigMap named prefix+seq. When sent is non-zero
// it is stored in the sentAnnotation.
func (t *configMapBody) appendCreate(dst []byte, prefix string, seq int64, sent int64) []byte {
	dst = append(dst, t.head...)
	dst = append(dst, prefix...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, '"')
	if sent != 0 {
		dst = append(dst, `,"annotations":{"`+sentAnnotation+`":"`...)
		dst = strconv.AppendInt(dst, sent, 10)
		dst = append(dst, `"}`...)
	}
	dst = append(dst, '}')
	dst = append(dst, t.payload...)
	return append(dst, "}}"...)
}

// appendUpdate appends a ConfigMap named name carrying resourceVersion rv and
// a counter in its data, for read-modify-write.
func (t *configMapBody) appendUpdate(dst []byte, name string, rv []byte, counter int64) []byte {
	dst = append(dst, t.head...)
	dst = append(dst, name...)
	dst = append(dst, `","resourceVersion":"`...)
	dst = append(dst, rv...)
	dst = append(dst, `"}`...)
	dst = append(dst, t.payload...)
	dst = append(dst, `,"counter":"`...)
	dst = strconv.AppendInt(dst, counter, 10)
	return append(dst, `"}}`...)
}

// appendApply appends the whole ConfigMap named name as its manager
// applies it, with a counter in its data that changes on every apply.
func (t *configMapBody) appendApply(dst []byte, name string, counter int64) []byte {
	dst = append(dst, t.head...)
	dst = append(dst, name...)
	dst = append(dst, `"}`...)
	dst = append(dst, t.payload...)
	dst = append(dst, `,"counter":"`...)
	dst = strconv.AppendInt(dst, counter, 10)
	return append(dst, `"}}`...)
}

// appendMergePatch appends a JSON merge patch that sets the counter in a
// ConfigMap's data.
func appendMergePatch(dst []byte, counter int64) []byte {
	dst = append(dst, `{"data":{"counter":"`...)
	dst = strconv.AppendInt(dst, counter, 10)
	return append(dst, `"}}`...)
}

var rvKey = []byte(`"resourceVersion":"`)

// findResourceVersion returns the first metadata.resourceVersion in a JSON
// object: the object's own (metadata precedes data in every encoder we
// know), or a list's. It returns nil when there is none.
func findResourceVersion(b []byte) []byte {
	i := bytes.Index(b, rvKey)
	if i < 0 {
		return nil
	}
	b = b[i+len(rvKey):]
	j := bytes.IndexByte(b, '"')
	if j < 0 {
		return nil
	}
	return b[:j]
}
