package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Measured as client-go connects (issue 13).
//
// With --client clientgo the core workloads (clientGoWorkloads) run twice
// in one run against one daemon: first as before, plain HTTP/1.1 JSON to
// --insecure-listen as system:masters, then as a client-go program would
// reach the daemon: client-go's own transport (rest.TransportFor: HTTPS
// with the daemon's CA, HTTP/2, a bearer-token user whose rights come from
// one of --tls-rbac-bindings RoleBindings) asking for Protobuf as client-go's
// typed clientsets do for built-in kinds: Accept
// "application/vnd.kubernetes.protobuf,application/json", create and update
// bodies in Protobuf, merge-patch and apply bodies in JSON. Each client-go
// figure is printed beside the plain one with the ratio.
//
// The requests are built by the bench itself (the bodies are k8s.io/api
// ConfigMaps marshalled with their generated Protobuf code in the
// runtime.Unknown envelope, as apimachinery's Protobuf serializer writes
// them), not by the typed clientset, so the load generator, which shares
// the machine's cores with the daemon, spends little CPU per request;
// --clientgo-clientset adds a create and a get run through the typed
// clientset for comparison of the generator's own CPU per operation.

// Values of --client.
const (
	clientPlain = "plain"
	clientGo    = "clientgo"
)

// clientGoWorkloads are the workloads --client clientgo runs a second time
// over client-go's transport.
var clientGoWorkloads = map[string]bool{
	"create": true, "get": true, "rmw": true, "list": true, "apply": true, "patch": true,
	"paged-list": true, "watch": true, "watch-idle": true,
}

// Issue 13's targets for the client-go figures (nothing asserts them).
var clientGoTargets = map[string]string{
	"create-64":          "p99 ≤30 ms",
	"get-16":             "≥40,000/s",
	"rmw-put-16":         "≥5,000/s",
	"patch-16":           "≥5,000/s",
	"apply-16":           "≥5,000/s",
	"rss-watch-idle-10k": "≤100 MB",
}

// Media types of client-go's typed clients.
const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	// acceptProtobuf is the Accept header of a typed client that prefers
	// Protobuf (rest.Request.UseProtobufAsDefault).
	acceptProtobuf = mediaProtobuf + ",application/json"
)

// protoMagic starts every Protobuf-encoded Kubernetes object.
var protoMagic = []byte("k8s\x00")

// wire is how the timed requests of a workload reach the daemon.
type wire struct {
	// name is "" for the bench's plain client, else what is appended
	// to the names of the results (" clientgo").
	name string
	c    *client
	base string
	// proto: Accept Protobuf first, create and update bodies in
	// Protobuf.
	proto bool
	// get, body, merge and apply are the request headers of reads,
	// creates and updates, merge patches and server-side applies.
	get, body, merge, apply http.Header
	// conns counts the connections its transport opened (nil when not
	// counted).
	conns *connCounter
	// grant, when set, lets the wire's user edit a namespace.
	grant func(ctx context.Context, ns string) error
}

// plainWire is the bench's own client: HTTP/1.1 JSON.
func plainWire(c *client, base string) *wire {
	return &wire{c: c, base: base, get: hdrJSON, body: hdrJSONBody, merge: hdrMergePatch, apply: hdrApplyPatch}
}

// Request headers of the client-go wire. User-Agent is as the bench's
// other clients; client-go's transport adds Authorization.
var (
	hdrProtoGet = http.Header{
		"Accept":     {acceptProtobuf},
		"User-Agent": {"edgeapi-bench"},
	}
	hdrProtoBody = http.Header{
		"Accept":       {acceptProtobuf},
		"Content-Type": {mediaProtobuf},
		"User-Agent":   {"edgeapi-bench"},
	}
	hdrProtoMergePatch = http.Header{
		"Accept":       {acceptProtobuf},
		"Content-Type": {"application/merge-patch+json"},
		"User-Agent":   {"edgeapi-bench"},
	}
	hdrProtoApplyPatch = http.Header{
		"Accept":       {acceptProtobuf},
		"Content-Type": {"application/apply-patch+yaml"},
		"User-Agent":   {"edgeapi-bench"},
	}
)

