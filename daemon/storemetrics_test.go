package main

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/edgeapi/edgeapi/store"
)

// exposition gathers reg, writes it in the text format and parses it
// back as Prometheus does.
func exposition(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
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
	return parsed
}

// labelsOf renders m's labels as name=value pairs in order.
func labelsOf(m *dto.Metric) string {
	s := ""
	for _, lp := range m.GetLabel() {
		s += fmt.Sprintf("%s=%q,", lp.GetName(), lp.GetValue())
	}
	return s
}

// find returns the series of mf with exactly the labels (as labelsOf
// renders them), or nil.
func find(mf *dto.MetricFamily, labels string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		if labelsOf(m) == labels {
			return m
		}
	}
	return nil
}

// bounds are h's bucket bounds but +Inf, which the text format adds.
func bounds(h *dto.Histogram) []float64 {
	var b []float64
	for _, bk := range h.GetBucket() {
		if !math.IsInf(bk.GetUpperBound(), 1) {
			b = append(b, bk.GetUpperBound())
		}
	}
	return b
}

// TestStoreObserver_exposition: etcd_request_duration_seconds has
// kube-apiserver's labels and buckets, with the group split from the
// store resource, and the commit and compaction families have their
// types, labels and buckets.
func TestStoreObserver_exposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := newStoreObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	o.ObserveRequest(store.OpGet, "configmaps", 3*time.Millisecond, false)
	o.ObserveRequest(store.OpGet, "configmaps", 30*time.Millisecond, true)
	o.ObserveRequest(store.OpList, "leases.coordination.k8s.io", time.Millisecond, false)
	o.ObserveRequest(store.OpChanges, "", time.Millisecond, false)
	o.ObserveCommit(3, 4*time.Millisecond, 3*time.Millisecond)
	o.ObserveCommit(1, time.Millisecond, time.Millisecond)
	o.ObserveCompaction(store.CompactSize, 2*time.Second)
	mfs := exposition(t, reg)

	req := mfs["etcd_request_duration_seconds"]
	if req.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("etcd_request_duration_seconds: got %v, want a histogram", req)
	}
	for _, tc := range []struct {
		labels string
		count  uint64
	}{
		{`group="",operation="get",resource="configmaps",`, 2},
		{`group="coordination.k8s.io",operation="list",resource="leases",`, 1},
		{`group="",operation="changes",resource="",`, 1},
	} {
		m := find(req, tc.labels)
		if m == nil {
			t.Errorf("no etcd_request_duration_seconds{%s}", tc.labels)
			continue
		}
		if got := m.GetHistogram().GetSampleCount(); got != tc.count {
			t.Errorf("etcd_request_duration_seconds{%s} count: got %d, want %d", tc.labels, got, tc.count)
		}
		if got, want := fmt.Sprint(bounds(m.GetHistogram())), fmt.Sprint(etcdRequestBuckets); got != want {
			t.Errorf("etcd_request_duration_seconds buckets: got %s, want %s", got, want)
		}
	}
	if n := len(req.GetMetric()); n != 3 {
		t.Errorf("etcd_request_duration_seconds: got %d series, want only the 3 used", n)
	}
	for _, tc := range []struct {
		name, labels string
		want         float64
	}{
		{"etcd_requests_total", `group="",operation="get",resource="configmaps",`, 2},
		{"etcd_requests_total", `group="coordination.k8s.io",operation="list",resource="leases",`, 1},
		{"etcd_request_errors_total", `group="",operation="get",resource="configmaps",`, 1},
		{"etcd_request_errors_total", `group="coordination.k8s.io",operation="list",resource="leases",`, 0},
	} {
		mf := mfs[tc.name]
		if mf.GetType() != dto.MetricType_COUNTER {
			t.Errorf("%s: got %v, want a counter", tc.name, mf.GetType())
		}
		if m := find(mf, tc.labels); m == nil || m.GetCounter().GetValue() != tc.want {
			t.Errorf("%s{%s}: got %v, want %v", tc.name, tc.labels, m, tc.want)
		}
	}

	for _, tc := range []struct {
		name   string
		count  uint64
		sum    float64
		bounds []float64
	}{
		{"edgeapi_store_commit_batch_size", 2, 4, []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}},
		{"edgeapi_store_commit_duration_seconds", 2, 0.005, diskBuckets},
		{"edgeapi_store_commit_fsync_duration_seconds", 2, 0.004, diskBuckets},
	} {
		mf := mfs[tc.name]
		if mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.GetMetric()) != 1 {
			t.Errorf("%s: got %v, want one histogram", tc.name, mf)
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != tc.count || fmt.Sprintf("%.6f", h.GetSampleSum()) != fmt.Sprintf("%.6f", tc.sum) {
			t.Errorf("%s: got %d samples summing to %v, want %d summing to %v", tc.name, h.GetSampleCount(), h.GetSampleSum(), tc.count, tc.sum)
		}
		if got, want := fmt.Sprint(bounds(h)), fmt.Sprint(tc.bounds); got != want {
			t.Errorf("%s buckets: got %s, want %s", tc.name, got, want)
		}
	}
	if got, want := fmt.Sprint(diskBuckets[0], " ", diskBuckets[len(diskBuckets)-1]), "0.001 8.192"; got != want {
		t.Errorf("disk buckets from %s, want etcd's %s", got, want)
	}

	runs := mfs["edgeapi_store_compactions_total"]
	if runs.GetType() != dto.MetricType_COUNTER || len(runs.GetMetric()) != 3 {
		t.Fatalf("edgeapi_store_compactions_total: got %v, want a counter per trigger", runs)
	}
	for trigger, want := range map[string]float64{"interval": 0, "size": 1, "quota": 0} {
		if m := find(runs, fmt.Sprintf("trigger=%q,", trigger)); m == nil || m.GetCounter().GetValue() != want {
			t.Errorf("edgeapi_store_compactions_total{trigger=%q}: got %v, want %v", trigger, m, want)
		}
	}
	dur := find(mfs["edgeapi_store_compaction_duration_seconds"], `trigger="size",`)
	if dur == nil || dur.GetHistogram().GetSampleCount() != 1 || dur.GetHistogram().GetSampleSum() != 2 {
		t.Errorf("edgeapi_store_compaction_duration_seconds{trigger=\"size\"}: got %v, want one sample of 2s", dur)
	}
}

