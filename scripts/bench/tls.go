package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The TLS workloads compare the daemon's HTTPS listener, reached with the
// kubeconfig it writes (its CA and the admin client certificate), with the
// plain-HTTP --insecure-listen address the other workloads use, in one
// run against one daemon:
//
//   - tls: creates and gets on kept-alive connections over plain HTTP/1.1,
//     TLS with HTTP/1.1 (one connection per client, as the bench's own
//     client) and TLS with client-go's own transport (HTTP/2: one
//     connection, a stream per request), with the ratio TLS/plain;
//   - tls-watch: watch fan-out through client-go's transport (HTTP/2 over
//     TLS) and over TLS with HTTP/1.1 against the plain HTTP/1.1 watches
//     of the watch workload;
//   - tls-handshake: new TLS connections per second, each a full handshake
//     (no session resumption) with the client certificate, alone and
//     followed by one GET, and new plain connections with a GET for
//     reference.

// Defaults of the TLS workloads.
const (
	// targetTLSRatio is issue 11's floor for TLS against plain HTTP.
	targetTLSRatio = "≥90%"
	// handshakeTimeout bounds one connection of the tls-handshake
	// workload, request included.
	handshakeTimeout = 10 * time.Second
)

// tlsTarget is the daemon's HTTPS side as a kubeconfig describes it.
type tlsTarget struct {
	kubeconfig string
	base       string // https://HOST:PORT
	host, port string
	// rest is the kubeconfig's client config, without client-side rate
	// limiting.
	rest *rest.Config
	// tls is the TLS configuration client-go builds from it: the CA, the
	// client certificate, and the server name to verify.
	tls *tls.Config
}

// The token user of the TLS workloads with --tls-rbac-bindings.
const (
	benchUser  = "bench-user"
	benchToken = "bench-token-0123456789abcdef"
)

// bindBenchUser creates n RoleBindings across 100 namespaces, one of which
// gives benchUser the edit ClusterRole in benchNamespace; the others name
// other users. So a request of benchUser is decided by RBAC among n
// bindings.
func (b *bench) bindBenchUser(ctx context.Context, n int) error {
	if err := b.c.ensureNamespace(ctx, benchNamespace); err != nil {
		return err
	}
	const spread = 100
	for i := range min(n, spread) {
		if err := b.c.ensureNamespace(ctx, fmt.Sprintf("rbac-%d", i)); err != nil {
			return err
		}
	}
	if err := b.bindEdit(ctx, benchNamespace, "bench-user", b.rbacUserName()); err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		if err := b.bindEdit(ctx, fmt.Sprintf("rbac-%d", i%spread), fmt.Sprintf("b-%d", i), fmt.Sprintf("user-%d", i)); err != nil {
			return err
		}
	}
	b.logf("tls: %d RoleBindings across %d namespaces; the TLS clients are the token user %s, bound by one of them", n, min(n, spread), b.rbacUserName())
	return nil
}

