package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The comparison of issue 14: edgeapi on etcd (the edgeapi-ha build,
// --storage-backend=etcd3) against kube-apiserver on the same etcd, and
// against edgeapi on SQLite, in one invocation:
//
//	go run ./scripts/bench --bin bin/edgeapi --kube-ref --edge-on-etcd --ha-bin bin/edgeapi-ha ...
//
// The run goes: edgeapi on SQLite (the usual half); then scripts/kube-ref-start
// starts etcd and kube-apiserver; edgeapi-ha starts on that etcd under
// --etcd-prefix and the workloads run against it, kube-apiserver idle
// beside it; edgeapi-ha stops and its prefix is wiped (every key deleted,
// etcd compacted to that revision and defragmented) so that kube-apiserver
// starts its half on an etcd holding only its own keys; then the workloads
// run against kube-apiserver, and the reference stops. Within a half the
// workloads are separated as in every run: each creates objects under
// names and namespaces unique to it.
//
// Both edgeapi halves are reached the same way (--main-tls, --client), and
// etcd's CPU and RSS count with edgeapi-ha's as with kube-apiserver's; the
// RSS lines also carry each server's own part (Result.DaemonMiB).

// defaultBenchEtcdPrefix is edgeapi's --etcd-prefix in --edge-on-etcd:
// beside kube-apiserver's /registry, never under it.
const defaultBenchEtcdPrefix = "/edgeapi"

// checkEtcdPrefix refuses prefixes that would overlap kube-apiserver's
// keys (/registry) or the whole key space.
func checkEtcdPrefix(p string) error {
	q := strings.TrimRight(p, "/")
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("bad --etcd-prefix %q: must start with /", p)
	case q == "":
		return fmt.Errorf("bad --etcd-prefix %q: the whole key space", p)
	case q == "/registry" || strings.HasPrefix(q, "/registry/"):
		return fmt.Errorf("bad --etcd-prefix %q: kube-apiserver's keys are under /registry", p)
	}
	return nil
}

// etcdDaemonArgs are the serve arguments of edgeapi-ha on the etcd at
// etcdURL under prefix, after args (--daemon-args).
func etcdDaemonArgs(args []string, etcdURL, prefix string) []string {
	out := append([]string(nil), args...)
	return append(out, "--storage-backend=etcd3", "--etcd-servers", etcdURL, "--etcd-prefix", prefix)
}

// runEdgeOnEtcd is the rest of an --edge-on-etcd run, after the SQLite
// half whose report is sqlite: it starts the reference, runs the
// workloads against edgeapi-ha on its etcd, wipes edgeapi's prefix, runs
// them against kube-apiserver, and prints the three reports and the
// three-way table.
func runEdgeOnEtcd(ctx context.Context, cfg config, sqlite *Report) error {
	k, err := startKubeRefOf(ctx, cfg)
	if err != nil {
		return fmt.Errorf("kube-ref: %w", err)
	}
	etcdURL := k.vars["KUBE_REF_ETCD_URL"]
	etcdPid := k.pid("KUBE_REF_ETCD_PID")

	hcfg := cfg
	hcfg.bin = cfg.haBin
	hcfg.daemonArgs = etcdDaemonArgs(cfg.daemonArgs, etcdURL, cfg.etcdPrefix)
	hcfg.storePid = etcdPid
	hcfg.workloads = refWorkloads(cfg.workloads)
	hcfg.serverNote = fmt.Sprintf("(edgeapi-ha on the reference's etcd %s, --etcd-prefix %s; kube-apiserver idle beside it)", etcdURL, cfg.etcdPrefix)
	if cfg.jsonPath != "" {
		hcfg.jsonPath = siblingJSONPath(cfg.jsonPath, "edge-etcd")
	}
	hb := newBench(hcfg)
	hb.logf("edge-on-etcd: edgeapi-ha %s on etcd %s (pid %d), prefix %s", cfg.haBin, etcdURL, etcdPid, cfg.etcdPrefix)
	herr := hb.run(ctx)
	if ctx.Err() != nil {
		k.stop()
		return errors.Join(herr, ctx.Err())
	}

	w, werr := wipeEtcdPrefix(ctx, http.DefaultClient, etcdURL, cfg.etcdPrefix)
	if werr != nil {
		k.stop()
		return errors.Join(herr, fmt.Errorf("wipe etcd prefix %s: %w", cfg.etcdPrefix, werr))
	}
	hb.logf("edge-on-etcd: wiped %s: %d keys deleted, compacted at revision %d, etcd database %.1f → %.1f MiB (in use %.1f → %.1f MiB)",
		cfg.etcdPrefix, w.deleted, w.revision, toMiB(w.before.DBSize), toMiB(w.after.DBSize), toMiB(w.before.DBSizeInUse), toMiB(w.after.DBSizeInUse))

	kube, kerr := runOnKubeRef(ctx, cfg, k)
	if kube == nil {
		return errors.Join(herr, kerr)
	}
	if kerr != nil {
		kube.Failures = append(kube.Failures, "kube-ref: "+kerr.Error())
	}
	printReport(os.Stdout, kube)
	if cfg.jsonPath != "" {
		if err := writeJSON(kubeRefJSONPath(cfg.jsonPath), kube); err != nil {
			kerr = errors.Join(kerr, fmt.Errorf("write json: %w", err))
		}
	}
	printThreeWay(os.Stdout, hb.report, kube, sqlite)
	if kerr == nil && len(kube.Failures) > 0 {
		kerr = fmt.Errorf("kube-ref: %d workload(s) failed", len(kube.Failures))
	}
	if herr != nil {
		herr = fmt.Errorf("edge-on-etcd: %w", herr)
	}
	return errors.Join(herr, kerr)
}

