package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestPrefixRangeEnd(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/edgeapi/", "/edgeapi0"},
		{"a", "b"},
		{"a\xff", "b"},
		{"\xff\xff", "\x00"},
	} {
		if got := prefixRangeEnd(tc.in); got != tc.want {
			t.Errorf("prefixRangeEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckEtcdPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"/edgeapi", true},
		{"/edgeapi-bench/", true},
		{"/registry-edge", true},
		{"/registry", false},
		{"/registry/edge", false},
		{"/", false},
		{"edgeapi", false},
	} {
		err := checkEtcdPrefix(tc.prefix)
		if (err == nil) != tc.ok {
			t.Errorf("checkEtcdPrefix(%q) = %v, want ok %v", tc.prefix, err, tc.ok)
		}
	}
}

func TestParseFlags_EdgeOnEtcd(t *testing.T) {
	cfg, err := parseFlags([]string{"--kube-ref", "--edge-on-etcd", "--ha-bin", "/x/edgeapi-ha"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.edgeOnEtcd || cfg.haBin != "/x/edgeapi-ha" || cfg.etcdPrefix != "/edgeapi" || !cfg.mainTLS {
		t.Errorf("cfg = edgeOnEtcd %v haBin %q etcdPrefix %q mainTLS %v, want true /x/edgeapi-ha /edgeapi true",
			cfg.edgeOnEtcd, cfg.haBin, cfg.etcdPrefix, cfg.mainTLS)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--edge-on-etcd"}, "--kube-ref"},
		{[]string{"--kube-ref", "--edge-on-etcd", "--etcd-prefix", "/registry"}, "/registry"},
	} {
		if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("parseFlags(%q) error %v, want one naming %s", tc.args, err, tc.wantErr)
		}
	}
}

func TestEtcdDaemonArgs(t *testing.T) {
	in := make([]string, 2, 8)
	copy(in, []string{"--memory-limit", "128Mi"})
	got := etcdDaemonArgs(in, "http://127.0.0.1:2379", "/edgeapi")
	want := []string{"--memory-limit", "128Mi", "--storage-backend=etcd3", "--etcd-servers", "http://127.0.0.1:2379", "--etcd-prefix", "/edgeapi"}
	if !slices.Equal(got, want) {
		t.Errorf("etcdDaemonArgs = %q, want %q", got, want)
	}
	// The caller's --daemon-args are not written through its spare
	// capacity (the SQLite half uses them too).
	if in[:3][2] != "" {
		t.Errorf("etcdDaemonArgs wrote into its argument's array: %q", in[:3])
	}
}

// fakeEtcdGateway answers etcd's JSON gateway calls the wipe makes, over a
// map of keys, and records the paths called.
type fakeEtcdGateway struct {
	mu        sync.Mutex
	keys      map[string]bool
	calls     []string
	compacted string
	// keepKeys makes deleterange delete nothing and answer deleted 0.
	keepKeys bool
}

func (f *fakeEtcdGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.URL.Path)
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	dec := func(k string) string {
		s, _ := req[k].(string)
		b, _ := base64.StdEncoding.DecodeString(s)
		return string(b)
	}
	inRange := func() []string {
		var out []string
		for k := range f.keys {
			if k >= dec("key") && k < dec("range_end") {
				out = append(out, k)
			}
		}
		return out
	}
	hdr := map[string]string{"revision": "42"}
	switch r.URL.Path {
	case "/v3/maintenance/status":
		_ = json.NewEncoder(w).Encode(map[string]any{"header": hdr, "dbSize": "2097152", "dbSizeInUse": "1048576"})
	case "/v3/kv/deleterange":
		n := 0
		if !f.keepKeys {
			for _, k := range inRange() {
				delete(f.keys, k)
				n++
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"header": hdr, "deleted": itoa(n)})
	case "/v3/kv/compaction":
		f.compacted, _ = req["revision"].(string)
		_ = json.NewEncoder(w).Encode(map[string]any{"header": hdr})
	case "/v3/maintenance/defragment":
		_, _ = w.Write([]byte("{}"))
	case "/v3/kv/range":
		_ = json.NewEncoder(w).Encode(map[string]any{"header": hdr, "count": itoa(len(inRange()))})
	default:
		http.NotFound(w, r)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestWipeEtcdPrefix: the wipe deletes exactly the keys under the prefix
// taken as a directory, compacts at the deletion's revision, defragments,
// and fails when keys are left.
func TestWipeEtcdPrefix(t *testing.T) {
	f := &fakeEtcdGateway{keys: map[string]bool{
		"/edgeapi/configmaps/bench/a": true, "/edgeapi/namespaces/bench": true,
		"/edgeapi2/x": true, "/registry/configmaps/default/b": true,
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := wipeEtcdPrefix(context.Background(), srv.Client(), srv.URL, "/edgeapi")
	if err != nil {
		t.Fatal(err)
	}
	if got.deleted != 2 || got.revision != 42 || f.compacted != "42" {
		t.Errorf("deleted %d at revision %d, compacted at %q; want 2 at 42, compacted at 42", got.deleted, got.revision, f.compacted)
	}
	var left []string
	for k := range f.keys {
		left = append(left, k)
	}
	slices.Sort(left)
	if want := []string{"/edgeapi2/x", "/registry/configmaps/default/b"}; !slices.Equal(left, want) {
		t.Errorf("keys left %q, want %q", left, want)
	}
	if !slices.Contains(f.calls, "/v3/maintenance/defragment") {
		t.Errorf("calls %q: no defragment", f.calls)
	}
	if got.before.DBSize != 2<<20 || got.after.DBSizeInUse != 1<<20 {
		t.Errorf("status before %+v after %+v, want the gateway's sizes", got.before, got.after)
	}

	f.keepKeys = true
	f.keys["/edgeapi/configmaps/bench/c"] = true
	if _, err := wipeEtcdPrefix(context.Background(), srv.Client(), srv.URL, "/edgeapi/"); err == nil || !strings.Contains(err.Error(), "left") {
		t.Errorf("wipe with keys left: %v, want an error saying so", err)
	}
}

// TestCompareThree: the table pairs edgeapi on etcd with both other
// servers, and splits RSS into the server's own and with etcd's.
func TestCompareThree(t *testing.T) {
	etcd := &Report{Results: []Result{
		{Workload: "create-64", OpsPerSec: 3000, Latency: &Latency{P50MS: 10, P99MS: 30}, ServerCPU: 1.2, StoreCPU: 0.45},
		{Workload: "rss-peak-create", Value: 150, Unit: "MiB", DaemonMiB: 60, StoreMiB: 90},
	}}
	kube := &Report{Results: []Result{
		{Workload: "create-64", OpsPerSec: 1000, Latency: &Latency{P50MS: 30, P99MS: 90}, ServerCPU: 1.2, StoreCPU: 0.2},
		{Workload: "rss-peak-create", Value: 900, Unit: "MiB", DaemonMiB: 600, StoreMiB: 300},
	}}
	sqlite := &Report{Results: []Result{
		{Workload: "create-64", OpsPerSec: 6000, Latency: &Latency{P50MS: 5, P99MS: 15}, ServerCPU: 1.2},
		{Workload: "rss-peak-create", Value: 100, Unit: "MiB"},
	}}
	type ratios struct{ kube, sqlite float64 }
	got := map[string]ratios{}
	var order []string
	for _, r := range compareThree(etcd, kube, sqlite) {
		got[r.workload] = ratios{r.vsKube, r.vsSQLite}
		order = append(order, r.workload)
	}
	want := map[string]ratios{
		"create-64":                   {3, 0.5},
		"create-64 server CPU/op":     {3, 0.5}, // 400 µs against 1,200 and 200
		"rss-peak-create server":      {10, 100.0 / 60},
		"rss-peak-create server+etcd": {6, 100.0 / 150},
	}
	if len(got) != len(want) {
		t.Errorf("rows %q, want %d", order, len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || !near(g.kube, w.kube) || !near(g.sqlite, w.sqlite) {
			t.Errorf("%s: ratios %+v, want %+v", k, g, w)
		}
	}
	var sb strings.Builder
	printThreeWay(&sb, etcd, kube, sqlite)
	for _, s := range []string{"edgeapi on etcd", "kube-apiserver on etcd", "edgeapi on SQLite", "3.00×", "0.50×", "rss-peak-create server+etcd",
		"400 µs (etcd 150 µs)", "1200 µs (etcd 200 µs)"} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, sb.String())
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestRunWithRSSPeak_Store: with a store process beside the daemon, the
// peak line sums both, keeps the daemon's own part, and checks the
// daemon's own peak against its memory limit.
func TestRunWithRSSPeak_Store(t *testing.T) {
	pid := os.Getpid()
	own, err := rssBytes(pid)
	if err != nil {
		t.Skipf("no RSS of this process: %v", err)
	}
	ownMiB := float64(own) / (1 << 20)
	for _, tc := range []struct {
		name     string
		limitMiB float64
		wantOver bool
	}{
		// The sum (twice this process) is over the limit, the daemon's
		// own peak is not: within.
		{"within", 1.5 * ownMiB, false},
		{"over", ownMiB / 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bench{cfg: config{memoryLimitMiB: tc.limitMiB, quiet: true}, pid: pid, storePid: pid, report: &Report{}}
			w := workload{name: "noop", run: func(context.Context, *bench) ([]Result, error) { return nil, nil }}
			res, err := b.runWithRSSPeak(context.Background(), w)
			if err != nil || len(res) != 1 {
				t.Fatalf("runWithRSSPeak = %v, %v; want one line", res, err)
			}
			r := res[0]
			if r.DaemonMiB <= 0 || r.StoreMiB <= 0 || !near(r.Value, r.DaemonMiB+r.StoreMiB) {
				t.Errorf("value %.1f, daemon %.1f, store %.1f: want the sum of two positive parts", r.Value, r.DaemonMiB, r.StoreMiB)
			}
			if over := len(b.report.RSSOver) > 0; over != tc.wantOver {
				t.Errorf("limit %.1f MiB, daemon %.1f MiB: RSSOver %q, want over %v", tc.limitMiB, r.DaemonMiB, b.report.RSSOver, tc.wantOver)
			}
		})
	}
}
