package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	// hostileDaemonRequestTimeout is the daemon's --request-timeout in
	// TestHostileClients (1m by default): a body that has not arrived by
	// then is answered with 504 Timeout, or its connection closed.
	hostileDaemonRequestTimeout = 3 * time.Second
	// hostileHangGuard bounds every request; past it the daemon is taken to
	// have hung. It is a hang guard, not a performance assertion.
	hostileHangGuard = 30 * time.Second
	// hostileStreamRead is how long a watch that answered 200 is read
	// before the client closes it.
	hostileStreamRead = 500 * time.Millisecond
	// hostileRSSCeiling bounds the daemon's peak RSS (VmHWM) over the run.
	hostileRSSCeiling = 300 << 20
	// hostileWorkers send requests concurrently; hostileHugeInFlight of
	// them at most send a body past 256 KiB at once, so that the RSS
	// ceiling measures the daemon's handling of one, not the concurrency.
	hostileWorkers      = 8
	hostileHugeInFlight = 1
	// hostileSlowConns are the connections that trickle bodies meanwhile.
	hostileSlowConns = 4
	// hostileMaxFailures stops the run early: past it, the rest would tell
	// nothing new.
	hostileMaxFailures = 50
	// defaultHostileRequests is the CI count; scripts/hostile sends
	// 100,000.
	defaultHostileRequests = 6000
)

// hostileSettings reads EDGEAPI_HOSTILE_SEED, EDGEAPI_HOSTILE_REQUESTS
// and EDGEAPI_HOSTILE_ONLY (comma-separated indices or ranges such as
// 7-9 to send alone, to rerun a failure).
func hostileSettings(t *testing.T) (seed uint64, n int, only []int) {
	seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("EDGEAPI_HOSTILE_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("EDGEAPI_HOSTILE_SEED=%q: %v", v, err)
		}
	}
	n = defaultHostileRequests
	if v := os.Getenv("EDGEAPI_HOSTILE_REQUESTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("EDGEAPI_HOSTILE_REQUESTS=%q: want a positive number", v)
		}
	}
	if v := os.Getenv("EDGEAPI_HOSTILE_ONLY"); v != "" {
		for _, f := range strings.Split(v, ",") {
			from, to, isRange := strings.Cut(strings.TrimSpace(f), "-")
			i, err := strconv.Atoi(from)
			j := i
			if isRange && err == nil {
				j, err = strconv.Atoi(to)
			}
			if err != nil || i < 0 || j < i {
				t.Fatalf("EDGEAPI_HOSTILE_ONLY=%q: want request indices or ranges (3,7-9)", v)
			}
			for ; i <= j; i++ {
				only = append(only, i)
			}
		}
	}
	return seed, n, only
}

// TestHostileClients sends many thousands of malformed requests, generated
// from a logged seed, to a daemon that holds known data, and checks that
//   - no answer is a 5xx (but the daemon's documented 504s: a body that
//     did not arrive within --request-timeout, a request whose own
//     ?timeout=1ns passed, and a resourceVersion beyond the store's,
//     answered as such or at --request-timeout, whichever comes first);
//   - no request goes unanswered for hostileHangGuard;
//   - every 4xx below /api and /apis is a metav1.Status (JSON, YAML or
//     Protobuf; JSON when the request accepts JSON or names nothing), with
//     its code equal to the HTTP status (or the plain "404 page not found"
//     of a path outside the served groups, or net/http's own plain answer
//     to broken HTTP);
//   - no handler panics (net/http would recover it and close the
//     connection);
//   - afterwards every known object, and every list of a known namespace,
//     is byte for byte what it was, the daemon answers /readyz, and its
//     peak RSS stayed under hostileRSSCeiling.
//
// The requests: garbage and truncated JSON, YAML and Protobuf bodies,
// Protobuf envelopes naming other kinds, deep nesting, bodies of
// megabytes, every metadata field with the wrong type, managedFields
// garbage, YAML bombs, garbage in the four patch types, odd paths and
// encodings, wrong headers, bad query parameters, broken HTTP framing and,
// on their own connections meanwhile, bodies and headers trickled slower
// than the daemon's request timeout. Writes to anything outside a scratch
// namespace carry a guard that must have them refused or not stored
// (malformed JSON, a stale resourceVersion, a failing JSON-patch test, a
// uid precondition, or dryRun=All), so the known data may not change.
//
// EDGEAPI_HOSTILE_SEED reruns a seed, EDGEAPI_HOSTILE_REQUESTS sets the
// count (scripts/hostile), EDGEAPI_HOSTILE_ONLY sends only some indices.
// To find what raises the peak RSS, EDGEAPI_HOSTILE_WORKERS=1 with
// EDGEAPI_HOSTILE_TRACE_RSS=1 logs each request that raised it by 8 MiB,
// and EDGEAPI_HOSTILE_PPROF=127.0.0.1:PORT serves the daemon's pprof.
func TestHostileClients(t *testing.T) {
	t.Parallel()
	seed, n, only := hostileSettings(t)
	t.Logf("hostile clients: %d requests, seed %d (EDGEAPI_HOSTILE_SEED=%d EDGEAPI_HOSTILE_REQUESTS=%d reruns it)", n, seed, seed, n)

	// Secrets and ConfigMaps are encrypted at rest (secretbox), so that
	// every hostile write and read of them also goes through encryption.
	encCfg := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(encCfg, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, configmaps]\n  providers:\n"+
		"  - secretbox:\n      keys:\n      - name: hostile\n        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n  - identity: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Large answers are gzipped for the requests that ask (as for a
	// client on another machine), so that compression is under test too.
	args := []string{"--request-timeout", hostileDaemonRequestTimeout.String(), "--encryption-provider-config", encCfg, "--response-compression", "all"}
	if v := os.Getenv("EDGEAPI_HOSTILE_PPROF"); v != "" {
		args = append(args, "--debug-pprof", v)
	}
	d := StartDaemon(t, DaemonOptions{Args: args})
	fx := hostileSetup(t, d)
	before := hostileSnapshot(t, d, fx)
	t.Logf("known data: %d objects, %d lists", len(before.objects), len(before.lists))

	run := newHostileRun(t, d, seed)
	indices := only
	if indices == nil {
		indices = make([]int, n)
		for i := range indices {
			indices[i] = i
		}
	}
	start := time.Now()
	run.slowLoop(fx, len(only) == 0)
	run.sendAll(fx, indices)
	run.stopSlow()
	elapsed := time.Since(start)

	select {
	case <-d.exited:
		t.Fatalf("the daemon exited during the run: %v", d.exitErr)
	default:
	}
	run.report(elapsed)
	if n := d.output.Panics(); n > 0 {
		t.Errorf("the daemon's handlers panicked %d times (net/http recovered and closed the connections); see its output. Requests answered by a closed connection:\n%s",
			n, strings.Join(run.closed, "\n"))
	}
	if res := rawGetNoFatal(d, "/readyz"); res.Status != http.StatusOK {
		t.Errorf("GET /readyz after the run: %d %s", res.Status, res.Body)
	}
	after := hostileSnapshot(t, d, fx)
	hostileCompare(t, before, after)
	checkPeakRSSUnder(t, d, hostileRSSCeiling)
	if t.Failed() {
		t.Logf("seed %d: rerun with EDGEAPI_HOSTILE_SEED=%d EDGEAPI_HOSTILE_REQUESTS=%d", seed, seed, n)
	}
}

