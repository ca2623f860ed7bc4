package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The kube-apiserver reference of issue 13: kube-apiserver 1.36 on etcd
// 3.6, built by scripts/kube-ref-build and started by scripts/kube-ref-start
// (TLS, a system:masters token, RBAC). With --kube-ref the bench runs the
// chosen workloads against edgeapi first, then starts the reference, runs
// the same workloads against it, stops it, and prints both reports and a
// comparison. Against a reference already running, --server URL --ca FILE
// --token TOKEN --pid PID [--store-pid PID] does the second half alone.

// serverTLS is how the bench's shared client reaches an HTTPS server:
// the CA that signed its certificate and a bearer token.
type serverTLS struct {
	caFile string
	token  string
}

// tlsConfig returns a client TLS configuration trusting only caFile.
func (s *serverTLS) tlsConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(s.caFile)
	if err != nil {
		return nil, fmt.Errorf("read ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("read ca %s: no PEM certificate", s.caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// newServerClient returns the bench's shared client for base: plain HTTP,
// or with st over TLS on HTTP/1.1, one kept-alive connection per concurrent
// request as over plain HTTP, sending st's token.
func newServerClient(base string, st *serverTLS, conns int) (*client, error) {
	if st == nil {
		if strings.HasPrefix(base, "https://") {
			return nil, errors.New("an https --server needs --ca (and usually --token)")
		}
		return newClient(base, conns), nil
	}
	tlsCfg, err := st.tlsConfig()
	if err != nil {
		return nil, err
	}
	tr := newTransport(conns)
	tr.TLSClientConfig = tlsCfg
	// A non-nil empty map keeps HTTP/2 off.
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	var rt http.RoundTripper = tr
	if st.token != "" {
		rt = &bearerTransport{Transport: tr, auth: "Bearer " + st.token}
	}
	return &client{base: base, tr: rt}, nil
}

// restConfig is a client-go configuration for the server the workloads
// target: no client-side rate limit, with the CA and token when over TLS.
func (b *bench) restConfig() *rest.Config {
	cfg := &rest.Config{Host: b.base, QPS: -1, UserAgent: "edgeapi-bench"}
	if st := b.serverTLS; st != nil {
		cfg.TLSClientConfig = rest.TLSClientConfig{CAFile: st.caFile}
		cfg.BearerToken = st.token
	}
	return cfg
}

// kubeRef is a running scripts/kube-ref-start.
type kubeRef struct {
	cmd  *exec.Cmd
	vars map[string]string
	// exited is closed when the script has exited.
	exited chan struct{}
	// script is the script's absolute path, and tmp the directory of its
	// log, removed by stop (when set).
	script, tmp string
}

// kubeRefVars are the lines scripts/kube-ref-start prints once ready.
var kubeRefVars = []string{"KUBE_REF_URL", "KUBE_REF_TOKEN", "KUBE_REF_CA", "KUBE_REF_APISERVER_PID", "KUBE_REF_ETCD_PID", "KUBE_REF_ETCD_URL", "KUBE_REF_READY"}

// readKubeRefVars reads KEY=VALUE lines until every one of kubeRefVars
// has been seen, and returns them. Other lines are ignored.
func readKubeRefVars(r *bufio.Reader) (map[string]string, error) {
	vars := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.HasPrefix(k, "KUBE_REF_") {
			vars[k] = v
		}
		missing := ""
		for _, k := range kubeRefVars {
			if vars[k] == "" {
				missing = k
				break
			}
		}
		if missing == "" {
			return vars, nil
		}
		if err != nil {
			if err == io.EOF {
				return vars, fmt.Errorf("kube-ref-start ended before printing %s", missing)
			}
			return vars, err
		}
	}
}

// startKubeRef runs script (scripts/kube-ref-start) and waits until it
// prints the reference's address, or for timeout.
func startKubeRef(ctx context.Context, script, logPath string, timeout time.Duration) (*kubeRef, error) {
	cmd := exec.Command(script)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", script, err)
	}
	k := &kubeRef{cmd: cmd, exited: make(chan struct{})}
	type result struct {
		vars map[string]string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r := bufio.NewReader(out)
		vars, err := readKubeRefVars(r)
		done <- result{vars, err}
		_, _ = io.Copy(io.Discard, r)
		_ = cmd.Wait()
		close(k.exited)
	}()
	select {
	case res := <-done:
		if res.err != nil {
			k.stop()
			return nil, fmt.Errorf("%s: %w%s", script, res.err, tailFile(logPath, 15))
		}
		k.vars = res.vars
		return k, nil
	case <-time.After(timeout):
		k.stop()
		return nil, fmt.Errorf("%s: not ready in %s%s", script, timeout, tailFile(logPath, 15))
	case <-ctx.Done():
		k.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM to the script, which stops kube-apiserver and etcd,
// and waits for it (up to a minute, then SIGKILL).
func (k *kubeRef) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(time.Minute):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
	if k.tmp != "" {
		os.RemoveAll(k.tmp)
	}
}

func (k *kubeRef) pid(name string) int {
	n, _ := strconv.Atoi(k.vars[name])
	return n
}

// runKubeRef starts the reference, runs cfg's workloads against it, stops
// it, and returns its report.
func runKubeRef(ctx context.Context, cfg config) (*Report, error) {
	k, err := startKubeRefOf(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return runOnKubeRef(ctx, cfg, k)
}

// startKubeRefOf starts cfg's reference script (--kube-ref-start), its
// log in a temporary directory that stop removes.
func startKubeRefOf(ctx context.Context, cfg config) (*kubeRef, error) {
	script, err := filepath.Abs(cfg.kubeRefStart)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "edgeapi-bench-kube-ref-")
	if err != nil {
		return nil, err
	}
	if !cfg.quiet {
		fmt.Fprintf(stderr, "bench %s kube-ref: starting %s\n", time.Now().Format("15:04:05.000"), script)
	}
	k, err := startKubeRef(ctx, script, filepath.Join(tmp, "kube-ref-start.log"), 5*time.Minute)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	k.script, k.tmp = script, tmp
	return k, nil
}

// runOnKubeRef runs cfg's workloads against the started reference k,
// stops it (timing the stop), and returns its report.
func runOnKubeRef(ctx context.Context, cfg config, k *kubeRef) (*Report, error) {
	cfg.workloads = refWorkloads(cfg.workloads)
	b := newBench(cfg)
	r := b.report
	r.LoadAvg = append(r.LoadAvg, loadAvg())
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		t := time.Now()
		k.stop()
		res := Result{Workload: "shutdown", Value: time.Since(t).Seconds(), Unit: "s"}
		res.note("SIGTERM to kube-ref-start until it stopped kube-apiserver and etcd, after the run")
		r.Results = append(r.Results, res)
		b.logResult(res)
	}
	defer stop()
	b.base = k.vars["KUBE_REF_URL"]
	b.serverTLS = &serverTLS{caFile: k.vars["KUBE_REF_CA"], token: k.vars["KUBE_REF_TOKEN"]}
	b.pid = k.pid("KUBE_REF_APISERVER_PID")
	b.storePid = k.pid("KUBE_REF_ETCD_PID")
	// kube-apiserver has no memory limit to check a peak against.
	b.cfg.memoryLimitMiB = 0
	r.Server = b.base + " (kube-apiserver on etcd, scripts/kube-ref-start)"
	r.Bin = filepath.Join(filepath.Dir(filepath.Dir(k.script)), ".cache", "kube-ref", "bin", "kube-apiserver")
	if dir := os.Getenv("KUBE_REF_BIN"); dir != "" {
		r.Bin = filepath.Join(dir, "kube-apiserver")
	}
	r.Version = kubeRefVersion(ctx, b)
	if s, err := strconv.ParseFloat(k.vars["KUBE_REF_READY"], 64); err == nil {
		res := Result{Workload: "startup", Value: s, Unit: "s"}
		res.note("etcd start to kube-apiserver /readyz 200, empty data dir (kube-ref-start)")
		r.Results = append(r.Results, res)
		b.logResult(res)
	}
	b.logf("kube-ref: kube-apiserver pid %d, etcd pid %d on %s", b.pid, b.storePid, b.base)
	err := b.runWorkloads(ctx)
	stop()
	r.LoadAvg = append(r.LoadAvg, loadAvg())
	return r, err
}