// protoWire is a wire with client-go's request encodings over c.
func protoWire(name string, c *client) *wire {
	return &wire{name: name, c: c, base: c.base, proto: true,
		get: hdrProtoGet, body: hdrProtoBody, merge: hdrProtoMergePatch, apply: hdrProtoApplyPatch}
}

// w returns the wire of the timed requests: the one set for this pass of
// --client, else the plain client.
func (b *bench) w() *wire {
	if b.wire == nil {
		b.wire = plainWire(b.c, b.base)
	}
	return b.wire
}

// ensure makes namespace ns (over the plain client, as setup) and lets
// the wire's user edit it.
func (wi *wire) ensure(ctx context.Context, b *bench, ns string) error {
	if err := b.c.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	if wi.grant != nil {
		return wi.grant(ctx, ns)
	}
	return nil
}

// read sends a GET and reads the response into sink.
func (wi *wire) read(ctx context.Context, url string, sink *bytes.Buffer) (int64, error) {
	_, n, err := wi.c.doHeader(ctx, http.MethodGet, url, wi.get, nil, sink)
	return n, err
}

// send sends a create (POST) or update (PUT) body made by the wire's
// encoder.
func (wi *wire) send(ctx context.Context, method, url string, body *reqBody, sink *bytes.Buffer) error {
	_, _, err := wi.c.doHeader(ctx, method, url, wi.body, body, sink)
	return err
}

// configMaps returns the encoder of the wire's create and update bodies.
func (wi *wire) configMaps(ns string, payloadBytes int) configMapEncoder {
	if wi.proto {
		return newProtoConfigMapBody(ns, payloadBytes)
	}
	return newConfigMapBody(ns, payloadBytes)
}

// resourceVersion returns an object's metadata.resourceVersion in either
// encoding, or nil.
func (wi *wire) resourceVersion(b []byte) []byte {
	if bytes.HasPrefix(b, protoMagic) {
		return protoResourceVersion(b)
	}
	return resourceVersionOf(b)
}

// configMapEncoder builds ConfigMap request bodies into a caller-owned
// buffer.
type configMapEncoder interface {
	// appendCreate appends a ConfigMap named prefix+seq, with sent (when
	// non-zero) in its sentAnnotation.
	appendCreate(dst []byte, prefix string, seq int64, sent int64) []byte
	// appendUpdate appends the ConfigMap name at resourceVersion rv with
	// a counter in its data.
	appendUpdate(dst []byte, name string, rv []byte, counter int64) []byte
}

// protoConfigMapBody builds ConfigMaps in Protobuf, as a typed client
// sends them: the object's generated Protobuf encoding inside the
// runtime.Unknown envelope, after the magic bytes.
type protoConfigMapBody struct {
	ns      string
	payload string
}

func newProtoConfigMapBody(ns string, payloadBytes int) *protoConfigMapBody {
	pad := make([]byte, payloadBytes)
	for i := range pad {
		pad[i] = 'a' + byte(i%26)
	}
	return &protoConfigMapBody{ns: ns, payload: string(pad)}
}

func (p *protoConfigMapBody) appendCreate(dst []byte, prefix string, seq int64, sent int64) []byte {
	cm := corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: prefix + strconv.FormatInt(seq, 10)},
		Data:       map[string]string{"payload": p.payload},
	}
	if sent != 0 {
		cm.Annotations = map[string]string{sentAnnotation: strconv.FormatInt(sent, 10)}
	}
	return appendProto(dst, &cm)
}

func (p *protoConfigMapBody) appendUpdate(dst []byte, name string, rv []byte, counter int64) []byte {
	cm := corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name, ResourceVersion: string(rv)},
		Data:       map[string]string{"payload": p.payload, "counter": strconv.FormatInt(counter, 10)},
	}
	return appendProto(dst, &cm)
}