// bindEdit creates a RoleBinding name in ns giving user the edit
// ClusterRole there.
func (b *bench) bindEdit(ctx context.Context, ns, name, user string) error {
	body := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},` +
		`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"` + user + `"}]}`
	code, out, err := b.c.doSimple(ctx, http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", body)
	if err != nil {
		return fmt.Errorf("create rolebinding %s/%s: %w", ns, name, err)
	}
	if code != http.StatusCreated && code != http.StatusConflict {
		return fmt.Errorf("create rolebinding %s/%s: HTTP %d: %.300s", ns, name, code, out)
	}
	return nil
}

// grantBenchUser lets the TLS workloads' token user (if any) edit ns, and
// waits until the authorizer knows.
func (b *bench) grantBenchUser(ctx context.Context, ns string) error {
	if b.tls == nil || b.tls.rest.BearerToken == "" {
		return nil
	}
	if err := b.bindEdit(ctx, ns, "bench-user", b.rbacUserName()); err != nil {
		return err
	}
	c := b.tls.h1Client(1)
	defer c.close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, err := c.do(ctx, http.MethodGet, configMapsURL(c.base, ns)+"?limit=1", nil, nil)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the bench user may not list configmaps in %s: HTTP %d %v", ns, code, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tlsTarget returns the daemon's HTTPS side: from --kubeconfig, or the
// kubeconfig the daemon this tool started wrote in its data dir.
func (b *bench) tlsTarget() (*tlsTarget, error) {
	if b.tls != nil {
		return b.tls, nil
	}
	path := b.cfg.kubeconfig
	if path == "" && b.d != nil {
		path = filepath.Join(b.d.dataDir, "kubeconfig")
	}
	if path == "" && b.d == nil && b.serverTLS != nil {
		return b.serverTarget(context.Background())
	}
	if path == "" {
		return nil, errors.New("the TLS workloads need the daemon's kubeconfig: give --kubeconfig with --server")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 0 // watches; requests have their own contexts
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("kubeconfig %s: server %q is not https", path, cfg.Host)
	}
	if b.cfg.tlsRBACBindings > 0 && b.d != nil {
		// A token user that RBAC lets in, not system:masters (whom
		// authorization lets through at once).
		cfg = rest.AnonymousClientConfig(cfg)
		cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 0
		cfg.BearerToken = benchToken
		if err := b.bindBenchUser(context.Background(), b.cfg.tlsRBACBindings); err != nil {
			return nil, err
		}
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: tls config: %w", path, err)
	}
	t := &tlsTarget{kubeconfig: path, base: strings.TrimRight(cfg.Host, "/"), host: u.Hostname(), port: u.Port(), rest: cfg, tls: tlsCfg}
	if t.tls.ServerName == "" {
		t.tls.ServerName = t.host
	}
	b.tls = t
	return t, nil
}

// h1Client is the bench's own client over TLS, HTTP/1.1 only: one
// kept-alive connection per concurrent request, as over plain HTTP.
func (t *tlsTarget) h1Client(conns int) *client {
	tr := newTransport(conns)
	tr.TLSClientConfig = t.tls.Clone()
	// A non-nil empty map keeps HTTP/2 off.
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	return &client{base: t.base, tr: t.withAuth(tr)}
}

// withAuth returns tr sending the target's bearer token, if it has one
// (--tls-rbac-bindings), with each request.
func (t *tlsTarget) withAuth(tr *http.Transport) http.RoundTripper {
	if t.rest.BearerToken == "" {
		return tr
	}
	return &bearerTransport{Transport: tr, auth: "Bearer " + t.rest.BearerToken}
}

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct {
	*http.Transport
	auth string
}

func (b *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := *req
	r.Header = req.Header.Clone()
	r.Header.Set("Authorization", b.auth)
	return b.Transport.RoundTrip(&r)
}

// clientGo is a client of client-go's own transport for the kubeconfig
// (rest.TransportFor): HTTP/2 over TLS, as client-go negotiates it.
func (t *tlsTarget) clientGo() (*client, error) {
	rt, err := rest.TransportFor(t.rest)
	if err != nil {
		return nil, fmt.Errorf("client-go transport: %w", err)
	}
	return &client{base: t.base, tr: rt}, nil
}

// tlsVariant is one way of reaching the daemon in the tls workload.
type tlsVariant struct {
	name string
	c    *client
}

// protoOf returns the protocol ("HTTP/1.1", "HTTP/2.0") and TLS version
// one GET through c used.
func protoOf(ctx context.Context, c *client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	var resp *http.Response
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, configMapsURL(c.base, benchNamespace)+"?limit=1", nil)
		if err != nil {
			return "", err
		}
		req.Header = hdrJSON
		if resp, err = c.tr.RoundTrip(req); err != nil {
			return "", err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// A RoleBinding just made reaches the authorizer's index
		// through the watch, a moment later.
		if resp.StatusCode != http.StatusForbidden || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list configmaps in %s: HTTP %d", benchNamespace, resp.StatusCode)
	}
	p := resp.Proto
	if resp.TLS != nil {
		p += " " + tls.VersionName(resp.TLS.Version)
	}
	return p, nil
}

// tlsVariants returns the plain, TLS HTTP/1.1 and client-go (HTTP/2)
// clients, each checked with one GET.
func (b *bench) tlsVariants(ctx context.Context, conns int) ([]tlsVariant, func(), error) {
	t, err := b.tlsTarget()
	if err != nil {
		return nil, nil, err
	}
	cg, err := t.clientGo()
	if err != nil {
		return nil, nil, err
	}
	vs := []tlsVariant{{"plain-h1", b.c}, {"tls-h1", t.h1Client(conns)}, {"tls-h2", cg}}
	if err := b.c.ensureNamespace(ctx, benchNamespace); err != nil {
		return nil, nil, err
	}
	for _, v := range vs {
		p, err := protoOf(ctx, v.c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", v.name, err)
		}
		b.logf("%s: %s %s", v.name, v.c.base, p)
	}
	return vs, func() { vs[1].c.close(); vs[2].c.close() }, nil
}

// runTLS measures creates at --tls-create-clients and gets at
// --get-clients through each variant, --tls-rounds times in alternating
// order, and reports each run and the TLS/plain ratios of the summed
// rates.
func runTLS(ctx context.Context, b *bench) ([]Result, error) {
	createClients, getClients := b.cfg.tlsCreateClients, b.cfg.getClients
	vs, closeAll, err := b.tlsVariants(ctx, max(createClients, getClients))
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if err := b.c.ensureNamespace(ctx, benchNamespace); err != nil {
		return nil, err
	}
	n := b.cfg.getObjects
	getPrefix := "tget-" + b.runID + "-"
	if _, err := b.seedConfigMaps(ctx, benchNamespace, getPrefix, n, 32); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	tmpl := newConfigMapBody(benchNamespace, b.cfg.payloadBytes)

	type sum struct{ ops, secs, srvCPU float64 }
	sums := map[string]*sum{}
	add := func(key string, r Result) {
		s := sums[key]
		if s == nil {
			s = &sum{}
			sums[key] = s
		}
		s.ops += float64(r.Ops)
		s.secs += r.Seconds
		s.srvCPU += r.ServerCPU * r.Seconds
	}
	var out []Result
	for round := range b.cfg.tlsRounds {
		order := append([]tlsVariant(nil), vs...)
		if round%2 == 1 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, v := range order {
			c := v.c
			url := configMapsURL(c.base, benchNamespace)
			r, err := b.runLoop(ctx, loopSpec{
				name: fmt.Sprintf("create-%d %s #%d", createClients, v.name, round+1), clients: createClients,
				duration: b.cfg.duration, maxOps: b.cfg.maxOps,
				setup: func(_ context.Context, w *worker) error {
					w.name = fmt.Sprintf("t%s-%s-%d-%d-", v.name, b.runID, round, w.id)
					return nil
				},
				op: func(ctx context.Context, w *worker) error {
					body := w.nextBody()
					w.buf = tmpl.appendCreate(w.buf[:0], w.name, w.seq, 0)
					w.seq++
					body.set(w.buf)
					_, _, err := c.do(ctx, "POST", url, body, &w.sink)
					return err
				},
			})
			if err != nil {
				return out, err
			}
			add("create "+v.name, r)
			out = append(out, r)
			b.logResult(r)
		}
		for _, v := range order {
			c := v.c
			urls := make([]string, n)
			for i := range urls {
				urls[i] = configMapsURL(c.base, benchNamespace) + "/" + getPrefix + strconv.Itoa(i)
			}
			r, err := b.runLoop(ctx, loopSpec{
				name: fmt.Sprintf("get-%d %s #%d", getClients, v.name, round+1), clients: getClients,
				duration: b.cfg.duration, maxOps: b.cfg.maxOps,
				op: func(ctx context.Context, w *worker) error {
					_, n, err := c.do(ctx, "GET", urls[w.rng.IntN(len(urls))], nil, &w.sink)
					w.bytes += n
					return err
				},
			})
			if err != nil {
				return out, err
			}
			add("get "+v.name, r)
			out = append(out, r)
			b.logResult(r)
		}
	}
	for _, op := range []string{"create", "get"} {
		plain := sums[op+" plain-h1"]
		for _, v := range vs[1:] {
			s := sums[op+" "+v.name]
			if plain == nil || s == nil || plain.ops == 0 || plain.secs == 0 || s.secs == 0 {
				continue
			}
			clients := getClients
			if op == "create" {
				clients = createClients
			}
			r := Result{Workload: fmt.Sprintf("%s-%d %s/plain", op, clients, v.name), Unit: "%", Target: targetTLSRatio,
				Value: 100 * (s.ops / s.secs) / (plain.ops / plain.secs)}
			r.note("%.0f/s against %.0f/s over %d rounds; server CPU per op %.0f µs against %.0f µs",
				s.ops/s.secs, plain.ops/plain.secs, b.cfg.tlsRounds, 1e6*s.srvCPU/s.ops, 1e6*plain.srvCPU/plain.ops)
			out = append(out, r)
			b.logResult(r)
		}
	}
	return out, nil
}

// runTLSWatch runs the watch fan-out of each --tls-watch-sizes entry
// three times: plain HTTP/1.1 watches (one connection each, the watch
// workload's path), HTTP/1.1 watches over TLS (to tell TLS's cost from
// HTTP/2's), and watches through client-go's transport (HTTP/2 over TLS,
// streams sharing a connection). The writer is the bench's plain
// client in both, so only the watch path differs.
func runTLSWatch(ctx context.Context, b *bench) ([]Result, error) {
	t, err := b.tlsTarget()
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, size := range b.cfg.tlsWatchSizes {
		plainTr := newTransport(size.Watchers)
		plainTr.WriteBufferSize = 4 << 10
		plainTr.ReadBufferSize = 32 << 10
		tlsTr := newTransport(size.Watchers)
		tlsTr.TLSClientConfig = t.tls.Clone()
		tlsTr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		tlsTr.WriteBufferSize = 4 << 10
		tlsTr.ReadBufferSize = 32 << 10
		cg, err := t.clientGo()
		if err != nil {
			return out, err
		}
		for _, v := range []struct {
			name, base string
			tr         http.RoundTripper
			note       string
		}{
			{"plain-h1", b.base, plainTr, "watches over plain HTTP/1.1, a connection each"},
			{"tls-h1", t.base, t.withAuth(tlsTr), "watches over HTTP/1.1 with TLS, a connection each"},
			{"tls-h2", t.base, cg.tr, "watches through client-go's transport (rest.TransportFor): HTTP/2 over TLS, streams sharing connections"},
		} {
			settle(ctx, time.Second)
			res, err := b.watchFanOut(ctx, fanOutSpec{
				name:     fmt.Sprintf("watch-%dw-%d/s %s", size.Watchers, size.Rate, v.name),
				base:     v.base,
				tr:       v.tr,
				watchers: size.Watchers,
				rate:     size.Rate,
				notes:    []string{v.note, "writes over plain HTTP/1.1 in both"},
			})
			closeIdle(v.tr)
			out = append(out, res...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", v.name, err)
			}
		}
	}
	return out, nil
}

// watchSize is one --tls-watch-sizes entry: watchers at rate writes/s.
type watchSize struct {
	Watchers int `json:"watchers"`
	Rate     int `json:"writes_per_second"`
}

// parseWatchSizes parses "100x500,1000x1000".
func parseWatchSizes(s string) ([]watchSize, error) {
	var out []watchSize
	for _, f := range strings.Split(s, ",") {
		w, r, ok := strings.Cut(strings.TrimSpace(f), "x")
		nw, err1 := strconv.Atoi(w)
		nr, err2 := strconv.Atoi(r)
		if !ok || err1 != nil || err2 != nil || nw < 1 || nr < 1 {
			return nil, fmt.Errorf("bad --tls-watch-sizes entry %q, want WATCHERSxRATE", f)
		}
		out = append(out, watchSize{nw, nr})
	}
	return out, nil
}

// connResult is what the first connection of a tls-handshake run
// negotiated.
type connResult struct {
	once sync.Once
	desc string
}

// runTLSHandshake measures new connections per second at
// --handshake-clients: full TLS handshakes (no session cache, the
// kubeconfig's client certificate) alone, then each followed by a GET,
// then plain TCP connections each with a GET. Connections are closed with
// an RST (SO_LINGER 0) so that tens of thousands of them leave no
// TIME_WAIT behind to exhaust the loopback ports.
func runTLSHandshake(ctx context.Context, b *bench) ([]Result, error) {
	t, err := b.tlsTarget()
	if err != nil {
		return nil, err
	}
	tlsCfg := t.tls.Clone()
	tlsCfg.ClientSessionCache = nil // a full handshake every time
	tlsCfg.NextProtos = []string{"http/1.1"}
	tlsAddr := net.JoinHostPort(t.host, t.port)
	plainAddr := strings.TrimPrefix(b.base, "http://")
	// The TLS clients' user may read ConfigMaps in the bench namespace
	// (system:masters, or the token user of --tls-rbac-bindings).
	if err := b.c.ensureNamespace(ctx, benchNamespace); err != nil {
		return nil, err
	}
	auth := ""
	if t.rest.BearerToken != "" {
		auth = "Authorization: Bearer " + t.rest.BearerToken + "\r\n"
	}
	probe := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"tls-probe"},"data":{"k":"v"}}`
	if code, out, err := b.c.doSimple(ctx, http.MethodPost, "/api/v1/namespaces/"+benchNamespace+"/configmaps", probe); err != nil || (code != http.StatusCreated && code != http.StatusConflict) {
		return nil, fmt.Errorf("create the probe configmap: HTTP %d %v: %.300s", code, err, out)
	}
	get := "GET /api/v1/namespaces/" + benchNamespace + "/configmaps/tls-probe HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nUser-Agent: edgeapi-bench\r\n" + auth + "\r\n"

	// Go clients since 1.24 (client-go, kubectl) offer the post-quantum
	// hybrid X25519MLKEM768 first, and the server takes it; the classic
	// X25519 run shows what that costs.
	classic := tlsCfg.Clone()
	classic.CurvePreferences = []tls.CurveID{tls.X25519}
	type spec struct {
		name    string
		addr    string
		tls     *tls.Config
		request bool
		note    string
	}
	specs := []spec{
		{"tls-handshake", tlsAddr, tlsCfg, false, "TCP connect and a full TLS handshake with the client certificate (Go's default key exchanges), then close"},
		{"tls-handshake-x25519", tlsAddr, classic, false, "the same with the client offering only X25519"},
		{"tls-conn+get", tlsAddr, tlsCfg, true, "a new TLS connection (full handshake) and one GET on it, then close"},
		{"plain-conn+get", plainAddr, nil, true, "for reference: a new plain TCP connection and one GET on it, then close"},
	}
	var out []Result
	for _, s := range specs {
		if s.tls == nil && !strings.HasPrefix(b.base, "http://") {
			continue
		}
		req := []byte(fmt.Sprintf(get, s.addr))
		var negotiated connResult
		r, err := b.runLoop(ctx, loopSpec{
			name: s.name, clients: b.cfg.handshakeClients, duration: b.cfg.duration, maxOps: b.cfg.maxOps,
			op: func(ctx context.Context, w *worker) error {
				return newConn(ctx, s.addr, s.tls, s.request, req, &negotiated)
			},
		})
		if err != nil {
			return out, err
		}
		r.note("%s", s.note)
		if s.tls != nil {
			r.note("%s", negotiated.desc)
		}
		if r.ServerCPU > 0 && r.OpsPerSec > 0 {
			r.note("server CPU %.0f µs per connection; generator CPU %.0f µs per connection", 1e6*r.ServerCPU/r.OpsPerSec, r.ClientCPUPerOpUS)
		}
		out = append(out, r)
		b.logResult(r)
	}
	return out, nil
}

// newConn makes one connection to addr (TLS with cfg, plain when cfg is
// nil), sends req and reads one response when request is set, and closes
// with an RST.
func newConn(ctx context.Context, addr string, cfg *tls.Config, request bool, req []byte, negotiated *connResult) error {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	defer raw.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	conn := raw
	if cfg != nil {
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
		negotiated.once.Do(func() { negotiated.desc = describeConn(tc.ConnectionState()) })
		conn = tc
	}
	if !request {
		return nil
	}
	if _, err := conn.Write(req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &httpError{code: resp.StatusCode}
	}
	return nil
}

// describeConn names what a handshake negotiated.
func describeConn(st tls.ConnectionState) string {
	s := fmt.Sprintf("%s, %s, key exchange %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), st.CurveID)
	if st.DidResume {
		s += ", RESUMED"
	}
	if len(st.PeerCertificates) > 0 {
		if k, ok := st.PeerCertificates[0].PublicKey.(*ecdsa.PublicKey); ok {
			s += ", server key ECDSA " + k.Curve.Params().Name
		} else {
			s += ", server key " + st.PeerCertificates[0].PublicKeyAlgorithm.String()
		}
	}
	return s
}