// edgeapiOnly are workloads that measure edgeapi's own references (a scan
// of its database): they run in edgeapi's half of --kube-ref only.
var edgeapiOnly = map[string]bool{"list-ref": true}

// refWorkloads is ws without the workloads of edgeapiOnly.
func refWorkloads(ws []string) []string {
	var out []string
	for _, w := range ws {
		if !edgeapiOnly[w] {
			out = append(out, w)
		}
	}
	return out
}

// kubeRefVersion returns the reference's gitVersion from /version.
func kubeRefVersion(ctx context.Context, b *bench) string {
	c, err := newServerClient(b.base, b.serverTLS, 1)
	if err != nil {
		return ""
	}
	defer c.close()
	code, body, err := c.doSimple(ctx, http.MethodGet, "/version", "")
	if err != nil || code != http.StatusOK {
		return ""
	}
	if _, rest, ok := strings.Cut(string(body), `"gitVersion": "`); ok {
		v, _, _ := strings.Cut(rest, `"`)
		return "kube-apiserver " + v
	}
	return ""
}

// serverless are the workloads that measure no server (the physical
// references), run again in the reference's half.
var serverless = map[string]bool{"sqlite-ref": true, "watch-ref": true}

// comparison is one line of the edgeapi/kube-apiserver table.
type comparison struct {
	workload      string
	edgeapi, kube string
	// ratio is how many times better edgeapi did: its rate over the
	// reference's, or the reference's time or memory over edgeapi's. 0
	// when either side is missing or zero.
	ratio float64
}