// --- the known data --------------------------------------------------------

// hostileSetup creates the scratch namespace and the known namespaces,
// each with ConfigMaps, Secrets, Leases and Events, some with finalizers,
// labels, owner references and apply-managed fields.
func hostileSetup(t *testing.T, d *Daemon) *hostileFixture {
	t.Helper()
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, hostileScratch)
	fx := &hostileFixture{uids: map[string]string{}}
	fx.validProto = hostileProtoEncoder()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	if res := doRaw(t, d, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", "", []byte(hostileCRD)); res.Status != http.StatusCreated {
		t.Fatalf("create the hostile CRD: %d %s", res.Status, res.Body)
	}
	waitEstablished(t, d, "60s", "gizmos.hostile.example.com")
	for i := 0; i < hostileNSCount; i++ {
		ns := hostileNamespace(i)
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels: map[string]string{"hostile": "known"}, Annotations: map[string]string{"example.com/note": "keep"}}}, metav1.CreateOptions{})
		must(ns, err)
		fx.namespaces = append(fx.namespaces, ns)
		uid := func(resource, name, u string) { fx.uids[ns+"/"+resource+"/"+name] = u }

		data0 := map[string]string{"k": "v", "multi": "a\nb"}
		if i == 0 {
			// Over 128 KiB, so that its GETs and lists that ask for
			// gzip get it gzipped.
			data0["big"] = strings.Repeat("hostile ", 20000)
		}
		cm0, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-0",
			Labels: map[string]string{"app": "hostile", "n": "0"}}, Data: data0}, metav1.CreateOptions{})
		must("cm-0", err)
		uid("configmaps", "cm-0", string(cm0.UID))
		owner := func(name string, u string, controller bool) []metav1.OwnerReference {
			ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(u)}
			if controller {
				ref.Controller, ref.BlockOwnerDeletion = &controller, &controller
			}
			return []metav1.OwnerReference{ref}
		}
		cm1, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-1",
			Finalizers: []string{"example.com/keep", "example.com/also"}}, BinaryData: map[string][]byte{"bin": {0, 1, 2, 255}}}, metav1.CreateOptions{})
		must("cm-1", err)
		uid("configmaps", "cm-1", string(cm1.UID))
		cm2, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-2",
			Labels: map[string]string{"app": "hostile"}, OwnerReferences: owner("cm-0", string(cm0.UID), true)}, Data: map[string]string{"owned": "yes"}}, metav1.CreateOptions{})
		must("cm-2", err)
		uid("configmaps", "cm-2", string(cm2.UID))
		apply := doRaw(t, d, "PATCH", "/api/v1/namespaces/"+ns+"/configmaps/cm-3?fieldManager=hostile-fixture", "application/apply-patch+yaml", "",
			[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-3\n  labels:\n    applied: \"true\"\n  annotations:\n    example.com/a: b\nimmutable: true\ndata:\n  applied: \"1\"\n"))
		if apply.Status != http.StatusCreated {
			t.Fatalf("apply cm-3: %d %s", apply.Status, apply.Body)
		}
		var cm3 corev1.ConfigMap
		if err := json.Unmarshal(apply.Body, &cm3); err != nil {
			t.Fatal(err)
		}
		uid("configmaps", "cm-3", string(cm3.UID))

		s0, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-0"},
			Data: map[string][]byte{"password": []byte("hunter2")}, Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{})
		must("secret-0", err)
		uid("secrets", "secret-0", string(s0.UID))
		s1, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-1", Finalizers: []string{"example.com/keep"},
			Labels: map[string]string{"app": "hostile"}}, StringData: map[string]string{"token": "t"}}, metav1.CreateOptions{})
		must("secret-1", err)
		uid("secrets", "secret-1", string(s1.UID))
		s2, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret-2", OwnerReferences: owner("cm-1", string(cm1.UID), false)},
			Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}}, metav1.CreateOptions{})
		must("secret-2", err)
		uid("secrets", "secret-2", string(s2.UID))

		holder, dur := "holder", int32(15)
		now := metav1.NewMicroTime(time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC))
		l0, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-0"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &now}}, metav1.CreateOptions{})
		must("lease-0", err)
		uid("leases", "lease-0", string(l0.UID))
		l1, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-1",
			Labels: map[string]string{"app": "hostile"}, Finalizers: []string{"example.com/keep"}, OwnerReferences: owner("cm-0", string(cm0.UID), false)}}, metav1.CreateOptions{})
		must("lease-1", err)
		uid("leases", "lease-1", string(l1.UID))

		e0, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "event-0"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm-0", UID: cm0.UID},
			Reason:         "Known", Message: "known event", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "hostile"}, Count: 3}, metav1.CreateOptions{})
		must("event-0", err)
		uid("events", "event-0", string(e0.UID))
		e1, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "event-1", Labels: map[string]string{"app": "hostile"}},
			EventTime: now, ReportingController: "example.com/hostile", ReportingInstance: "i-1", Action: "Check", Reason: "Known",
			Regarding: corev1.ObjectReference{Kind: "Lease", Namespace: ns, Name: "lease-0", UID: l0.UID}, Note: "known", Type: corev1.EventTypeWarning}, metav1.CreateOptions{})
		must("event-1", err)
		uid("events", "event-1", string(e1.UID))

		gizmos := "/apis/hostile.example.com/v1/namespaces/" + ns + "/gizmos"
		for _, body := range []string{
			`{"apiVersion":"hostile.example.com/v1","kind":"Gizmo","metadata":{"name":"gizmo-0","labels":{"app":"hostile"}},"spec":{"size":3,"tags":["x","y"],"ports":[{"name":"a","port":1}]}}`,
			`{"apiVersion":"hostile.example.com/v1","kind":"Gizmo","metadata":{"name":"gizmo-1","finalizers":["example.com/keep"]},"spec":{"color":"blue"}}`,
		} {
			res := doRaw(t, d, "POST", gizmos, "application/json", "", []byte(body))
			var m metav1.PartialObjectMetadata
			if res.Status != http.StatusCreated || json.Unmarshal(res.Body, &m) != nil {
				t.Fatalf("create a gizmo: %d %s", res.Status, res.Body)
			}
			uid("gizmos", m.Name, string(m.UID))
		}
	}
	return fx
}

