package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

func TestMetricsKey(t *testing.T) {
	known := func(p string) bool { return p == "/healthz" }
	for _, tc := range []struct {
		method, target, contentType string
		want                        requestKey
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps", "", requestKey{verb: "LIST", version: "v1", resource: "configmaps", scope: "namespace"}},
		{"GET", "/api/v1/namespaces/ns/configmaps/a", "", requestKey{verb: "GET", version: "v1", resource: "configmaps", scope: "resource"}},
		{"GET", "/api/v1/configmaps?watch=true", "", requestKey{verb: "WATCH", version: "v1", resource: "configmaps", scope: "cluster"}},
		{"GET", "/api/v1/configmaps?watch", "", requestKey{verb: "WATCH", version: "v1", resource: "configmaps", scope: "cluster"}},
		{"GET", "/api/v1/configmaps?watch=false", "", requestKey{verb: "LIST", version: "v1", resource: "configmaps", scope: "cluster"}},
		{"GET", "/api/v1/watch/namespaces/ns/pods", "", requestKey{verb: "WATCH", version: "v1", resource: "pods", scope: "namespace"}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments?dryRun=All", "", requestKey{verb: "POST", dryRun: "All", group: "apps", version: "v1", resource: "deployments", scope: "resource"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/status", "", requestKey{verb: "PUT", group: "apps", version: "v1", resource: "deployments", subresource: "status", scope: "resource"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/apply-patch+yaml", requestKey{verb: "APPLY", group: "apps", version: "v1", resource: "deployments", scope: "resource"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/merge-patch+json", requestKey{verb: "PATCH", group: "apps", version: "v1", resource: "deployments", scope: "resource"}},
		{"DELETE", "/api/v1/namespaces/ns/pods", "", requestKey{verb: "DELETECOLLECTION", version: "v1", resource: "pods", scope: "namespace"}},
		{"DELETE", "/api/v1/namespaces/ns", "", requestKey{verb: "DELETE", version: "v1", resource: "namespaces", scope: "resource"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", "", requestKey{verb: "PUT", version: "v1", resource: "namespaces", subresource: "finalize", scope: "resource"}},
		{"GET", "/healthz", "", requestKey{verb: "GET", subresource: "/healthz"}},
		{"GET", "/made-up", "", requestKey{verb: "GET", subresource: "other"}},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		if got := metricsKey(req, known); got != tc.want {
			t.Errorf("%s %s: got %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

// TestMetrics_recordAllocs checks that recording a request whose label set
// has been seen does not allocate.
func TestMetrics_recordAllocs(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/apis/apps/v1/namespaces/ns/deployments?limit=500", nil)
	known := func(string) bool { return false }
	got := testing.AllocsPerRun(1000, func() {
		k := metricsKey(req, known)
		k.code = 200
		m.record(k, time.Millisecond)
	})
	if got != 0 {
		t.Errorf("got %v allocations per recorded request, want 0", got)
	}
}

func BenchmarkMetrics_record(b *testing.B) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/apis/apps/v1/namespaces/ns/deployments?limit=500", nil)
	known := func(string) bool { return false }
	b.ReportAllocs()
	for b.Loop() {
		k := metricsKey(req, known)
		k.code = 200
		m.record(k, time.Millisecond)
	}
}

// TestServer_Metrics serves requests through a server with Metrics and
// checks the exposition of the registry, parsed as Prometheus parses it.
func TestServer_Metrics(t *testing.T) {
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
	do := func(method, path, body string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do("POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}`)
	for range 3 {
		do("GET", "/api/v1/namespaces/ns/configmaps", "")
	}
	do("GET", "/api/v1/namespaces/ns/configmaps/missing", "")

	var buf bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, buf.String())
	}
	total := parsed["apiserver_request_total"]
	if total == nil {
		t.Fatalf("no apiserver_request_total in\n%s", buf.String())
	}
	for _, tc := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"verb": "POST", "dry_run": "", "group": "", "version": "v1", "resource": "namespaces", "subresource": "", "scope": "resource", "component": "apiserver", "code": "201"}, 1},
		{map[string]string{"verb": "LIST", "dry_run": "", "group": "", "version": "v1", "resource": "configmaps", "subresource": "", "scope": "namespace", "component": "apiserver", "code": "200"}, 3},
		{map[string]string{"verb": "GET", "dry_run": "", "group": "", "version": "v1", "resource": "configmaps", "subresource": "", "scope": "resource", "component": "apiserver", "code": "404"}, 1},
	} {
		if got := counterWith(total, tc.labels); got != tc.want {
			t.Errorf("apiserver_request_total%v: got %v, want %v", tc.labels, got, tc.want)
		}
	}
	dur := parsed["apiserver_request_duration_seconds"]
	if dur == nil || dur.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("apiserver_request_duration_seconds: got %v, want a histogram", dur)
	}
	var lists uint64
	for _, mm := range dur.GetMetric() {
		if hasLabels(mm, map[string]string{"verb": "LIST", "resource": "configmaps", "scope": "namespace"}) {
			lists += mm.GetHistogram().GetSampleCount()
			if got, want := len(mm.GetHistogram().GetBucket()), len(requestDurationBuckets)+1; got != want { // and +Inf
				t.Errorf("buckets: got %d, want %d", got, want)
			}
		}
	}
	if lists != 3 {
		t.Errorf("LIST duration samples: got %d, want 3", lists)
	}
	if parsed["apiserver_current_inflight_requests"] == nil {
		t.Errorf("no apiserver_current_inflight_requests in\n%s", buf.String())
	}
}

// hasLabels reports whether m has every label of want with its value.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// counterWith is the sum of mf's counters that have the labels.
func counterWith(mf *dto.MetricFamily, labels map[string]string) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		if hasLabels(m, labels) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// BenchmarkServer_GetMetrics serves one GET of a stored ConfigMap through
// the handler, without and with Metrics, to compare the allocations and
// CPU per request the recording adds.
func BenchmarkServer_GetMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) {
			db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			cfg := Config{Store: db, Registry: registry.Builtin()}
			if on {
				if cfg.Metrics, err = NewMetrics(prometheus.NewRegistry()); err != nil {
					b.Fatal(err)
				}
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close(context.Background()) })
			h := s.Handler()
			create := httptest.NewRequest("POST", "/api/v1/namespaces/default/configmaps", strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`))
			create.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, create)
			if rec.Code != http.StatusCreated {
				b.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/a", nil)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("get: %d", rec.Code)
				}
			}
		})
	}
}