// appendProto appends cm as apimachinery's Protobuf serializer encodes
// it: magic, then runtime.Unknown{apiVersion v1, kind ConfigMap, raw}.
func appendProto(dst []byte, cm *corev1.ConfigMap) []byte {
	raw, err := cm.Marshal()
	if err != nil {
		panic(fmt.Sprintf("marshal configmap: %v", err)) // generated code on a valid struct
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Raw: raw}
	env, err := u.Marshal()
	if err != nil {
		panic(fmt.Sprintf("marshal envelope: %v", err))
	}
	dst = append(dst, protoMagic...)
	return append(dst, env...)
}

// protoField returns the bytes of the first length-delimited field num of
// a Protobuf message, and whether it was there.
func protoField(msg []byte, num protowire.Number) ([]byte, bool) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return nil, false
			}
			return v, true
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
	}
	return nil, false
}

// protoCount counts the occurrences of field num of a message.
func protoCount(msg []byte, num protowire.Number) int {
	count := 0
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return count
		}
		msg = msg[l:]
		if n == num {
			count++
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return count
		}
		msg = msg[l:]
	}
	return count
}

// protoPath follows nested length-delimited fields.
func protoPath(msg []byte, path ...protowire.Number) ([]byte, bool) {
	for _, num := range path {
		var ok bool
		if msg, ok = protoField(msg, num); !ok {
			return nil, false
		}
	}
	return msg, true
}

// protoRaw returns the encoded object inside a Protobuf envelope
// (runtime.Unknown field 2), or false when b is not one.
func protoRaw(b []byte) ([]byte, bool) {
	if !bytes.HasPrefix(b, protoMagic) {
		return nil, false
	}
	return protoField(b[len(protoMagic):], 2)
}

// protoResourceVersion returns metadata.resourceVersion (ObjectMeta field
// 6, or ListMeta field 2 of a list) of an enveloped object or list.
func protoResourceVersion(b []byte) []byte {
	raw, ok := protoRaw(b)
	if !ok {
		return nil
	}
	meta, ok := protoField(raw, 1)
	if !ok {
		return nil
	}
	num := protowire.Number(6)
	if kind, _ := protoPath(b[len(protoMagic):], 1, 2); strings.HasSuffix(string(kind), "List") {
		num = 2
	}
	rv, ok := protoField(meta, num)
	if !ok || len(rv) == 0 {
		return nil
	}
	return rv
}

// listInfo is what the workloads check of a LIST response.
type listInfo struct {
	items    int
	cont     string // metadata.continue
	rv       string // metadata.resourceVersion
	encoding string // "JSON" or "Protobuf"
}

