package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

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
	// two committed writes. On etcd only the revision is edgeapi's to
	// report; the SQLite file's figures are absent.
	storeFigures := []struct {
		name string
		min  float64
	}{
		{"edgeapi_store_batched_writes_total", 2},
		{"edgeapi_store_commit_batches_total", 1},
		{"edgeapi_store_revision", 2},
		{"edgeapi_store_db_size_bytes", 1},
		{"edgeapi_store_changelog_rows", 2},
	}
	if onEtcd() {
		storeFigures = storeFigures[2:3]
		for _, name := range []string{"edgeapi_store_db_size_bytes", "edgeapi_store_batched_writes_total"} {
			if mfs[name] != nil {
				t.Errorf("%s served on etcd, which has no SQLite file", name)
			}
		}
	}
	for _, tc := range storeFigures {
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

// scrape reads /metrics from d over its plain HTTP listener and parses it.
func scrape(t *testing.T, d *Daemon) map[string]*dto.MetricFamily {
	t.Helper()
	r := rawGet(t, d, "/metrics")
	if r.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", r.Status, r.Body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, r.Body)
	}
	return mfs
}

// value is the sum of mf's counters, gauges and histogram sample counts
// over the series that carry every label of want.
func value(mf *dto.MetricFamily, want map[string]string) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		if hasEveryLabel(m, want) {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// scrapeUntil scrapes d until ok accepts the families or eventually
// passes (the object count runs in the background after start, and the
// compactor after the commit that woke it), and returns the last scrape.
func scrapeUntil(t *testing.T, d *Daemon, ok func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		mfs := scrape(t, d)
		if ok(mfs) || time.Now().After(deadline) {
			return mfs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetrics_Store: after real requests, /metrics has the storage
// families with plausible values: apiserver_storage_objects and
// apiserver_resource_objects equal the ConfigMaps stored,
// apiserver_watch_events_total grew by the events a watch received,
// etcd_request_duration_seconds counted the creates, the commit
// histograms saw the commits, a compaction the small
// --compaction-max-rows triggered is counted by trigger, the watch cache
// has watchers, and a watch past --max-watches-per-user is counted as a
// termination.
func TestMetrics_Store(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{Args: []string{"--compaction-max-rows", "40", "--max-watches-per-user", "2"}})
	createNamespace(t, d.Clientset(), "m")
	const n = 30
	create := func(name string) {
		t.Helper()
		r := doRaw(t, d, "POST", "/api/v1/namespaces/m/configmaps", "application/json", "", []byte(`{"metadata":{"name":"`+name+`"}}`))
		if r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
	}
	for i := range n {
		create(fmt.Sprintf("c%d", i))
	}
	configMaps := map[string]string{"resource": "configmaps"}
	mfs := scrapeUntil(t, d, func(mfs map[string]*dto.MetricFamily) bool {
		return value(mfs["apiserver_storage_objects"], configMaps) == n
	})
	if got := value(mfs["apiserver_storage_objects"], configMaps); got != n {
		t.Errorf("apiserver_storage_objects{resource=\"configmaps\"}: got %v, want %d", got, n)
	}
	if got := value(mfs["apiserver_resource_objects"], map[string]string{"group": "", "resource": "configmaps"}); got != n {
		t.Errorf("apiserver_resource_objects{group=\"\",resource=\"configmaps\"}: got %v, want %d", got, n)
	}
	if got := value(mfs["apiserver_resource_objects"], map[string]string{"group": "rbac.authorization.k8s.io", "resource": "clusterroles"}); got < 1 {
		t.Errorf("apiserver_resource_objects{group=\"rbac.authorization.k8s.io\",resource=\"clusterroles\"}: got %v, want the bootstrap roles", got)
	}
	if got := value(mfs["etcd_request_duration_seconds"], map[string]string{"operation": "create", "group": "", "resource": "configmaps"}); got != n {
		t.Errorf("etcd_request_duration_seconds{operation=\"create\",resource=\"configmaps\"} count: got %v, want %d", got, n)
	}
	if got := value(mfs["etcd_requests_total"], map[string]string{"operation": "create", "group": "", "resource": "configmaps"}); got != n {
		t.Errorf("etcd_requests_total{operation=\"create\",resource=\"configmaps\"}: got %v, want %d", got, n)
	}
	if got := value(mfs["etcd_request_errors_total"], map[string]string{"operation": "create", "resource": "configmaps"}); got != 0 {
		t.Errorf("etcd_request_errors_total{operation=\"create\",resource=\"configmaps\"}: got %v, want 0", got)
	}
	if got := value(mfs["apiserver_storage_size_bytes"], map[string]string{"storage_cluster_id": "sqlite-0"}); got < 4096 {
		t.Errorf("apiserver_storage_size_bytes: got %v, want at least a page", got)
	}
	commits := value(mfs["edgeapi_store_commit_batches_total"], nil)
	for _, name := range []string{"edgeapi_store_commit_batch_size", "edgeapi_store_commit_duration_seconds", "edgeapi_store_commit_fsync_duration_seconds"} {
		if got := value(mfs[name], nil); got != commits || got < n {
			t.Errorf("%s count: got %v, want edgeapi_store_commit_batches_total (%v), at least %d", name, got, commits, n)
		}
	}
	if got := value(mfs["edgeapi_store_commit_batch_size"], nil); got == 0 {
		t.Error("no edgeapi_store_commit_batch_size samples")
	}

	// A watch that receives the initial events and two more; a third
	// watch of the same user is refused.
	before := value(mfs["apiserver_watch_events_total"], map[string]string{"group": "", "version": "v1", "resource": "configmaps"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := func() *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", d.URL+"/api/v1/namespaces/m/configmaps?watch=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := d.HTTPClient().Do(req)
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		return resp
	}
	w1 := watch()
	defer w1.Body.Close()
	w2 := watch() // a second one, idle: it receives the same events
	defer w2.Body.Close()
	if w1.StatusCode != http.StatusOK || w2.StatusCode != http.StatusOK {
		t.Fatalf("watches: %d, %d", w1.StatusCode, w2.StatusCode)
	}
	refused := watch()
	refused.Body.Close()
	if refused.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third watch: got %d, want 429", refused.StatusCode)
	}
	create("late1")
	create("late2")
	received := 0
	for _, w := range []*http.Response{w1, w2} {
		lines := bufio.NewScanner(w.Body)
		for range n + 2 {
			if !lines.Scan() {
				t.Fatalf("watch ended after %d events: %v", received, lines.Err())
			}
			received++
		}
	}
	mfs = scrapeUntil(t, d, func(mfs map[string]*dto.MetricFamily) bool {
		return value(mfs["edgeapi_store_compactions_total"], map[string]string{"trigger": "size"}) > 0
	})
	after := value(mfs["apiserver_watch_events_total"], map[string]string{"group": "", "version": "v1", "resource": "configmaps"})
	if got := after - before; got != float64(received) {
		t.Errorf("apiserver_watch_events_total grew by %v, want the %d events the watches received", got, received)
	}
	if got := value(mfs["apiserver_watch_events_sizes"], map[string]string{"resource": "configmaps"}); got != after {
		t.Errorf("apiserver_watch_events_sizes count: got %v, want apiserver_watch_events_total (%v)", got, after)
	}
	termination := map[string]string{"verb": "WATCH", "group": "", "version": "v1", "resource": "configmaps", "scope": "namespace", "code": "429"}
	if got := sumCounter(mfs["apiserver_request_terminations_total"], termination); got != 1 {
		t.Errorf("apiserver_request_terminations_total%v: got %v, want 1", termination, got)
	}
	if got := sumCounter(mfs["apiserver_request_total"], termination); got != 1 {
		t.Errorf("apiserver_request_total%v: got %v, want 1", termination, got)
	}
	// Past 40 change-log rows the compactor ran for size.
	if got := value(mfs["edgeapi_store_compactions_total"], map[string]string{"trigger": "size"}); got < 1 {
		t.Errorf("edgeapi_store_compactions_total{trigger=\"size\"}: got %v, want at least 1", got)
	}
	if got, runs := value(mfs["edgeapi_store_compaction_duration_seconds"], map[string]string{"trigger": "size"}),
		value(mfs["edgeapi_store_compactions_total"], map[string]string{"trigger": "size"}); got != runs {
		t.Errorf("edgeapi_store_compaction_duration_seconds{trigger=\"size\"} count: got %v, want the runs (%v)", got, runs)
	}
	if got := value(mfs["edgeapi_watch_cache_watchers"], nil); got < 2 {
		t.Errorf("edgeapi_watch_cache_watchers: got %v, want at least the 2 watches", got)
	}
	if got := value(mfs["edgeapi_watch_cache_events"], nil); got < n {
		t.Errorf("edgeapi_watch_cache_events: got %v, want at least %d", got, n)
	}
	for name, typ := range map[string]dto.MetricType{
		"edgeapi_garbage_collector_queue_depth":       dto.MetricType_GAUGE,
		"edgeapi_watch_cache_watchers_too_slow_total": dto.MetricType_COUNTER,
		"etcd_server_quota_backend_bytes":             dto.MetricType_GAUGE,
		"etcd_mvcc_db_total_size_in_use_in_bytes":     dto.MetricType_GAUGE,
		"edgeapi_store_over_quota":                    dto.MetricType_GAUGE,
	} {
		if mf := mfs[name]; mf == nil || mf.GetType() != typ {
			t.Errorf("%s: got %v, want a %v", name, mf, typ)
		}
	}
}

// TestMetrics_Monitoring: a member of the group system:monitoring reads
// /metrics and the health paths through the bootstrap ClusterRole and
// ClusterRoleBinding system:monitoring, as in kube-apiserver; a user
// bound to that role reads /metrics too; an unbound user gets 403.
func TestMetrics_Monitoring(t *testing.T) {
	t.Parallel()
	d := startAuthDaemon(t)
	c := tlsClient(t, d)
	admin := bearer(adminToken)
	monitor := admin.Clone()
	monitor.Set("Impersonate-User", "prometheus")
	monitor.Set("Impersonate-Group", "system:monitoring")
	for _, path := range []string{"/metrics", "/livez", "/readyz", "/healthz", "/readyz/ping"} {
		if r := authReq(t, c, d, "GET", path, monitor, nil); r.Status != http.StatusOK {
			t.Errorf("system:monitoring member GET %s: %d %s", path, r.Status, r.Body)
		}
	}
	if r := authReq(t, c, d, "GET", "/api/v1/namespaces", monitor, nil); r.Status != http.StatusForbidden {
		t.Errorf("system:monitoring member GET /api/v1/namespaces: got %d, want 403", r.Status)
	}

	r := authReq(t, c, d, "GET", "/metrics", bearer(bobToken), nil)
	wantAuthStatus(t, "bob GET /metrics", r, http.StatusForbidden, "Forbidden", `forbidden: User "bob" cannot get path "/metrics"`)
	binding := []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"bob-monitoring"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:monitoring"},
"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"bob"}]}`)
	if r := authReq(t, c, d, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", admin, binding); r.Status != http.StatusCreated {
		t.Fatalf("bind bob to system:monitoring: %d %s", r.Status, r.Body)
	}
	// The RBAC index follows the stored bindings through a watch.
	deadline := time.Now().Add(eventually)
	for {
		r := authReq(t, c, d, "GET", "/metrics", bearer(bobToken), nil)
		if r.Status == http.StatusOK {
			if !bytes.Contains(r.Body, []byte("apiserver_request_total")) {
				t.Errorf("bob GET /metrics: no apiserver_request_total in\n%s", r.Body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob bound to system:monitoring GET /metrics: %d %s", r.Status, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := authReq(t, c, d, "GET", "/metrics", bearer(aliceToken), nil); r.Status != http.StatusForbidden {
		t.Errorf("alice (unbound) GET /metrics: got %d, want 403", r.Status)
	}
}
