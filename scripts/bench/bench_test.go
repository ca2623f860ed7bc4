package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHistogram_Quantile(t *testing.T) {
	h := newHistogram()
	for i := 1; i <= 100000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 50 * time.Millisecond},
		{0.9, 90 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{1, 100 * time.Millisecond},
	} {
		got := h.quantile(tc.q)
		if rel := math.Abs(float64(got-tc.want)) / float64(tc.want); rel > 1.0/64 {
			t.Errorf("quantile(%v) = %v, want %v within 1/64", tc.q, got, tc.want)
		}
	}
	s := h.summary()
	if s.Count != 100000 || s.MinMS != 0.001 || s.MaxMS != 100 {
		t.Errorf("summary = %+v", s)
	}

	t.Run("merge", func(t *testing.T) {
		a, b := newHistogram(), newHistogram()
		a.record(time.Millisecond)
		b.record(3 * time.Millisecond)
		a.merge(b)
		if a.n != 2 || a.min != int64(time.Millisecond) || a.max != int64(3*time.Millisecond) {
			t.Errorf("merged n=%d min=%d max=%d", a.n, a.min, a.max)
		}
	})
	t.Run("buckets are ordered and precise", func(t *testing.T) {
		prev := 0
		for v := int64(0); v < 1<<30; v += 1 + v/100 {
			got := histBucket(v)
			if got < prev {
				t.Fatalf("bucket(%d) = %d after %d", v, got, prev)
			}
			prev = got
			mid := histBucketMid(got)
			if v < 1<<histSubBits && mid != v || math.Abs(float64(mid-v)) > float64(v)/64 {
				t.Fatalf("bucket(%d) = %d, mid %d", v, got, mid)
			}
		}
		if got := histBucket(math.MaxInt64); got != histBuckets-1 {
			t.Errorf("bucket(max) = %d, want %d", got, histBuckets-1)
		}
	})
}

func TestParseSent(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64
	}{
		{`{"type":"ADDED","object":{"metadata":{"annotations":{"bench.edgeapi.io/sent":"1700000000123456789"}}}}`, 1700000000123456789},
		{`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}`, 0},
		{``, 0},
	} {
		if got := parseSent([]byte(tc.line)); got != tc.want {
			t.Errorf("parseSent(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
}

func TestResourceVersionOf(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
	}{
		{`{"metadata":{"name":"a","resourceVersion":"42"},"data":{"resourceVersion":"x"}}`, "42"},
		{"{\n  \"metadata\": {\n    \"resourceVersion\": \"7\"\n  }\n}", "7"},
		{`{"metadata":{}}`, ""},
	} {
		if got := string(resourceVersionOf([]byte(tc.body))); got != tc.want {
			t.Errorf("resourceVersionOf(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestConfigMapBody(t *testing.T) {
	tmpl := newConfigMapBody("ns1", 100)
	var cm struct {
		Metadata struct {
			Name            string            `json:"name"`
			Namespace       string            `json:"namespace"`
			ResourceVersion string            `json:"resourceVersion"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	b := tmpl.appendCreate(nil, "c-", 17, 123)
	if err := json.Unmarshal(b, &cm); err != nil {
		t.Fatalf("create body %s: %v", b, err)
	}
	if cm.Metadata.Name != "c-17" || cm.Metadata.Namespace != "ns1" || len(cm.Data["payload"]) != 100 ||
		cm.Metadata.Annotations[sentAnnotation] != "123" {
		t.Errorf("create body decoded to %+v", cm)
	}
	b = tmpl.appendUpdate(nil, "c-17", []byte("99"), 5)
	if err := json.Unmarshal(b, &cm); err != nil {
		t.Fatalf("update body %s: %v", b, err)
	}
	if cm.Metadata.ResourceVersion != "99" || cm.Data["counter"] != "5" {
		t.Errorf("update body decoded to %+v", cm)
	}
}

func TestAvgBatch(t *testing.T) {
	for _, tc := range []struct {
		delta map[string]float64
		want  float64
	}{
		{map[string]float64{"store.Batches": 10, "store.BatchedWrites": 640}, 64},
		{map[string]float64{"readyz.batches": 4, "readyz.batched_writes": 10}, 2.5},
		{map[string]float64{"store.commits": 5}, 0},
	} {
		if got := avgBatch(tc.delta); got != tc.want {
			t.Errorf("avgBatch(%v) = %v, want %v", tc.delta, got, tc.want)
		}
	}
}

// TestWorkloads_Fake runs every workload but big, briefly, against the
// in-memory fake server.
func TestWorkloads_Fake(t *testing.T) {
	srv := httptest.NewServer(newFakeServer().routes())
	defer srv.Close()
	b := &bench{
		cfg: config{
			duration: 300 * time.Millisecond, maxOps: 100000, payloadBytes: 64,
			createClients: []int{1, 4}, getClients: 4, getObjects: 20, rmwClients: 4,
			listObjects: 50, lists: 3, watchers: 5, writeRate: 100, watchWriters: 2, quiet: true,
			applyClients: 3, patchClients: 3, idleWatchers: 20, bulkObjects: 120, pageLimit: 50, pagedLists: 2,
		},
		c: newClient(srv.URL, 8), base: srv.URL, runID: "test", report: &Report{},
	}
	defer b.c.close()
	ctx := context.Background()
	for _, name := range []string{"create", "get", "rmw", "list", "watch", "apply", "patch", "watch-idle", "paged-list"} {
		t.Run(name, func(t *testing.T) {
			w, _ := findWorkload(name)
			res, err := w.run(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) == 0 {
				t.Fatal("no results")
			}
			b.report.Results = append(b.report.Results, res...)
			for _, r := range res {
				if r.Unit != "" {
					continue // a single value (RSS): none without a pid
				}
				if r.Ops == 0 || r.Errors != 0 || r.Latency == nil || r.Latency.P50MS <= 0 {
					t.Errorf("%s: ops=%d errors=%d (%s) latency=%+v", r.Workload, r.Ops, r.Errors, r.ErrSample, r.Latency)
				}
			}
			if name == "watch" && !strings.Contains(strings.Join(res[0].Notes, ";"), " 0 watchers got fewer") {
				t.Errorf("watch missed events: %v", res[0].Notes)
			}
		})
	}
	if b.report.ServerStats == nil || b.report.ServerStats.DebugPath == "" {
		t.Error("debug stats not probed")
	}
	var sb strings.Builder
	b.report.Results = append(b.report.Results, Result{Workload: "rss-idle", Value: 1, Unit: "MiB"})
	printReport(&sb, b.report)
	if !strings.Contains(sb.String(), "create-4") {
		t.Errorf("report lacks create-4:\n%s", sb.String())
	}
}

func TestContinueOf(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string
	}{
		{`{"kind":"ConfigMapList","metadata":{"resourceVersion":"9","continue":"eyJ2IjoxfQ","remainingItemCount":5},"items":[]}`, "eyJ2IjoxfQ"},
		{`{"metadata":{"resourceVersion":"9"},"items":[{"data":{"continue":"x"}}]}`, ""},
		{`{"metadata":{"continue":""},"items":[]}`, ""},
	} {
		if got := continueOf([]byte(tc.body)); got != tc.want {
			t.Errorf("continueOf(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