// compareReports pairs the results of the same workload in the two
// reports: rates (ops/s, with p99) and single values (ms, s, MiB).
func compareReports(edge, kube *Report) []comparison {
	byName := map[string]*Result{}
	for i := range kube.Results {
		byName[kube.Results[i].Workload] = &kube.Results[i]
	}
	var out []comparison
	for i := range edge.Results {
		e := &edge.Results[i]
		k, ok := byName[e.Workload]
		if !ok {
			continue
		}
		c := comparison{workload: e.Workload}
		if serverless[e.Workload] {
			// The same loop in both halves, no server involved: both
			// figures are printed, for the machine's drift between
			// the halves, without a ratio.
			if e.Latency != nil && k.Latency != nil {
				c.edgeapi = fmt.Sprintf("%s/s p99 %s", fmtRate(e.OpsPerSec), fmtMS(e.Latency.P99MS))
				c.kube = fmt.Sprintf("%s/s p99 %s", fmtRate(k.OpsPerSec), fmtMS(k.Latency.P99MS))
				out = append(out, c)
			}
			continue
		}
		switch {
		case e.Latency != nil && e.Unit == "":
			// A timed loop: the rate decides.
			c.edgeapi = fmt.Sprintf("%s/s p99 %s", fmtRate(e.OpsPerSec), fmtMS(e.Latency.P99MS))
			c.kube = fmt.Sprintf("%s/s p99 %s", fmtRate(k.OpsPerSec), fmtMS(k.Latency.P99MS))
			if k.OpsPerSec > 0 {
				c.ratio = e.OpsPerSec / k.OpsPerSec
			}
			out = append(out, c)
			if cpu, ok := cpuPerOpComparison(e, k); ok {
				out = append(out, cpu)
			}
			continue
		case e.Latency != nil:
			// A timed loop that also carries a value (list: response
			// MiB): the p50 decides, lower is better.
			c.edgeapi = fmt.Sprintf("p50 %s p99 %s", fmtMS(e.Latency.P50MS), fmtMS(e.Latency.P99MS))
			c.kube = fmt.Sprintf("p50 %s p99 %s", fmtMS(k.Latency.P50MS), fmtMS(k.Latency.P99MS))
			if e.Latency.P50MS > 0 && k.Latency != nil {
				c.ratio = k.Latency.P50MS / e.Latency.P50MS
			}
			out = append(out, c)
			if cpu, ok := cpuPerOpComparison(e, k); ok {
				out = append(out, cpu)
			}
			continue
		case e.Unit != "" && e.Unit == k.Unit:
			c.edgeapi = fmtValue(e.Value, e.Unit)
			c.kube = fmtValue(k.Value, k.Unit)
			if e.Value > 0 && lowerIsBetter(e.Unit) {
				c.ratio = k.Value / e.Value
			}
		default:
			continue
		}
		out = append(out, c)
		if e.Unit == "s" && e.ServerCPU > 0 && k.ServerCPU > 0 {
			// A timed single value (informer) with the server's CPU
			// over it: the CPU is the steadier figure on a shared
			// machine.
			ec, kc := e.ServerCPU*e.Value, k.ServerCPU*k.Value
			out = append(out, comparison{workload: e.Workload + " server CPU",
				edgeapi: fmt.Sprintf("%.2f core-s", ec), kube: fmt.Sprintf("%.2f core-s", kc), ratio: kc / ec})
		}
	}
	return out
}