// TestStoreObserver_allocs: recording a store request whose series
// exists, a commit and a compaction does not allocate.
func TestStoreObserver_allocs(t *testing.T) {
	o, err := newStoreObserver(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	o.ObserveRequest(store.OpGet, "leases.coordination.k8s.io", time.Millisecond, false)
	for name, fn := range map[string]func(){
		"request":    func() { o.ObserveRequest(store.OpGet, "leases.coordination.k8s.io", time.Millisecond, true) },
		"commit":     func() { o.ObserveCommit(7, 2*time.Millisecond, time.Millisecond) },
		"compaction": func() { o.ObserveCompaction(store.CompactInterval, time.Second) },
	} {
		if got := testing.AllocsPerRun(1000, fn); got != 0 {
			t.Errorf("%s: got %v allocations, want 0", name, got)
		}
	}
}

// TestStoreObserver_boundedResources: past maxObservedResources, new
// resources are recorded under resource "other".
func TestStoreObserver_boundedResources(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := newStoreObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxObservedResources + 5 {
		o.ObserveRequest(store.OpGet, fmt.Sprintf("r%d.example.com", i), time.Millisecond, false)
	}
	mf := exposition(t, reg)["etcd_request_duration_seconds"]
	if got, want := len(mf.GetMetric()), maxObservedResources+1; got != want {
		t.Errorf("series: got %d, want %d", got, want)
	}
	if m := find(mf, `group="",operation="get",resource="other",`); m == nil || m.GetHistogram().GetSampleCount() != 5 {
		t.Errorf(`etcd_request_duration_seconds{resource="other"}: got %v, want 5 samples`, m)
	}
}

// TestStoreCollector_Collect: the scrape-time figures have kube-apiserver's
// and etcd's names and labels where they are the same thing, and come
// from the sources given.
func TestStoreCollector_Collect(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := &storeCollector{
		stats: func() store.Stats {
			return store.Stats{DBBytes: 4096, WALBytes: 1000, QuotaBytes: 1 << 20, UsedBytes: 8192, OverQuota: true, QuotaExceeded: 2, WALResets: 5, WALResetsDeferred: 4, WALResetsForced: 3}
		},
		objectCounts: func(fn func(string, int64)) bool {
			fn("configmaps", 3)
			fn("leases.coordination.k8s.io", 1)
			return true
		},
		watchCache: func() store.WatchCacheMetrics {
			return store.WatchCacheMetrics{Events: 10, Bytes: 2000, Watchers: 4, TooSlow: 2}
		},
		gcDepth: func() int64 { return 7 },
	}
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs := exposition(t, reg)
	for _, tc := range []struct {
		name, labels string
		typ          dto.MetricType
		want         float64
	}{
		{"apiserver_storage_objects", `resource="configmaps",`, dto.MetricType_GAUGE, 3},
		{"apiserver_storage_objects", `resource="leases.coordination.k8s.io",`, dto.MetricType_GAUGE, 1},
		{"apiserver_resource_objects", `group="",resource="configmaps",`, dto.MetricType_GAUGE, 3},
		{"apiserver_resource_objects", `group="coordination.k8s.io",resource="leases",`, dto.MetricType_GAUGE, 1},
		{"apiserver_storage_size_bytes", `storage_cluster_id="sqlite-0",`, dto.MetricType_GAUGE, 5096},
		{"etcd_server_quota_backend_bytes", "", dto.MetricType_GAUGE, 1 << 20},
		{"etcd_mvcc_db_total_size_in_use_in_bytes", "", dto.MetricType_GAUGE, 8192},
		{"edgeapi_store_over_quota", "", dto.MetricType_GAUGE, 1},
		{"edgeapi_store_quota_exceeded_total", "", dto.MetricType_COUNTER, 2},
		{"edgeapi_store_wal_resets_total", "", dto.MetricType_COUNTER, 5},
		{"edgeapi_store_wal_resets_deferred_total", "", dto.MetricType_COUNTER, 4},
		{"edgeapi_store_wal_resets_forced_total", "", dto.MetricType_COUNTER, 3},
		{"edgeapi_watch_cache_events", "", dto.MetricType_GAUGE, 10},
		{"edgeapi_watch_cache_bytes", "", dto.MetricType_GAUGE, 2000},
		{"edgeapi_watch_cache_watchers", "", dto.MetricType_GAUGE, 4},
		{"edgeapi_watch_cache_watchers_too_slow_total", "", dto.MetricType_COUNTER, 2},
		{"edgeapi_garbage_collector_queue_depth", "", dto.MetricType_GAUGE, 7},
	} {
		mf := mfs[tc.name]
		if mf.GetType() != tc.typ {
			t.Errorf("%s: got type %v, want %v", tc.name, mf.GetType(), tc.typ)
		}
		m := find(mf, tc.labels)
		if m == nil {
			t.Errorf("no %s{%s}", tc.name, tc.labels)
			continue
		}
		if got := m.GetGauge().GetValue() + m.GetCounter().GetValue(); got != tc.want {
			t.Errorf("%s{%s}: got %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}

	// Without a quota the in-use size is not measured, and before the
	// first object count there are no object series.
	reg = prometheus.NewRegistry()
	c = &storeCollector{
		stats:        func() store.Stats { return store.Stats{} },
		objectCounts: func(func(string, int64)) bool { return false },
	}
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs = exposition(t, reg)
	for _, name := range []string{"etcd_mvcc_db_total_size_in_use_in_bytes", "apiserver_storage_objects", "apiserver_resource_objects", "edgeapi_watch_cache_events"} {
		if mfs[name] != nil {
			t.Errorf("%s: got %v, want none", name, mfs[name])
		}
	}
	if m := mfs["etcd_server_quota_backend_bytes"]; m == nil || m.GetMetric()[0].GetGauge().GetValue() != 0 {
		t.Errorf("etcd_server_quota_backend_bytes: got %v, want 0 (no quota)", m)
	}
}