// decodeList decodes a LIST response in JSON or Protobuf.
func decodeList(b []byte) (listInfo, error) {
	if bytes.HasPrefix(b, protoMagic) {
		return protoListInfo(b)
	}
	var list struct {
		Metadata struct {
			Continue        string `json:"continue"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return listInfo{}, err
	}
	return listInfo{items: len(list.Items), cont: list.Metadata.Continue, rv: list.Metadata.ResourceVersion, encoding: "JSON"}, nil
}

// protoListInfo decodes the item count and the continue token (ListMeta
// field 3) of an enveloped list such as ConfigMapList (field 1 metadata,
// field 2 items).
func protoListInfo(b []byte) (listInfo, error) {
	raw, ok := protoRaw(b)
	if !ok {
		return listInfo{}, errors.New("not a Protobuf object")
	}
	li := listInfo{encoding: "Protobuf"}
	li.items = protoCount(raw, 2)
	if meta, ok := protoField(raw, 1); ok {
		c, _ := protoField(meta, 3)
		li.cont = string(c)
		rv, _ := protoField(meta, 2)
		li.rv = string(rv)
	}
	return li, nil
}

// continueOfAny is continueOf for JSON and Protobuf lists.
func continueOfAny(b []byte) string {
	if bytes.HasPrefix(b, protoMagic) {
		li, _ := protoListInfo(b)
		return li.cont
	}
	return continueOf(b)
}

// sentKeyProto is the sent annotation's key as it appears in a Protobuf
// object: a map entry {1: key, 2: value}.
var sentKeyProto = []byte(sentAnnotation)

// parseSentProto returns the UnixNano send time in a Protobuf watch
// event's object, or 0.
func parseSentProto(frame []byte) int64 {
	i := bytes.Index(frame, sentKeyProto)
	if i < 0 {
		return 0
	}
	rest := frame[i+len(sentKeyProto):]
	if len(rest) < 2 || rest[0] != 0x12 { // field 2, length-delimited
		return 0
	}
	v, l := protowire.ConsumeBytes(rest[1:])
	if l < 0 {
		return 0
	}
	var sent int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		sent = sent*10 + int64(c-'0')
	}
	return sent
}

// errorFrame is the start of a Protobuf WatchEvent of type ERROR (field 1).
var errorFrame = []byte("\x0a\x05ERROR")

// connCounter counts the connections a transport dials and closes.
type connCounter struct {
	dialed, closed atomic.Int64
}

// open returns the connections dialed and not closed.
func (c *connCounter) open() int64 { return c.dialed.Load() - c.closed.Load() }

// dial dials as client-go's default dialer would, counting.
func (c *connCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.dialed.Add(1)
	return &countedConn{Conn: conn, c: c}, nil
}

type countedConn struct {
	net.Conn
	c    *connCounter
	once atomic.Bool
}

func (cc *countedConn) Close() error {
	if cc.once.CompareAndSwap(false, true) {
		cc.c.closed.Add(1)
	}
	return cc.Conn.Close()
}

// clientGoTransport is client-go's transport for the target's rest.Config
// (HTTP/2 over TLS, the bearer token), of its own: a Dial that counts
// connections makes rest.TransportFor build a new one rather than share
// its cached transport.
func (t *tlsTarget) clientGoTransport(counter *connCounter) (http.RoundTripper, error) {
	cfg := rest.CopyConfig(t.rest)
	cfg.Dial = counter.dial
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client-go transport: %w", err)
	}
	return rt, nil
}

// clientGoWire returns the client-go wire, checked with one GET.
func (b *bench) clientGoWire(ctx context.Context) (*wire, error) {
	if b.cgWire != nil {
		return b.cgWire, nil
	}
	t, err := b.tlsTarget()
	if err != nil {
		return nil, err
	}
	counter := &connCounter{}
	rt, err := t.clientGoTransport(counter)
	if err != nil {
		return nil, err
	}
	wi := protoWire(" "+clientGo, &client{base: t.base, tr: rt})
	wi.conns = counter
	wi.grant = b.grantBenchUser
	if err := b.c.ensureNamespace(ctx, benchNamespace); err != nil {
		return nil, err
	}
	p, err := protoOf(ctx, wi.c)
	if err != nil {
		return nil, fmt.Errorf("client-go wire: %w", err)
	}
	who := "system:masters certificate"
	if t.rest.BearerToken != "" {
		who = fmt.Sprintf("token user %s bound by RBAC among %d RoleBindings", b.rbacUserName(), b.cfg.tlsRBACBindings)
	}
	b.logf("clientgo: %s %s as %s, Accept %s", t.base, p, who, acceptProtobuf)
	b.cgWire = wi
	return wi, nil
}

// runBothWires runs w over the plain client, then over client-go's
// transport, and returns both passes' results and their ratios.
func (b *bench) runBothWires(ctx context.Context, w workload) ([]Result, error) {
	b.wire = plainWire(b.c, b.base)
	plain, err := b.runWithRSSPeak(ctx, w)
	if err != nil {
		return plain, err
	}
	cg, err := b.clientGoWire(ctx)
	if err != nil {
		return plain, err
	}
	b.logf("== %s over client-go (HTTP/2, TLS, RBAC token user, Protobuf)", w.name)
	b.wire = cg
	dialed := cg.conns.dialed.Load()
	over := len(b.report.RSSOver)
	res, err := b.runWithRSSPeak(ctx, w)
	b.wire = plainWire(b.c, b.base)
	for i := over; i < len(b.report.RSSOver); i++ {
		b.report.RSSOver[i] = strings.Replace(b.report.RSSOver[i], w.name+":", w.name+cg.name+":", 1)
	}
	for i := range res {
		if t, ok := clientGoTargets[res[i].Workload]; ok {
			res[i].Target = t
		}
		if !strings.HasSuffix(res[i].Workload, " clientset") {
			res[i].Workload += cg.name
		}
		if !strings.HasPrefix(res[i].Workload, "rss-peak-") && w.name != "watch-idle" {
			res[i].note("client-go transport: %d connection(s) dialed during the run, %d open", cg.conns.dialed.Load()-dialed, cg.conns.open())
		}
	}
	out := append(plain, res...)
	out = append(out, wireRatios(plain, res, cg.name)...)
	for _, r := range out[len(plain)+len(res):] {
		b.logResult(r)
	}
	return out, err
}

// wireRatios pairs each result of the client-go pass with the plain one
// of the same name and reports client-go/plain: rates for timed
// workloads, values for single measurements.
func wireRatios(plain, cg []Result, suffix string) []Result {
	byName := map[string]Result{}
	for _, r := range plain {
		byName[r.Workload] = r
	}
	var out []Result
	for _, c := range cg {
		p, ok := byName[strings.TrimSuffix(c.Workload, suffix)]
		if !ok {
			continue
		}
		r := Result{Workload: c.Workload + "/plain", Unit: "%", Target: c.Target}
		switch {
		case c.Latency != nil && p.OpsPerSec > 0 && c.OpsPerSec > 0:
			r.Value = 100 * c.OpsPerSec / p.OpsPerSec
			r.note("%s/s against %s/s; p99 %s against %s", fmtRate(c.OpsPerSec), fmtRate(p.OpsPerSec), fmtMS(c.Latency.P99MS), fmtMS(p.Latency.P99MS))
			r.note("daemon CPU per op %s against %s; load generator CPU per op %s against %s",
				cpuPerOp(c), cpuPerOp(p), fmtUS(c.ClientCPUPerOpUS), fmtUS(p.ClientCPUPerOpUS))
		case c.Unit != "" && c.Unit != "%" && p.Value > 0:
			r.Value = 100 * c.Value / p.Value
			r.note("%.1f %s against %.1f %s", c.Value, c.Unit, p.Value, p.Unit)
		default:
			continue
		}
		out = append(out, r)
	}
	return out
}

// cpuPerOp renders a result's daemon CPU per operation.
func cpuPerOp(r Result) string {
	if r.ServerCPU <= 0 || r.OpsPerSec <= 0 {
		return "?"
	}
	return fmtUS(1e6 * r.ServerCPU / r.OpsPerSec)
}

// parseClient checks a --client value.
func parseClient(s string) (string, error) {
	switch s {
	case clientPlain, clientGo:
		return s, nil
	}
	return "", fmt.Errorf("bad --client %q: want %s or %s", s, clientPlain, clientGo)
}

// maxWatchFrame bounds one Protobuf watch frame the watchers accept.
const maxWatchFrame = 16 << 20

// runProto is run for a Protobuf watch stream: each event is a 4-byte
// big-endian length and a WatchEvent whose object carries the
// sentAnnotation.
func (w *watcher) runProto(body io.Reader) {
	size := w.bufSize
	if size == 0 {
		size = watchReadBuffer
	}
	br := bufio.NewReaderSize(body, size)
	var hdr [4]byte
	var frame []byte
	for {
		_, err := io.ReadFull(br, hdr[:])
		if err == nil {
			n := binary.BigEndian.Uint32(hdr[:])
			if n > maxWatchFrame {
				err = fmt.Errorf("watch frame of %d bytes", n)
			} else {
				if cap(frame) < int(n) {
					frame = make([]byte, n)
				}
				frame = frame[:n]
				_, err = io.ReadFull(br, frame)
			}
		}
		if err != nil {
			w.closed.Store(true)
			if !errors.Is(err, io.EOF) && w.errorMsg == "" {
				w.errorMsg = err.Error()
			}
			return
		}
		switch sent := parseSentProto(frame); {
		case sent != 0:
			w.hist.record(time.Duration(time.Now().UnixNano() - sent))
			w.events.Add(1)
		case bytes.HasPrefix(frame, errorFrame):
			if w.errors.Add(1) == 1 {
				w.errorMsg = fmt.Sprintf("ERROR event %q", frame[:min(len(frame), 300)])
			}
		default:
			w.other.Add(1)
		}
	}
}

// daemonHTTP2MaxStreams is the daemon's HTTP/2 MaxConcurrentStreams
// (daemon.DefaultHTTP2MaxStreams), for the report.
const daemonHTTP2MaxStreams = 1000

// roundRobin spreads requests over several transports, as several
// client-go programs (each with its own rest.Config transport) would.
type roundRobin struct {
	trs  []http.RoundTripper
	next atomic.Uint64
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	i := rr.next.Add(1) - 1
	return rr.trs[i%uint64(len(rr.trs))].RoundTrip(req)
}

// CloseIdleConnections closes each transport's idle connections.
func (rr *roundRobin) CloseIdleConnections() {
	for _, t := range rr.trs {
		closeIdle(t)
	}
}

// clientGoTransports returns n client-go transports of their own behind
// one round-robin RoundTripper, and the counter of their connections.
func (b *bench) clientGoTransports(n int) (*roundRobin, *connCounter, error) {
	t, err := b.tlsTarget()
	if err != nil {
		return nil, nil, err
	}
	counter := &connCounter{}
	rr := &roundRobin{}
	for range n {
		rt, err := t.clientGoTransport(counter)
		if err != nil {
			return nil, nil, err
		}
		rr.trs = append(rr.trs, rt)
	}
	return rr, counter, nil
}

// clientsetRuns measures, in the client-go pass of create or get, the
// same operation through client-go's typed clientset
// (kubernetes.Clientset: it builds each request, encodes the ConfigMap,
// and decodes every response into a typed object), for the load
// generator's own CPU per operation against the bench's requests on the
// same transport (--clientgo-clientset).
func (b *bench) clientsetRun(ctx context.Context, op string, clients int, names []string) (Result, error) {
	t, err := b.tlsTarget()
	if err != nil {
		return Result{}, err
	}
	cfg := rest.CopyConfig(t.rest)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Result{}, fmt.Errorf("clientset: %w", err)
	}
	cms := cs.CoreV1().ConfigMaps(benchNamespace)
	pad := strings.Repeat("x", b.cfg.payloadBytes)
	spec := loopSpec{
		name: fmt.Sprintf("%s-%d clientset", op, clients), clients: clients, duration: b.cfg.duration, maxOps: b.cfg.maxOps,
		setup: func(_ context.Context, w *worker) error {
			w.name = fmt.Sprintf("cs%d-%s-%d-", clients, b.runID, w.id)
			return nil
		},
	}
	switch op {
	case "create":
		spec.op = func(ctx context.Context, w *worker) error {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: w.name + strconv.FormatInt(w.seq, 10)},
				Data:       map[string]string{"payload": pad},
			}
			w.seq++
			_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
	case "get":
		spec.op = func(ctx context.Context, w *worker) error {
			_, err := cms.Get(ctx, names[w.rng.IntN(len(names))], metav1.GetOptions{})
			return err
		}
	default:
		return Result{}, fmt.Errorf("clientset: no %s run", op)
	}
	r, err := b.runLoop(ctx, spec)
	if err != nil {
		return r, err
	}
	r.note("through client-go's typed clientset (CoreV1().ConfigMaps): generator CPU %.0f µs per op, the daemon's %s", r.ClientCPUPerOpUS, cpuPerOp(r))
	b.logResult(r)
	return r, nil
}

// fmtUS renders microseconds, as milliseconds from 10 ms.
func fmtUS(us float64) string {
	if us >= 10_000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