// hostileProtoEncoder returns a function that encodes an object given as a
// JSON-like map in Protobuf, as client-go would send it.
func hostileProtoEncoder() func(k *hostileKind, obj map[string]any) []byte {
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	return func(k *hostileKind, obj map[string]any) []byte {
		js, err := json.Marshal(obj)
		if err != nil {
			return nil
		}
		var typed runtime.Object
		switch {
		case k.resource == "gizmos":
			return nil // custom resources have no Protobuf form
		case k.resource == "configmaps":
			typed = &corev1.ConfigMap{}
		case k.resource == "secrets":
			typed = &corev1.Secret{}
		case k.resource == "leases":
			typed = &coordinationv1.Lease{}
		case k.apiVersion == "v1":
			typed = &corev1.Event{}
		default:
			typed = &eventsv1.Event{}
		}
		if err := json.Unmarshal(js, typed); err != nil {
			return nil
		}
		var buf bytes.Buffer
		if err := ser.Encode(typed, &buf); err != nil {
			return nil
		}
		return buf.Bytes()
	}
}

// hostileState is the known data as served: each object's JSON, and each
// list's items, byte for byte.
type hostileState struct {
	objects map[string][]byte
	lists   map[string][]byte
	listRVs map[string]string
}

func hostileSnapshot(t *testing.T, d *Daemon, fx *hostileFixture) hostileState {
	t.Helper()
	st := hostileState{objects: map[string][]byte{}, lists: map[string][]byte{}, listRVs: map[string]string{}}
	get := func(path string) []byte {
		res := rawGetNoFatal(d, path)
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.Status, res.Body)
		}
		return res.Body
	}
	list := func(path string) {
		var l struct {
			Metadata metav1.ListMeta   `json:"metadata"`
			Items    []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(get(path), &l); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		st.lists[path] = bytes.Join(slices.Collect(func(yield func([]byte) bool) {
			for _, it := range l.Items {
				if !yield(it) {
					return
				}
			}
		}), []byte("\n"))
		st.listRVs[path] = l.Metadata.ResourceVersion
	}
	list("/api/v1/namespaces")
	st.objects[hostileCRDPath] = get(hostileCRDPath)
	for _, ns := range fx.namespaces {
		st.objects["/api/v1/namespaces/"+ns] = get("/api/v1/namespaces/" + ns)
		for _, k := range hostileKinds {
			coll := k.prefix + "/namespaces/" + ns + "/" + k.resource
			list(coll)
			for _, name := range k.names {
				st.objects[coll+"/"+name] = get(coll + "/" + name)
			}
		}
	}
	return st
}