// cpuPerOpComparison compares the server CPU per operation of two timed
// loops (kube-apiserver's with etcd's), the steadier figure on a shared
// machine: the ratio is kube-apiserver's over edgeapi's.
func cpuPerOpComparison(e, k *Result) (comparison, bool) {
	if e.ServerCPU <= 0 || k.ServerCPU <= 0 || e.OpsPerSec <= 0 || k.OpsPerSec <= 0 {
		return comparison{}, false
	}
	ec, kc := 1e6*e.ServerCPU/e.OpsPerSec, 1e6*k.ServerCPU/k.OpsPerSec
	return comparison{workload: e.Workload + " server CPU/op", edgeapi: fmtCPUPerOp(e), kube: fmtCPUPerOp(k), ratio: kc / ec}, true
}

// fmtCPUPerOp is r's server CPU per operation, with its store process's
// (etcd's) part when it has one.
func fmtCPUPerOp(r *Result) string {
	s := fmtUS(1e6 * r.ServerCPU / r.OpsPerSec)
	if r.StoreCPU > 0 {
		s += " (etcd " + fmtUS(1e6*r.StoreCPU/r.OpsPerSec) + ")"
	}
	return s
}

// lowerIsBetter reports whether a single value in unit is a cost (time,
// memory) rather than a rate.
func lowerIsBetter(unit string) bool {
	switch unit {
	case "s", "ms", "MiB", "core-s":
		return true
	}
	return false
}

