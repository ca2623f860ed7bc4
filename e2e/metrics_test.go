package e2e

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetrics_Requests: after some requests, /metrics over TLS as the
// admin has apiserver_request_total with kube-apiserver's labels and the
// right counts, the duration histogram and the Go and process collectors;
// the store's edgeapi_ figures are there; a user no role binds gets 403 on /metrics, and that refusal is counted
// too.
func TestMetrics_Requests(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t)
	c := tlsClient(t, d)
	admin, alice := bearer(adminToken), bearer(aliceToken)
	createNamespace(t, d.Clientset(), "team")
	if r := authReq(t, c, d, "POST", "/api/v1/namespaces/team/configmaps", admin, []byte(`{"metadata":{"name":"a"}}`)); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	for range 2 {
		if r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps", admin, nil); r.Status != http.StatusOK {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
	}
	if r := authReq(t, c, d, "GET", "/api/v1/namespaces/team/configmaps/missing", admin, nil); r.Status != http.StatusNotFound {
		t.Fatalf("get missing: %d %s", r.Status, r.Body)
	}

	// A watch that runs while /metrics is read is a long-running request.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wreq, err := http.NewRequestWithContext(ctx, "GET", d.URL+"/api/v1/namespaces/team/configmaps?watch=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	wreq.Header = admin.Clone()
	wresp, err := c.Do(wreq)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer wresp.Body.Close()
	if wresp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", wresp.StatusCode)
	}

	r := authReq(t, c, d, "GET", "/metrics", alice, nil)
	wantAuthStatus(t, "alice GET /metrics", r, http.StatusForbidden, "Forbidden", `forbidden: User "alice" cannot get path "/metrics"`)

	r = authReq(t, c, d, "GET", "/metrics", admin, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("admin GET /metrics: %d %s", r.Status, r.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, r.Body)
	}
	total := mfs["apiserver_request_total"]
	if total == nil {
		t.Fatalf("no apiserver_request_total in\n%s", r.Body)
	}
	base := func(verb, resource, scope, code string) map[string]string {
		return map[string]string{"verb": verb, "dry_run": "", "group": "", "version": "v1", "resource": resource,
			"subresource": "", "scope": scope, "component": "apiserver", "code": code}
	}
	for _, tc := range []struct {
		labels map[string]string
		want   float64
	}{
		{base("POST", "configmaps", "resource", "201"), 1},
		{base("LIST", "configmaps", "namespace", "200"), 2},
		{base("GET", "configmaps", "resource", "404"), 1},
		{map[string]string{"verb": "GET", "resource": "", "subresource": "/metrics", "scope": "", "component": "apiserver", "code": "403"}, 1},
	} {
		if got := sumCounter(total, tc.labels); got != tc.want {
			t.Errorf("apiserver_request_total%v: got %v, want %v", tc.labels, got, tc.want)
		}
	}
	longRunning := map[string]string{"verb": "WATCH", "group": "", "version": "v1", "resource": "configmaps",
		"subresource": "", "scope": "namespace", "component": "apiserver"}
	if got := sumGauge(mfs["apiserver_longrunning_requests"], longRunning); got != 1 {
		t.Errorf("apiserver_longrunning_requests%v: got %v, want 1", longRunning, got)
	}
	// The store's figures: the namespace and the ConfigMap were at least
	// two committed writes.
	for _, tc := range []struct {
		name string
		min  float64
	}{
		{"edgeapi_store_batched_writes_total", 2},
		{"edgeapi_store_commit_batches_total", 1},
		{"edgeapi_store_revision", 2},
		{"edgeapi_store_db_size_bytes", 1},
		{"edgeapi_store_changelog_rows", 2},
	} {
		mf := mfs[tc.name]
		if mf == nil || len(mf.GetMetric()) != 1 {
			t.Errorf("%s: got %v, want one series", tc.name, mf)
			continue
		}
		m := mf.GetMetric()[0]
		if got := m.GetCounter().GetValue() + m.GetGauge().GetValue(); got < tc.min {
			t.Errorf("%s: got %v, want at least %v", tc.name, got, tc.min)
		}
	}
	for name, typ := range map[string]dto.MetricType{
		"apiserver_request_duration_seconds":  dto.MetricType_HISTOGRAM,
		"apiserver_current_inflight_requests": dto.MetricType_GAUGE,
		"go_goroutines":                       dto.MetricType_GAUGE,
		"process_resident_memory_bytes":       dto.MetricType_GAUGE,
	} {
		if mf := mfs[name]; mf == nil || mf.GetType() != typ {
			t.Errorf("%s: got %v, want a %v", name, mf, typ)
		}
	}
}

// sumGauge is the sum of mf's gauges that carry every label of want.
func sumGauge(mf *dto.MetricFamily, want map[string]string) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		if hasEveryLabel(m, want) {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// hasEveryLabel reports whether m carries every label of want.
func hasEveryLabel(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// sumCounter is the sum of mf's counters that carry every label of want.
func sumCounter(mf *dto.MetricFamily, want map[string]string) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		if hasEveryLabel(m, want) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