func hostileCompare(t *testing.T, before, after hostileState) {
	t.Helper()
	changed := 0
	for _, path := range slices.Sorted(mapKeys(before.objects)) {
		if !bytes.Equal(before.objects[path], after.objects[path]) {
			changed++
			t.Errorf("GET %s changed:\nbefore: %s\nafter:  %s", path, before.objects[path], after.objects[path])
		}
	}
	for _, path := range slices.Sorted(mapKeys(before.lists)) {
		if !bytes.Equal(before.lists[path], after.lists[path]) {
			changed++
			t.Errorf("the items of GET %s (resourceVersion %s, now %s) changed:\nbefore: %.2000s\nafter:  %.2000s",
				path, before.listRVs[path], after.listRVs[path], before.lists[path], after.lists[path])
		}
	}
	t.Logf("known data after the run: %d objects and %d lists compared, %d changed", len(before.objects), len(before.lists), changed)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func sortStrings(s []string) { slices.Sort(s) }

// --- sending ---------------------------------------------------------------

// hostileRun sends the requests and keeps the figures.
type hostileRun struct {
	t      *testing.T
	d      *Daemon
	seed   uint64
	client *http.Client
	huge   chan struct{} // semaphore of hostileHugeInFlight

	mu         sync.Mutex // guards the fields below
	byCategory map[string]int
	byStatus   map[string]int
	byCatCode  map[string]map[string]int
	failures   int
	sent       int
	gzipped    int      // answers that came gzipped
	closed     []string // the first requests answered by a closed connection

	stopped  atomic.Bool // too many failures
	slowStop chan struct{}
	slowWG   sync.WaitGroup
}

func newHostileRun(t *testing.T, d *Daemon, seed uint64) *hostileRun {
	tr := &http.Transport{
		MaxIdleConnsPerHost: hostileWorkers * 2,
		DisableCompression:  true, // send Accept-Encoding as generated
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &hostileRun{
		t: t, d: d, seed: seed,
		client:     &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		huge:       make(chan struct{}, hostileHugeInFlight),
		byCategory: map[string]int{},
		byStatus:   map[string]int{},
		byCatCode:  map[string]map[string]int{},
		slowStop:   make(chan struct{}),
	}
}

// hostileResult is what came back.
type hostileResult struct {
	status int
	header http.Header
	body   []byte
	// outcome is "hung", "refused" (the daemon is gone), "closed" (the
	// connection closed without an answer), or "" for an answer.
	outcome string
	err     error
	// badGzip is why a gzipped body did not decompress.
	badGzip error
}

func (run *hostileRun) sendAll(fx *hostileFixture, indices []int) {
	work := make(chan int)
	var wg sync.WaitGroup
	workers := hostileWorkers
	if v, err := strconv.Atoi(os.Getenv("EDGEAPI_HOSTILE_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	traceRSS := os.Getenv("EDGEAPI_HOSTILE_TRACE_RSS") != ""
	var lastRSS atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := hostileRequest(fx, run.seed, i)
				res := run.send(&r)
				if traceRSS {
					if rss := peakRSS(run.t, run.d); rss > lastRSS.Load()+8<<20 {
						lastRSS.Store(rss)
						run.t.Logf("peak RSS %.1f MiB after %s", float64(rss)/(1<<20), r.String()[:min(300, len(r.String()))])
					}
				}
				run.record(&r, res)
			}
		}()
	}
	for _, i := range indices {
		if run.stopped.Load() {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
}

func (run *hostileRun) send(r *hostileReq) hostileResult {
	if r.huge {
		run.huge <- struct{}{}
		defer func() { <-run.huge }()
	}
	if r.raw || r.rawBytes != nil {
		return run.sendRaw(r, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var hung atomic.Bool
	guard := time.AfterFunc(hostileHangGuard, func() { hung.Store(true); cancel() })
	defer guard.Stop()

	var body io.Reader
	if len(r.body) > 0 || r.mutating() {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, run.d.URL+"/", body)
	if err != nil {
		return hostileResult{outcome: "not-sent", err: err}
	}
	pathPart, query, hasQuery := strings.Cut(r.target, "?")
	req.URL.Opaque = pathPart
	req.URL.RawQuery = query
	req.URL.ForceQuery = hasQuery && query == ""
	for _, h := range r.header {
		req.Header.Add(h[0], h[1])
	}
	if r.chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(r.body))
		req.TransferEncoding = []string{"chunked"}
	}
	resp, err := run.client.Do(req)
	if err != nil {
		return hostileErr(err, hung.Load())
	}
	defer resp.Body.Close()
	res := hostileResult{status: resp.StatusCode, header: resp.Header}
	if r.stream && resp.StatusCode == http.StatusOK {
		// A watch: read a little, then hang up.
		guard.Stop()
		time.AfterFunc(hostileStreamRead, cancel)
		res.body, _ = io.ReadAll(resp.Body)
		return res
	}
	res.body, err = io.ReadAll(resp.Body)
	if err != nil {
		return hostileErr(err, hung.Load())
	}
	res.gunzip(req.Method)
	return res
}

// gunzip decompresses a gzipped body in place. A compressed answer must
// decompress (badGzip says why it did not); what it holds is checked as
// any other.
// A HEAD answer has no body to decompress.
func (res *hostileResult) gunzip(method string) {
	if res.header.Get("Content-Encoding") != "gzip" || method == http.MethodHead {
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(res.body))
	if err == nil {
		res.body, err = io.ReadAll(zr)
	}
	res.badGzip = err
}

// hostileNeedsRaw reports whether net/http's client would refuse or
// rewrite the request: control bytes in a header value.
func hostileNeedsRaw(r *hostileReq) bool {
	for _, h := range r.header {
		for i := 0; i < len(h[1]); i++ {
			if c := h[1][i]; (c < ' ' && c != '\t') || c == 0x7f {
				return true
			}
		}
	}
	return false
}

func hostileErr(err error, hung bool) hostileResult {
	switch {
	case hung:
		return hostileResult{outcome: "hung", err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return hostileResult{outcome: "refused", err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return hostileResult{outcome: "hung", err: err}
	}
	return hostileResult{outcome: "closed", err: err}
}

// rawRequest returns the bytes of r as written by hand.
func (run *hostileRun) rawRequest(r *hostileReq) []byte {
	if r.rawBytes != nil {
		return r.rawBytes
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.method, r.target, run.d.Addr)
	for _, h := range r.header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	n := len(r.body)
	switch r.framing {
	case "", "slow-chunked":
		if n > 0 || r.mutating() {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", n)
		}
		b.WriteString("Connection: close\r\n\r\n")
		b.Write(r.body)
	case hostileFrameShort:
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", n+100)
		b.Write(r.body)
	case hostileFrameChunkJunk:
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(&b, "%s\r\n", []string{"zz", "-1", "ffffffffffffffffff", "5;ext=\x00", fmt.Sprintf("%x", n+10)}[n%5])
		b.Write(r.body)
		b.WriteString("\r\n0\r\n\r\n")
	case hostileFrameDupCL:
		fmt.Fprintf(&b, "Content-Length: %d\r\nContent-Length: %d\r\n\r\n", n, n+1)
		b.Write(r.body)
	case hostileFrameCLChunked:
		fmt.Fprintf(&b, "Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", n, n)
		b.Write(r.body)
		b.WriteString("\r\n0\r\n\r\n")
	case hostileFrameNegCL:
		b.WriteString("Content-Length: -5\r\n\r\n")
		b.Write(r.body)
	}
	return b.Bytes()
}

// sendRaw writes the request on its own connection (trickled by trickle
// when set) and reads one response.
func (run *hostileRun) sendRaw(r *hostileReq, trickle func(net.Conn, []byte)) hostileResult {
	conn, err := net.DialTimeout("tcp", run.d.Addr, hostileHangGuard)
	if err != nil {
		return hostileErr(err, false)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hostileHangGuard))
	msg := run.rawRequest(r)
	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		if trickle != nil {
			trickle(conn, msg)
		} else {
			_, _ = conn.Write(msg) // the daemon may answer before reading it all
		}
	}()
	defer func() {
		_ = conn.Close()
		<-writeDone
	}()
	method := r.method
	if method == "" {
		method = "GET"
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		return hostileErr(err, false)
	}
	defer resp.Body.Close()
	res := hostileResult{status: resp.StatusCode, header: resp.Header}
	if r.stream && resp.StatusCode == http.StatusOK {
		_ = conn.SetReadDeadline(time.Now().Add(hostileStreamRead))
		res.body, _ = io.ReadAll(resp.Body)
		return res
	}
	if res.body, err = io.ReadAll(resp.Body); err != nil {
		return hostileErr(err, false)
	}
	res.gunzip(method)
	return res
}

// --- checking --------------------------------------------------------------

// check returns what is wrong with the answer to r ("" for nothing) and
// the label it is counted under.
func (run *hostileRun) check(r *hostileReq, res hostileResult) (problem, label string) {
	switch res.outcome {
	case "hung":
		return fmt.Sprintf("daemon hung: no answer within %v (%v)", hostileHangGuard, res.err), "hung"
	case "refused":
		return fmt.Sprintf("daemon down: %v", res.err), "refused"
	case "not-sent":
		return fmt.Sprintf("the test could not build the request: %v", res.err), "not-sent"
	case "closed":
		// Closing a connection is an answer to broken HTTP, to a body
		// slower than --request-timeout, and to a body the daemon
		// refused before reading it all (net/http then closes once it
		// has discarded a little); anything else must get a response.
		if r.raw || r.slow || r.huge || len(r.body) > 256<<10 {
			return "", "closed"
		}
		return fmt.Sprintf("connection closed without an answer: %v", res.err), "closed"
	}
	if res.badGzip != nil {
		return fmt.Sprintf("status %d with a gzipped body that does not decompress: %v", res.status, res.badGzip), "bad-gzip"
	}
	label = strconv.Itoa(res.status)
	if r.stream && res.status == http.StatusOK {
		label = "200-watch"
	}
	apiPath := strings.HasPrefix(r.target, "/api")
	if res.status >= 500 {
		st, err := hostileDecodeStatus(res)
		switch {
		case err == nil && res.status == http.StatusGatewayTimeout && st.Details != nil && len(st.Details.Causes) > 0 &&
			st.Details.Causes[0].Type == metav1.CauseTypeResourceVersionTooLarge:
			return "", "504-rv-too-large" // the store has not reached the resourceVersion asked for
		case err == nil && res.status == http.StatusGatewayTimeout && st.Reason == metav1.StatusReasonTimeout && r.slow:
			return "", "504-body-timeout" // the body did not arrive within --request-timeout
		case err == nil && res.status == http.StatusGatewayTimeout && st.Reason == metav1.StatusReasonTimeout && strings.Contains(r.target, "timeout=1ns"):
			return "", "504-deadline" // the request's own deadline (?timeout=) passed
		case err == nil && res.status == http.StatusGatewayTimeout && st.Reason == metav1.StatusReasonTimeout &&
			strings.Contains(st.Message, "within the allotted timeout") && hostileFutureRV(r.target):
			// It waited for a resourceVersion the store has not reached
			// (3 s), and the daemon's --request-timeout (3 s) came first.
			return "", "504-rv-deadline"
		}
		return fmt.Sprintf("server error %d: %.1000s", res.status, res.body), label
	}
	if res.status >= 400 && len(res.body) > 0 && apiPath && r.method != "HEAD" {
		mt, _, _ := mime.ParseMediaType(res.header.Get("Content-Type"))
		if mt == "text/plain" && bytes.HasPrefix(res.body, []byte(strconv.Itoa(res.status)+" ")) {
			// The daemon's "404 page not found" outside the served
			// groups, or net/http's answer to broken HTTP.
			return "", label + "-plain"
		}
		st, err := hostileDecodeStatus(res)
		if err != nil {
			return fmt.Sprintf("answer %d is not a Status: %v: %.500s", res.status, err, res.body), label
		}
		if int(st.Code) != res.status {
			return fmt.Sprintf("answer %d carries a Status with code %d: %.500s", res.status, st.Code, res.body), label
		}
		if accept := r.headerValue("Accept"); (accept == "" || accept == "application/json") && mt != "application/json" {
			return fmt.Sprintf("answer %d to a request accepting JSON is %s, not JSON", res.status, mt), label
		}
	}
	return "", label
}

// hostileDecodeStatus decodes a Status in JSON, YAML or Protobuf by the
// answer's Content-Type.
func hostileDecodeStatus(res hostileResult) (metav1.Status, error) {
	var st metav1.Status
	mt, _, _ := mime.ParseMediaType(res.header.Get("Content-Type"))
	switch mt {
	case "application/json":
		if err := json.Unmarshal(res.body, &st); err != nil {
			return st, err
		}
	case "application/yaml":
		if err := yaml.Unmarshal(res.body, &st); err != nil {
			return st, err
		}
	case "application/vnd.kubernetes.protobuf":
		raw, ok := bytes.CutPrefix(res.body, []byte("k8s\x00"))
		if !ok {
			return st, errors.New("no Protobuf magic")
		}
		var u runtime.Unknown
		if err := u.Unmarshal(raw); err != nil {
			return st, err
		}
		if err := st.Unmarshal(u.Raw); err != nil {
			return st, err
		}
		st.Kind, st.APIVersion = u.Kind, u.APIVersion
	default:
		return st, fmt.Errorf("Content-Type %q", res.header.Get("Content-Type"))
	}
	if st.Kind != "Status" {
		return st, fmt.Errorf("kind %q", st.Kind)
	}
	return st, nil
}

func (run *hostileRun) record(r *hostileReq, res hostileResult) {
	problem, label := run.check(r, res)
	run.mu.Lock()
	defer run.mu.Unlock()
	run.sent++
	run.byCategory[r.category]++
	run.byStatus[label]++
	if res.header.Get("Content-Encoding") == "gzip" {
		run.gzipped++
	}
	if run.byCatCode[r.category] == nil {
		run.byCatCode[r.category] = map[string]int{}
	}
	run.byCatCode[r.category][label]++
	if label == "closed" && len(run.closed) < 100 {
		run.closed = append(run.closed, r.String())
	}
	if problem == "" {
		return
	}
	run.failures++
	if run.failures <= hostileMaxFailures {
		run.t.Errorf("seed %d request %s\n  %s\n  (rerun it alone: EDGEAPI_HOSTILE_SEED=%d EDGEAPI_HOSTILE_ONLY=%d)", run.seed, r, problem, run.seed, r.index)
	}
	if run.failures == hostileMaxFailures {
		run.t.Errorf("%d failures: stopping the run", hostileMaxFailures)
		run.stopped.Store(true)
	}
}

func (run *hostileRun) report(elapsed time.Duration) {
	run.mu.Lock()
	defer run.mu.Unlock()
	t := run.t
	t.Logf("sent %d requests in %v (%d failed)", run.sent, elapsed.Round(time.Millisecond), run.failures)
	for _, c := range slices.Sorted(mapKeys(run.byCategory)) {
		codes := run.byCatCode[c]
		var parts []string
		for _, code := range slices.Sorted(mapKeys(codes)) {
			parts = append(parts, fmt.Sprintf("%s:%d", code, codes[code]))
		}
		t.Logf("  %-22s %6d  %s", c, run.byCategory[c], strings.Join(parts, " "))
	}
	var parts []string
	for _, code := range slices.Sorted(mapKeys(run.byStatus)) {
		parts = append(parts, fmt.Sprintf("%s:%d", code, run.byStatus[code]))
	}
	t.Logf("status codes: %s; %d answers gzipped", strings.Join(parts, " "), run.gzipped)
}

// --- slow bodies -----------------------------------------------------------

// slowLoop starts hostileSlowConns goroutines that, until stopSlow, send
// requests whose bodies (or headers) trickle in slower than the daemon's
// request timeout, or just within it. Their plans come from the seed too.
func (run *hostileRun) slowLoop(fx *hostileFixture, enabled bool) {
	if !enabled {
		return
	}
	for c := 0; c < hostileSlowConns; c++ {
		run.slowWG.Add(1)
		go func() {
			defer run.slowWG.Done()
			for i := 0; ; i++ {
				if i >= 2 { // at least two each
					select {
					case <-run.slowStop:
						return
					default:
					}
				}
				if run.stopped.Load() {
					return
				}
				// Far above the main loop's indices, and within a 32-bit int (armv7).
				index := 1<<30 + c*1_000_000 + i
				g := &hostileGen{rng: rand.New(rand.NewPCG(run.seed, uint64(index))), fx: fx}
				r, trickle := g.slowRequest(index, c == 0 && i == 0)
				run.record(&r, run.sendRaw(&r, trickle))
			}
		}()
	}
}

func (run *hostileRun) stopSlow() {
	close(run.slowStop)
	run.slowWG.Wait()
}

// slowRequest builds a slow request and the function that trickles it.
// slowHeaders (once per run: it takes the daemon's 10 s header timeout)
// trickles the header block itself.
func (g *hostileGen) slowRequest(index int, slowHeaders bool) (hostileReq, func(net.Conn, []byte)) {
	r := hostileReq{index: index, category: "slow-body", raw: true, slow: true}
	t := g.object()
	if g.chance(0.3) {
		t = hostileTarget{kind: t.kind, ns: hostileScratch, name: fmt.Sprintf("slow-%d", g.pick(100)), scratch: true}
	}
	body, ct := g.encode(t.kind, g.validObject(t.kind, t.ns, t.name))
	r.method, r.target, r.body, r.scratch = "PUT", t.path(), body, t.scratch
	if g.chance(0.5) {
		r.method, r.target = "POST", t.collection()
	}
	r.setHeader("Content-Type", ct)
	g.finish(&r)
	r.stream = false
	pause := func(conn net.Conn, d time.Duration) bool {
		time.Sleep(d)
		return true
	}
	write := func(conn net.Conn, b []byte) bool { _, err := conn.Write(b); return err == nil }
	headerEnd := func(msg []byte) int { return bytes.Index(msg, []byte("\r\n\r\n")) + 4 }
	switch mode := g.pick(4); {
	case slowHeaders:
		r.category = "slow-headers"
		return r, func(conn net.Conn, msg []byte) {
			for i := 0; i < len(msg); i++ {
				if !write(conn, msg[i:i+1]) || !pause(conn, 500*time.Millisecond) {
					return
				}
			}
		}
	case mode == 0:
		// Within the timeout: five pieces 200 ms apart. (On a loaded
		// machine the daemon may still see it arrive late: a 504 is
		// allowed here too, a hang is not.)
		return r, func(conn net.Conn, msg []byte) {
			step := (len(msg) + 4) / 5
			for i := 0; i < len(msg); i += step {
				if !write(conn, msg[i:min(i+step, len(msg))]) || !pause(conn, 200*time.Millisecond) {
					return
				}
			}
		}
	case mode == 1:
		// Headers, then the body one byte every 300 ms: past the timeout.
		return r, func(conn net.Conn, msg []byte) {
			h := headerEnd(msg)
			if !write(conn, msg[:h]) {
				return
			}
			for i := h; i < len(msg); i++ {
				if !write(conn, msg[i:i+1]) || !pause(conn, 300*time.Millisecond) {
					return
				}
			}
		}
	case mode == 2:
		// Chunks of one byte, 300 ms apart, never ending.
		r.framing = "slow-chunked"
		return r, func(conn net.Conn, msg []byte) {
			h := headerEnd(msg)
			head := bytes.Replace(msg[:h], []byte("Content-Length: "), []byte("X-Was-Content-Length: "), 1)
			head = bytes.Replace(head, []byte("\r\n\r\n"), []byte("\r\nTransfer-Encoding: chunked\r\n\r\n"), 1)
			if !write(conn, head) {
				return
			}
			for i := 0; i < 200; i++ {
				if !write(conn, []byte("1\r\nx\r\n")) || !pause(conn, 300*time.Millisecond) {
					return
				}
			}
		}
	default:
		// Half the body, then silence.
		return r, func(conn net.Conn, msg []byte) {
			h := headerEnd(msg)
			write(conn, msg[:h+(len(msg)-h)/2])
		}
	}
}

// yamlAliasBomb is a YAML ConfigMap of under 1.1 MB whose data holds
// aliases instead of values: n aliases of one 1 MiB string anchor, which
// expand to n MiB of JSON.
func yamlAliasBomb(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nx: &a %q\ndata:\n", strings.Repeat("x", 1<<20))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  k%d: *a\n", i)
	}
	return b.Bytes()
}

// TestHugeInput_YAMLAliasExpansion sends YAML bodies of 1.1 MB whose
// aliases of one large string expand to 2 GiB of JSON, to each decoder of
// YAML bodies (objects, DeleteOptions, apply patches): each answer is a 413,
// and memory stays bounded. go-yaml's alias limit counts nodes, not bytes,
// so it lets this through; before the fix the daemon's peak RSS reached
// 8 GiB on the first request, answered after 50 s.
func TestHugeInput_YAMLAliasExpansion(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	body := yamlAliasBomb(2048)
	for _, tc := range []struct{ method, path, contentType string }{
		{"POST", hugeCMs, "application/yaml"},
		{"PUT", hugeCMs + "/bomb", "application/yaml"},
		{"DELETE", hugeCMs + "/bomb", "application/yaml"},
		{"PATCH", hugeCMs + "/bomb?fieldManager=m", "application/apply-patch+yaml"},
	} {
		res := sendHuge(t, d, tc.method, tc.path, tc.contentType, body)
		t.Logf("%s %s (%s): %d", tc.method, tc.path, tc.contentType, res.Status)
		decodeStatus(t, res, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	}
	checkPeakRSS(t, d)
}

// TestHugeInput_LargeLists lists a namespace holding 16 ConfigMaps of
// 50,000 finalizers each (13 MB of JSON) eight times at once, in JSON, YAML
// and Protobuf: each answer is the whole list, and the daemon's peak RSS
// stays bounded. Built whole, one YAML list took the daemon from 190 MiB
// to 1.1 GiB (go-yaml keeps over 600 bytes a value until the document
// ends); such lists are now read from the store in pages and written item
// by item, and YAML is written as the JSON is read (httpapi's yamlout).
func TestHugeInput_LargeLists(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "large-list")
	const n, each = 16, 50000
	for i := 0; i < n; i++ {
		body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprint("big-", i), "finalizers": finalizers(each, false)}})
		if res := sendHuge(t, d, "POST", "/api/v1/namespaces/large-list/configmaps", "application/json", body); res.Status != http.StatusCreated {
			t.Fatalf("create big-%d: %d %.300s", i, res.Status, res.Body)
		}
	}
	accepts := []string{"application/yaml", "application/yaml", "application/yaml", "application/yaml",
		"application/json", "application/json", "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf"}
	var wg sync.WaitGroup
	for _, accept := range accepts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest("GET", d.URL+"/api/v1/namespaces/large-list/configmaps", nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Accept", accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("GET the list as %s: %v", accept, err)
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			var list corev1.ConfigMapList
			if err == nil && accept == "application/vnd.kubernetes.protobuf" {
				_, _, err = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(body, nil, &list)
			} else if err == nil {
				err = yaml.Unmarshal(body, &list)
			}
			if resp.StatusCode != http.StatusOK || err != nil {
				t.Errorf("GET the list as %s: %d (%v) %.300s", accept, resp.StatusCode, err, body)
				return
			}
			if len(list.Items) != n || len(list.Items[n-1].Finalizers) != each {
				t.Errorf("%s: got %d items, the last with %d finalizers; want %d with %d", accept, len(list.Items), len(list.Items[len(list.Items)-1].Finalizers), n, each)
			}
		}()
	}
	wg.Wait()
	// 167-178 MiB alone (the first page of each list held at once; YAML
	// written as it is read), 192-202 MiB when go-yaml converted one
	// large value at a time; 321 MiB when each list's first 8 MiB stayed
	// in memory for the whole stream and go-yaml conversions ran side by
	// side.
	checkPeakRSSUnder(t, d, 280<<20)
}