// etcdStatus is what the bench reads of etcd's maintenance status.
type etcdStatus struct {
	DBSize      int64
	DBSizeInUse int64
}

// etcdWipe is what wipeEtcdPrefix did.
type etcdWipe struct {
	deleted       int64
	revision      int64
	before, after etcdStatus
}

// prefixRangeEnd is the end of the etcd key range of every key starting
// with prefix: prefix with its last byte below 0xff incremented (etcd's
// rule; "\x00" when every byte is 0xff, all keys from prefix on).
func prefixRangeEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// wipeEtcdPrefix deletes every key under prefix (taken as a directory:
// "/edgeapi" covers "/edgeapi/..." and not "/edgeapi2/..."), compacts
// etcd to the deletion's revision, defragments it, and checks that
// nothing is left under the prefix. It talks to etcd's JSON gateway on
// the client URL (/v3/...), so the bench links no etcd client.
func wipeEtcdPrefix(ctx context.Context, c *http.Client, etcdURL, prefix string) (etcdWipe, error) {
	var w etcdWipe
	dir := strings.TrimRight(prefix, "/") + "/"
	key, end := base64.StdEncoding.EncodeToString([]byte(dir)), base64.StdEncoding.EncodeToString([]byte(prefixRangeEnd(dir)))
	base := strings.TrimRight(etcdURL, "/")
	var err error
	if w.before, err = etcdStatusOf(ctx, c, base); err != nil {
		return w, err
	}
	var del struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
		Deleted string `json:"deleted"`
	}
	if err := etcdCall(ctx, c, base+"/v3/kv/deleterange", map[string]any{"key": key, "range_end": end}, &del); err != nil {
		return w, fmt.Errorf("delete range: %w", err)
	}
	if del.Deleted != "" {
		if w.deleted, err = strconv.ParseInt(del.Deleted, 10, 64); err != nil {
			return w, fmt.Errorf("delete range: deleted %q: %w", del.Deleted, err)
		}
	}
	if w.revision, err = strconv.ParseInt(del.Header.Revision, 10, 64); err != nil {
		return w, fmt.Errorf("delete range: revision %q: %w", del.Header.Revision, err)
	}
	var none struct{}
	if err := etcdCall(ctx, c, base+"/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(w.revision, 10), "physical": true}, &none); err != nil &&
		!strings.Contains(err.Error(), "required revision has been compacted") {
		// kube-apiserver's own compactor may have got there first.
		return w, fmt.Errorf("compact: %w", err)
	}
	if err := etcdCall(ctx, c, base+"/v3/maintenance/defragment", map[string]any{}, &none); err != nil {
		return w, fmt.Errorf("defragment: %w", err)
	}
	var left struct {
		Count string `json:"count"`
	}
	if err := etcdCall(ctx, c, base+"/v3/kv/range", map[string]any{"key": key, "range_end": end, "count_only": true}, &left); err != nil {
		return w, fmt.Errorf("count what is left: %w", err)
	}
	if left.Count != "" && left.Count != "0" {
		return w, fmt.Errorf("%s keys left under %s after the delete", left.Count, dir)
	}
	if w.after, err = etcdStatusOf(ctx, c, base); err != nil {
		return w, err
	}
	return w, nil
}

// etcdStatusOf reads the database sizes of etcd's maintenance status.
func etcdStatusOf(ctx context.Context, c *http.Client, base string) (etcdStatus, error) {
	var st struct {
		DBSize      string `json:"dbSize"`
		DBSizeInUse string `json:"dbSizeInUse"`
	}
	if err := etcdCall(ctx, c, base+"/v3/maintenance/status", map[string]any{}, &st); err != nil {
		return etcdStatus{}, fmt.Errorf("status: %w", err)
	}
	var s etcdStatus
	s.DBSize, _ = strconv.ParseInt(st.DBSize, 10, 64)
	s.DBSizeInUse, _ = strconv.ParseInt(st.DBSizeInUse, 10, 64)
	return s, nil
}

