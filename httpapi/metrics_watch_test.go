package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgeapi/edgeapi/registry"
)

// gather returns reg's families by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestServer_WatchEventMetrics: apiserver_watch_events_total counts every
// event a watch wrote (the initial ADDED ones and later ones) under the
// kind's group, version and resource, and apiserver_watch_events_sizes
// has their sizes in kube-apiserver's buckets.
func TestServer_WatchEventMetrics(t *testing.T) {
	db := openTestStore(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: db, Registry: registry.Builtin(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
	})
	post := func(name string) {
		t.Helper()
		resp, err := http.Post(ts.URL+"/api/v1/namespaces/default/configmaps", "application/json",
			strings.NewReader(`{"metadata":{"name":"`+name+`"},"data":{"k":"`+strings.Repeat("v", 1500)+`"}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %d", name, resp.StatusCode)
		}
	}
	post("a")
	post("b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/v1/namespaces/default/configmaps?watch=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<20)
	var sizes []int
	read := func() {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("watch ended: %v", lines.Err())
		}
		sizes = append(sizes, len(lines.Bytes())+1) // and its newline
	}
	read()
	read()
	post("c")
	read()

	mfs := gather(t, reg)
	labels := map[string]string{"group": "", "version": "v1", "resource": "configmaps"}
	if got := counterWith(mfs["apiserver_watch_events_total"], labels); got != 3 {
		t.Errorf("apiserver_watch_events_total%v: got %v, want 3", labels, got)
	}
	sz := mfs["apiserver_watch_events_sizes"]
	if sz == nil || sz.GetType() != dto.MetricType_HISTOGRAM || len(sz.GetMetric()) != 1 {
		t.Fatalf("apiserver_watch_events_sizes: got %v, want one histogram", sz)
	}
	h := sz.GetMetric()[0].GetHistogram()
	want := 0
	for _, n := range sizes {
		want += n
	}
	if h.GetSampleCount() != 3 || h.GetSampleSum() != float64(want) {
		t.Errorf("apiserver_watch_events_sizes: got %d events of %v bytes, want 3 of %d", h.GetSampleCount(), h.GetSampleSum(), want)
	}
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	wantBounds := []float64{1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072}
	if len(bounds) != len(wantBounds) {
		t.Fatalf("buckets: got %v, want %v", bounds, wantBounds)
	}
	for i := range bounds {
		if bounds[i] != wantBounds[i] {
			t.Fatalf("buckets: got %v, want %v", bounds, wantBounds)
		}
	}
}

// TestMetrics_terminate: a request dropped before the API server is
// counted in apiserver_request_total and
// apiserver_request_terminations_total with code 429; one the API
// terminated itself (counted already) only in the latter.
func TestMetrics_terminate(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: Config{Metrics: m}}
	s.RecordDroppedRequest(httptest.NewRequest("GET", "/api/v1/namespaces/ns/configmaps", nil))
	s.recordTermination(httptest.NewRequest("GET", "/api/v1/configmaps?watch=1", nil), http.StatusTooManyRequests)

	mfs := gather(t, reg)
	list := map[string]string{"verb": "LIST", "group": "", "version": "v1", "resource": "configmaps", "subresource": "",
		"scope": "namespace", "component": "apiserver", "code": "429"}
	watch := map[string]string{"verb": "WATCH", "group": "", "version": "v1", "resource": "configmaps", "subresource": "",
		"scope": "cluster", "component": "apiserver", "code": "429"}
	for _, tc := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"apiserver_request_terminations_total", list, 1},
		{"apiserver_request_terminations_total", watch, 1},
		{"apiserver_request_total", list, 1},
		{"apiserver_request_total", watch, 0},
	} {
		if got := counterWith(mfs[tc.family], tc.labels); got != tc.want {
			t.Errorf("%s%v: got %v, want %v", tc.family, tc.labels, got, tc.want)
		}
	}
	if mfs["apiserver_request_terminations_total"].GetType() != dto.MetricType_COUNTER {
		t.Errorf("apiserver_request_terminations_total is a %v, want a counter", mfs["apiserver_request_terminations_total"].GetType())
	}
}

// TestMetrics_watchAndTerminateAllocs: counting a watch event, and a
// termination whose label set was seen, does not allocate.
func TestMetrics_watchAndTerminateAllocs(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ws := m.watch("", "v1", "configmaps")
	if got := testing.AllocsPerRun(1000, func() { ws.sent(1500) }); got != 0 {
		t.Errorf("watch event: got %v allocations, want 0", got)
	}
	req := httptest.NewRequest("GET", "/api/v1/namespaces/ns/configmaps", nil)
	known := func(string) bool { return false }
	if got := testing.AllocsPerRun(1000, func() {
		k := metricsKey(req, known)
		k.code = http.StatusTooManyRequests
		m.terminate(k, false)
	}); got != 0 {
		t.Errorf("termination: got %v allocations, want 0", got)
	}
}

// TestServer_BodyTimeoutTermination: a request whose body does not
// arrive within RequestTimeout gets a 504, counted in
// apiserver_request_terminations_total.
func TestServer_BodyTimeoutTermination(t *testing.T) {
	db := openTestStore(t)
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: db, Registry: registry.Builtin(), Metrics: m, RequestTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
	})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ten bytes of a hundred, and no more.
	fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"metadata")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("got %d, want 504", resp.StatusCode)
	}
	labels := map[string]string{"verb": "POST", "version": "v1", "resource": "configmaps", "scope": "resource", "code": "504"}
	mfs := gather(t, reg)
	if got := counterWith(mfs["apiserver_request_terminations_total"], labels); got != 1 {
		t.Errorf("apiserver_request_terminations_total%v: got %v, want 1", labels, got)
	}
	if got := counterWith(mfs["apiserver_request_total"], labels); got != 1 {
		t.Errorf("apiserver_request_total%v: got %v, want 1", labels, got)
	}
}