// TestHugeInput_YAMLOfLargeObject reads one ConfigMap of 200,000
// finalizers (1.9 MB of JSON) as YAML four times at once: each answer is
// the whole object, and the daemon's peak RSS stays bounded. go-yaml,
// which wrote YAML answers before, keeps every event of a document until
// it ends: converting this object allocated 243 MB (4 MB now), and the
// daemon peaked at 232 MiB with the conversions one at a time (92 MiB
// now).
func TestHugeInput_YAMLOfLargeObject(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), "large-object")
	const each = 200000
	body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "finalizers": finalizers(each, false)}})
	if res := sendHuge(t, d, "POST", "/api/v1/namespaces/large-object/configmaps", "application/json", body); res.Status != http.StatusCreated {
		t.Fatalf("create: %d %.300s", res.Status, res.Body)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest("GET", d.URL+"/api/v1/namespaces/large-object/configmaps/big", nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Accept", "application/yaml")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("GET as YAML: %v", err)
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			var cm corev1.ConfigMap
			if err == nil {
				err = yaml.Unmarshal(b, &cm)
			}
			if resp.StatusCode != http.StatusOK || err != nil {
				t.Errorf("GET as YAML: %d (%v) %.300s", resp.StatusCode, err, b)
				return
			}
			if len(cm.Finalizers) != each {
				t.Errorf("got %d finalizers, want %d", len(cm.Finalizers), each)
			}
		}()
	}
	wg.Wait()
	checkPeakRSSUnder(t, d, 150<<20)
}