func fmtValue(v float64, unit string) string {
	if unit == "s" {
		return fmt.Sprintf("%.3f s", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// printComparison writes the edgeapi/kube-apiserver table.
func printComparison(out io.Writer, edge, kube *Report) {
	fmt.Fprintf(out, "\nedgeapi (%s) against kube-apiserver on etcd (%s)\n", edge.Server, kube.Server)
	fmt.Fprintf(out, "loadavg: edgeapi run %s; kube-apiserver run %s\n", strings.Join(edge.LoadAvg, " / "), strings.Join(kube.LoadAvg, " / "))
	fmt.Fprintln(out, "ratio: how many times better edgeapi did (its rate over kube-apiserver's, or kube-apiserver's time or memory over its own)")
	plain, cg := splitClientGo(compareReports(edge, kube))
	printComparisonTable(out, plain)
	if len(cg) > 0 {
		fmt.Fprintln(out, "\nclient-go against client-go: both servers reached through client-go's transport (HTTP/2 over TLS) by a token user checked by RBAC, asking for Protobuf")
		fmt.Fprintln(out, "(edgeapi: the static token user "+benchUser+"; kube-apiserver: a ServiceAccount token; /plain lines: each server's client-go rate as a percentage of its own HTTP/1.1 JSON rate)")
		printComparisonTable(out, cg)
	}
}

// printComparisonTable writes comparison lines as a table.
func printComparisonTable(out io.Writer, cs []comparison) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workload\tedgeapi\tkube-apiserver\tratio")
	for _, c := range cs {
		ratio := "-"
		if c.ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", c.ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.workload, c.edgeapi, c.kube, ratio)
	}
	tw.Flush()
}

// splitClientGo separates the lines of the client-go pass (--client
// clientgo: names with " clientgo") from the others, keeping the order.
func splitClientGo(cs []comparison) (plain, cg []comparison) {
	for _, c := range cs {
		if strings.Contains(c.workload, " "+clientGo) {
			cg = append(cg, c)
		} else {
			plain = append(plain, c)
		}
	}
	return plain, cg
}

// kubeRefJSONPath is where --json puts the reference's report: beside
// edgeapi's, ".kube-ref" before the extension.
func kubeRefJSONPath(path string) string {
	return siblingJSONPath(path, "kube-ref")
}

// siblingJSONPath is path with "."+tag before its extension: where --json
// puts the report of another server of the same run.
func siblingJSONPath(path, tag string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + tag + ext
}

// mainToken is the system:masters token user of --main-tls, beside the
// TLS workloads' RBAC user in the daemon's --token-auth-file.
const mainToken = "bench-admin-token-0123456789abcdef"

// tokenFile is the --token-auth-file of the daemon the bench starts.
const tokenFile = benchToken + "," + benchUser + ",bench-uid\n" +
	mainToken + ",bench-admin,bench-admin-uid,\"system:masters\"\n"

// useMainTLS points the workloads at the started daemon's HTTPS listener,
// as its kubeconfig names it and with its CA, sending mainToken: the way
// they reach kube-apiserver.
func (b *bench) useMainTLS() error {
	path := filepath.Join(b.d.dataDir, "kubeconfig")
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return fmt.Errorf("main tls: load kubeconfig: %w", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil {
		return fmt.Errorf("main tls: kubeconfig %s: no current context's cluster", path)
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if !strings.HasPrefix(cluster.Server, "https://") || len(cluster.CertificateAuthorityData) == 0 {
		return fmt.Errorf("main tls: kubeconfig %s: want an https server with inline CA data, got %q", path, cluster.Server)
	}
	ca := filepath.Join(b.tmpDir, "ca.crt")
	if err := os.WriteFile(ca, cluster.CertificateAuthorityData, 0o600); err != nil {
		return err
	}
	b.base = strings.TrimRight(cluster.Server, "/")
	b.serverTLS = &serverTLS{caFile: ca, token: mainToken}
	return nil
}

// rbacUserName is the user the TLS workloads' RoleBindings name: benchUser
// of the daemon's token file, or the ServiceAccount of serverTarget.
func (b *bench) rbacUserName() string {
	if b.rbacUser != "" {
		return b.rbacUser
	}
	return benchUser
}

// serverTarget is the HTTPS side of a server that wrote no kubeconfig the
// bench can read (kube-apiserver of --kube-ref, or an https --server): its
// URL and CA, and as the user either a ServiceAccount whose rights come
// from one of --tls-rbac-bindings RoleBindings, with a token the server
// issues (TokenRequest), or with --tls-rbac-bindings 0 the system:masters
// token of the shared client. So the client-go pass against kube-apiserver
// is a token user checked by RBAC, as against edgeapi, where it is the
// static token user benchUser.
func (b *bench) serverTarget(ctx context.Context) (*tlsTarget, error) {
	st := b.serverTLS
	u, err := url.Parse(b.base)
	if err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("tls target: server %q is not https", b.base)
	}
	cfg := &rest.Config{Host: b.base, QPS: -1, UserAgent: "edgeapi-bench",
		TLSClientConfig: rest.TLSClientConfig{CAFile: st.caFile}, BearerToken: st.token}
	if b.cfg.tlsRBACBindings > 0 {
		user, token, err := b.serviceAccountToken(ctx, benchNamespace, benchUser)
		if err != nil {
			return nil, fmt.Errorf("tls target: %w", err)
		}
		b.rbacUser, cfg.BearerToken = user, token
		if err := b.aggregateEdit(ctx); err != nil {
			return nil, fmt.Errorf("tls target: %w", err)
		}
		if err := b.bindBenchUser(ctx, b.cfg.tlsRBACBindings); err != nil {
			return nil, err
		}
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("tls target: tls config: %w", err)
	}
	t := &tlsTarget{base: strings.TrimRight(b.base, "/"), host: u.Hostname(), port: u.Port(), rest: cfg, tls: tlsCfg}
	if t.tls.ServerName == "" {
		t.tls.ServerName = t.host
	}
	b.tls = t
	return t, nil
}

// serviceAccountTokenSeconds is the lifetime the bench asks for its
// ServiceAccount token: longer than any run.
const serviceAccountTokenSeconds = 24 * 3600

// serviceAccountToken creates ServiceAccount ns/name (an existing one is
// fine), asks the server for a token of it, and returns its user name and
// the token.
func (b *bench) serviceAccountToken(ctx context.Context, ns, name string) (user, token string, err error) {
	if err := b.c.ensureNamespace(ctx, ns); err != nil {
		return "", "", err
	}
	body := `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"` + name + `"}}`
	code, out, err := b.c.doSimple(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts", body)
	if err != nil {
		return "", "", fmt.Errorf("create serviceaccount %s/%s: %w", ns, name, err)
	}
	if code != http.StatusCreated && code != http.StatusConflict {
		return "", "", fmt.Errorf("create serviceaccount %s/%s: HTTP %d: %.300s", ns, name, code, out)
	}
	body = `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":` +
		strconv.Itoa(serviceAccountTokenSeconds) + `}}`
	code, out, err = b.c.doSimple(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+name+"/token", body)
	if err != nil {
		return "", "", fmt.Errorf("request token of %s/%s: %w", ns, name, err)
	}
	token, err = tokenOf(code, out)
	if err != nil {
		return "", "", fmt.Errorf("request token of %s/%s: %w", ns, name, err)
	}
	return "system:serviceaccount:" + ns + ":" + name, token, nil
}

// tokenOf returns status.token of a TokenRequest response.
func tokenOf(code int, body []byte) (string, error) {
	if code != http.StatusCreated && code != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %.300s", code, body)
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return "", fmt.Errorf("decode TokenRequest: %w", err)
	}
	if tr.Status.Token == "" {
		return "", errors.New("TokenRequest without status.token")
	}
	return tr.Status.Token, nil
}