// etcdCall POSTs req as JSON to one of etcd's gateway endpoints and
// decodes the answer into resp.
func etcdCall(ctx context.Context, c *http.Client, url string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := c.Do(hr)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.300s", res.StatusCode, out)
	}
	if err := json.Unmarshal(out, resp); err != nil {
		return fmt.Errorf("decode %.200s: %w", out, err)
	}
	return nil
}

// threeWay is one line of the --edge-on-etcd table: edgeapi on etcd, and
// how many times better it did than kube-apiserver on the same etcd and
// than edgeapi on SQLite (rates over rates, times and memory the other way
// round; 0: no ratio).
type threeWay struct {
	workload         string
	etcd             string
	kube             string
	vsKube           float64
	sqlite           string
	vsSQLite         float64
	haveKube, haveSQ bool
}

// splitRSS returns r with each RSS line (unit MiB, named rss-*) as two:
// "NAME server", the server's own RSS, and "NAME server+etcd", with its
// store process's. A server without a store process (edgeapi on SQLite)
// has the same figure in both: it is its whole footprint.
func splitRSS(r *Report) *Report {
	out := *r
	out.Results = nil
	for _, res := range r.Results {
		if res.Unit != "MiB" || res.Latency != nil || !strings.HasPrefix(res.Workload, "rss-") {
			out.Results = append(out.Results, res)
			continue
		}
		own, all := res, res
		own.Workload, all.Workload = res.Workload+" server", res.Workload+" server+etcd"
		if res.DaemonMiB > 0 {
			own.Value = res.DaemonMiB
		}
		out.Results = append(out.Results, own, all)
	}
	return &out
}

// compareThree pairs edgeapi on etcd with kube-apiserver and with edgeapi
// on SQLite, in the order of the etcd report's results.
func compareThree(etcd, kube, sqlite *Report) []threeWay {
	e := splitRSS(etcd)
	ek := compareReports(e, splitRSS(kube))
	es := compareReports(e, splitRSS(sqlite))
	var out []threeWay
	index := map[string]int{}
	for _, c := range ek {
		index[c.workload] = len(out)
		out = append(out, threeWay{workload: c.workload, etcd: c.edgeapi, kube: c.kube, vsKube: c.ratio, haveKube: true})
	}
	for _, c := range es {
		i, ok := index[c.workload]
		if !ok {
			index[c.workload] = len(out)
			out = append(out, threeWay{workload: c.workload, etcd: c.edgeapi})
			i = len(out) - 1
		}
		out[i].sqlite, out[i].vsSQLite, out[i].haveSQ = c.kube, c.ratio, true
	}
	return out
}

// printThreeWay writes the --edge-on-etcd table.
func printThreeWay(out io.Writer, etcd, kube, sqlite *Report) {
	fmt.Fprintf(out, "\nedgeapi on etcd (%s)\nagainst kube-apiserver on the same etcd (%s)\nand edgeapi on SQLite (%s)\n", etcd.Server, kube.Server, sqlite.Server)
	fmt.Fprintf(out, "loadavg: edgeapi on SQLite %s; edgeapi on etcd %s; kube-apiserver %s\n",
		strings.Join(sqlite.LoadAvg, " / "), strings.Join(etcd.LoadAvg, " / "), strings.Join(kube.LoadAvg, " / "))
	fmt.Fprintln(out, "ratios: how many times better edgeapi on etcd did (its rate over the other's, or the other's time, CPU or memory over its own); against SQLite, below 1× is what etcd costs")
	fmt.Fprintln(out, "CPU per op and RSS \"server+etcd\" count etcd's with the server's (edgeapi on SQLite has no etcd: its server+etcd figure is the daemon alone); RSS \"server\" is the API server's own")
	rows := compareThree(etcd, kube, sqlite)
	plain, cg := splitThreeWay(rows)
	printThreeWayTable(out, plain)
	if len(cg) > 0 {
		fmt.Fprintln(out, "\nclient-go: all three reached through client-go's transport (HTTP/2 over TLS, a token user checked by RBAC, Protobuf)")
		printThreeWayTable(out, cg)
	}
}

// splitThreeWay separates the lines of the client-go pass, as
// splitClientGo does.
func splitThreeWay(rows []threeWay) (plain, cg []threeWay) {
	for _, r := range rows {
		if strings.Contains(r.workload, " "+clientGo) {
			cg = append(cg, r)
		} else {
			plain = append(plain, r)
		}
	}
	return plain, cg
}

func printThreeWayTable(out io.Writer, rows []threeWay) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tedgeapi on etcd\tkube-apiserver on etcd\tetcd/kube\tedgeapi on SQLite\tetcd/SQLite")
	ratio := func(v float64) string {
		if v > 0 {
			return fmt.Sprintf("%.2f×", v)
		}
		return "-"
	}
	for _, r := range rows {
		kube, sq := "-", "-"
		if r.haveKube {
			kube = r.kube
		}
		if r.haveSQ {
			sq = r.sqlite
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.workload, r.etcd, kube, ratio(r.vsKube), sq, ratio(r.vsSQLite))
	}
	tw.Flush()
}