// TestApply_CreateNameMismatch: a server-side apply to a missing object
// whose body names another object is a 400, and creates nothing. Before
// the fix the first such apply created the object the body named, and
// every later one looped for ever on AlreadyExists (found by
// TestHostileClients: seed 5 hung at request 92811 and took 1.1 GiB).
func TestApply_CreateNameMismatch(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	body := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  k: v\n")
	for i := 0; i < 2; i++ {
		res := sendHuge(t, d, "PATCH", hugeCMs+"/missing?fieldManager=m", "application/apply-patch+yaml", body)
		st := decodeStatus(t, res, http.StatusBadRequest, metav1.StatusReasonBadRequest)
		if want := "the name of the object (other) does not match the name on the URL (missing)"; st.Message != want {
			t.Errorf("apply %d: message %q, want %q", i, st.Message, want)
		}
	}
	if res := rawGetNoFatal(d, hugeCMs+"/other"); res.Status != http.StatusNotFound {
		t.Errorf("GET the body's object: %d, want 404 (nothing created): %.300s", res.Status, res.Body)
	}
}

// hostileFutureRV reports whether target asks for a resourceVersion far
// beyond any the daemon reaches in a run, which it waits for.
func hostileFutureRV(target string) bool {
	u, err := url.Parse(target)
	if err != nil {
		return false
	}
	for _, v := range u.Query()["resourceVersion"] {
		if n, err := strconv.ParseUint(v, 10, 64); (err == nil && n > 1<<40) || errors.Is(err, strconv.ErrRange) {
			return true
		}
	}
	return false
}
