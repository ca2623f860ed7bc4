package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// chaosWriter is one of the writers of the etcd chaos tests: it creates,
// updates (compare-and-swap on the resourceVersion) and deletes its own
// ConfigMaps through a client-go clientset, and keeps a ledger of what
// was acknowledged. A write whose outcome the client cannot know (a 5xx,
// a 504 Timeout, a broken connection) is resolved by reading the object
// back and, when the write is not there, sending it again with the same
// precondition; a 409 or 404 that answers such a retry is resolved the
// same way. Any other error is a problem the test reports.
type chaosWriter struct {
	id     int
	ns     string
	client kubernetes.Interface
	rng    func(n int) int
	// own is, per name, the state the last acknowledged write left.
	own map[string]crashKey
	// acks are every acknowledged write, in order, per name.
	acks map[string][]crashOp
	// errs counts the errors this writer saw by kind (chaosErrorKind);
	// samples holds the first message of each kind.
	errs    map[string]int
	samples map[string]string
	// resolvedByRead counts writes whose outcome only a read told.
	resolvedByRead int
	// unresolved is the write, if any, whose outcome was still unknown
	// when the writers were stopped: its object may be in the state it
	// leaves.
	unresolved *crashOp
	// problems are errors a client should never see.
	problems []string
}

// chaosErrorKind names an error for the counts, and reports whether a
// writer may see it: errors client-go retries by itself (it only returns
// them when its retries run out), 504 Timeout, 503, and connection
// errors. A Conflict, AlreadyExists or NotFound is allowed only as the
// answer to a retry (retry true).
func chaosErrorKind(err error, retry bool) (kind string, allowed bool) {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		kind = fmt.Sprintf("%d %s", st.Code, st.Reason)
		_, delay := apierrors.SuggestsClientDelay(err)
		switch {
		case st.Code == http.StatusGatewayTimeout, st.Code == http.StatusServiceUnavailable,
			st.Code == http.StatusTooManyRequests:
			return kind, true
		case st.Code >= 500 && delay:
			return kind + " (Retry-After)", true
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
			if retry {
				return kind + " (to a retry)", true
			}
			return kind, false
		}
		return kind, false
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "connection reset"),
		strings.Contains(msg, "EOF"), strings.Contains(msg, "broken pipe"),
		strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "context deadline exceeded"):
		return "connection error", true
	}
	return "other: " + msg, false
}

// errUnresolved is returned by resolve when the object could not be read
// before the writer was told to stop.
var errUnresolved = errors.New("outcome not resolved")

// write runs one write op (create when name is absent, else update or,
// one time in four, delete) until its outcome is known, and records it.
// It gives up, with the op unresolved, only when stop is closed and the
// object cannot be read.
func (w *chaosWriter) write(ctx context.Context, name, value string, stop <-chan struct{}) error {
	cur := w.own[name]
	cms := w.client.CoreV1().ConfigMaps(w.ns)
	op := crashOp{name: name, prevRV: cur.rv}
	switch {
	case !cur.exists:
		op.kind, op.value = "create", value
	case w.rng(4) == 0:
		op.kind = "delete"
	default:
		op.kind, op.value = "update", value
	}
	retry := false
	for {
		var (
			got *corev1.ConfigMap
			err error
		)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": op.value}}
		switch op.kind {
		case "create":
			got, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		case "update":
			cm.ResourceVersion = strconv.FormatInt(cur.rv, 10)
			got, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		case "delete":
			rv := strconv.FormatInt(cur.rv, 10)
			err = cms.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		}
		if err == nil {
			if got != nil {
				op.rv = mustRVNoT(got.ResourceVersion)
			}
			w.ack(op)
			return nil
		}
		kind, allowed := chaosErrorKind(err, retry)
		w.errs[kind]++
		if _, ok := w.samples[kind]; !ok {
			w.samples[kind] = err.Error()
		}
		if !allowed {
			w.problems = append(w.problems, fmt.Sprintf("%s %s (rv %d): a client must not see %v", op.kind, name, cur.rv, err))
		}
		// The write may or may not have happened: read it back.
		applied, rv, err := w.resolve(ctx, op, stop)
		if errors.Is(err, errUnresolved) {
			w.unresolved = &op
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", op.kind, name, err)
		}
		if applied {
			w.resolvedByRead++
			op.rv = rv
			w.ack(op)
			return nil
		}
		retry = true
		select {
		case <-stop:
			// Not applied as far as anyone can tell, but it may still be
			// (its last attempt's outcome is unknown).
			w.unresolved = &op
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// resolve reads op's object until a read answers, and reports whether
// op's write is what the object shows (and at which resourceVersion).
// An object in neither op's state nor the one before it is a problem.
func (w *chaosWriter) resolve(ctx context.Context, op crashOp, stop <-chan struct{}) (applied bool, rv int64, err error) {
	cms := w.client.CoreV1().ConfigMaps(w.ns)
	before := w.own[op.name]
	for {
		got, err := cms.Get(ctx, op.name, metav1.GetOptions{})
		var now crashKey
		switch {
		case err == nil:
			now = crashKey{exists: true, value: got.Data["v"], rv: mustRVNoT(got.ResourceVersion)}
		case apierrors.IsNotFound(err):
		default:
			kind, _ := chaosErrorKind(err, false)
			w.errs["read back: "+kind]++
			select {
			case <-stop:
				return false, 0, errUnresolved
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		switch {
		case now == before:
			return false, 0, nil
		case op.kind == "delete" && !now.exists:
			return true, 0, nil
		case op.kind != "delete" && now.exists && now.value == op.value && now.rv > before.rv:
			return true, now.rv, nil
		}
		w.problems = append(w.problems, fmt.Sprintf("%s %s: the object is %s, neither %s before nor what the write makes", op.kind, op.name, brief(now), brief(before)))
		return false, 0, fmt.Errorf("read back %s: unexpected state %s", op.name, brief(now))
	}
}

// ack records op as acknowledged.
func (w *chaosWriter) ack(op crashOp) {
	op.acked = true
	w.acks[op.name] = append(w.acks[op.name], op)
	if op.kind == "delete" {
		w.own[op.name] = crashKey{}
		return
	}
	w.own[op.name] = crashKey{exists: true, value: op.value, rv: op.rv}
}

// statusCounter counts, for a clientset's transport, every answer with a
// status of 429 or 5xx and every transport error, including those
// client-go then retried by itself.
type statusCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *statusCounter) add(kind string) {
	c.mu.Lock()
	c.counts[kind]++
	c.mu.Unlock()
}

type countingTransport struct {
	next    http.RoundTripper
	counter *statusCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	switch {
	case err != nil:
		t.counter.add("transport error")
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		kind := strconv.Itoa(resp.StatusCode)
		if resp.Header.Get("Retry-After") != "" {
			kind += " with Retry-After"
		}
		t.counter.add(kind)
	}
	return resp, err
}

// countedClientset is d's clientset with its answers counted in c.
func countedClientset(t *testing.T, d *Daemon, c *statusCounter) kubernetes.Interface {
	t.Helper()
	cfg := d.RESTConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, counter: c} }
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("new clientset: %v", err)
	}
	return cs
}

// chaosRun is a set of chaosWriters running against some daemons.
type chaosRun struct {
	ns      string
	writers []*chaosWriter
	stop    chan struct{}
	wg      sync.WaitGroup
	acked   atomic.Int64
	// failed holds the first writer that gave up, with its error.
	failed atomic.Pointer[error]
	wire   *statusCounter
}

// startChaosWriters starts crashWriters writers in ns, writer i writing
// through daemons[i%len(daemons)], each owning crashKeysPerWriter
// ConfigMaps.
func startChaosWriters(t *testing.T, ns string, seed uint64, daemons ...*Daemon) *chaosRun {
	t.Helper()
	r := &chaosRun{ns: ns, stop: make(chan struct{}), wire: &statusCounter{counts: map[string]int{}}}
	clients := make([]kubernetes.Interface, len(daemons))
	for i, d := range daemons {
		clients[i] = countedClientset(t, d, r.wire)
	}
	for i := 0; i < crashWriters; i++ {
		rng := newRand(seed, uint64(i+1))
		w := &chaosWriter{id: i, ns: ns, client: clients[i%len(clients)], rng: rng,
			own: map[string]crashKey{}, acks: map[string][]crashOp{}, errs: map[string]int{}, samples: map[string]string{}}
		r.writers = append(r.writers, w)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			ctx := context.Background()
			for n := 0; ; n++ {
				select {
				case <-r.stop:
					return
				default:
				}
				name := crashName(w.id, w.rng(crashKeysPerWriter))
				before := len(w.acks[name])
				if err := w.write(ctx, name, fmt.Sprintf("w%d-%d", w.id, n), r.stop); err != nil {
					if !errors.Is(err, errUnresolved) {
						r.failed.CompareAndSwap(nil, &err)
					}
					return
				}
				if len(w.acks[name]) > before {
					r.acked.Add(1)
				}
			}
		}()
	}
	return r
}

// Stop stops the writers and waits for them.
func (r *chaosRun) Stop() {
	close(r.stop)
	r.wg.Wait()
}

// waitAcks waits until n more writes than now are acknowledged, failing
// t after a generous deadline: the cluster must keep serving.
func (r *chaosRun) waitAcks(t *testing.T, n int64, what string) {
	t.Helper()
	want := r.acked.Load() + n
	deadline := time.Now().Add(2 * eventually)
	for r.acked.Load() < want {
		if p := r.failed.Load(); p != nil {
			t.Fatalf("%s: a writer gave up: %v", what, *p)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d writes acknowledged in %v, want %d more: the API stopped serving writes", what, r.acked.Load(), 2*eventually, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check compares the ledger with each daemon's list of the namespace's
// ConfigMaps (polled until they agree, as a replica's cache may trail a
// write made through another) and with each object's acknowledged
// resourceVersions, which must grow. An object whose last write's outcome
// was unknown when the writers stopped may be in the state that write
// leaves. It returns the acknowledged and
// resolved-by-read counts and the errors by kind.
func (r *chaosRun) check(t *testing.T, daemons ...*Daemon) (acked, byRead int, errs map[string]int) {
	t.Helper()
	errs = map[string]int{}
	logged := map[string]bool{}
	want := map[string]crashKey{}
	unresolved := map[string]crashOp{}
	// matches reports whether got is what the ledger allows for name: the
	// last acknowledged state, or what a write of unknown outcome made.
	matches := func(name string, got crashKey) bool {
		if got == want[name] {
			return true
		}
		op, ok := unresolved[name]
		switch {
		case !ok:
			return false
		case op.kind == "delete":
			return !got.exists
		}
		return got.exists && got.value == op.value && got.rv > want[name].rv
	}
	allMatch := func(got map[string]crashKey) bool {
		for name := range want {
			if !matches(name, got[name]) {
				return false
			}
		}
		for name, k := range got {
			if _, ok := want[name]; !ok && !matches(name, k) {
				return false
			}
		}
		return true
	}
	for _, w := range r.writers {
		for _, p := range w.problems {
			t.Errorf("writer %d: %s", w.id, p)
		}
		for k, v := range w.errs {
			errs[k] += v
		}
		byRead += w.resolvedByRead
		for k, msg := range w.samples {
			if !logged[k] {
				logged[k] = true
				t.Logf("first %s a writer saw: %s", k, msg)
			}
		}
		for name, ops := range w.acks {
			acked += len(ops)
			last := int64(0)
			for _, op := range ops {
				if op.kind == "delete" {
					continue
				}
				if op.rv <= last {
					t.Errorf("%s: acknowledged %s at resourceVersion %d, not above the %d acknowledged before", name, op.kind, op.rv, last)
				}
				last = op.rv
			}
		}
		for name, k := range w.own {
			if k.exists {
				want[name] = k
			}
		}
		if op := w.unresolved; op != nil {
			unresolved[op.name] = *op
		}
	}
	for _, d := range daemons {
		var got map[string]crashKey
		deadline := time.Now().Add(eventually)
		for {
			s, err := tryListCMs(d, r.ns)
			if err == nil {
				got = map[string]crashKey{}
				for name, cm := range s.objects {
					got[name] = crashKey{exists: true, value: cm.Data["v"], rv: mustRVNoT(cm.ResourceVersion)}
				}
				if allMatch(got) {
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		names := slices.Sorted(maps.Keys(want))
		for name := range got {
			if _, ok := want[name]; !ok {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			if g, w := got[name], want[name]; !matches(name, g) {
				t.Errorf("%s: %s is %s, the last acknowledged write left %s", d.Addr, name, brief(g), brief(w))
			}
		}
	}
	return acked, byRead, errs
}

// TestEtcdCluster_KillLeaderThenFollower runs two edgeapi replicas on a
// three-member etcd cluster on loopback while 64 writers write through
// both with a ledger. Each round kills the etcd leader with SIGKILL,
// waits until writes go on with the two members left, restarts it, waits
// until it has caught up, then kills a follower and restarts it the same
// way, so that two members always hold every committed write. At the
// end:
//   - every acknowledged write is there, on both replicas: each object is
//     what its last acknowledged write left, and each object's
//     acknowledged resourceVersions grow;
//   - the writers saw only errors a client can retry: 504 Timeout, 503,
//     429, 5xx with Retry-After, or a broken connection, and a Conflict,
//     AlreadyExists or NotFound only as the answer to such a retry when
//     the first attempt had in fact been applied;
//   - a watch on the second replica that began before the first kill and
//     is resumed, as client-go's reflector does, whenever it ends, sees
//     every acknowledged write through either replica, in order.
//
// EDGEAPI_ETCDCLUSTER_ROUNDS sets the rounds (default 2).
func TestEtcdCluster_KillLeaderThenFollower(t *testing.T) {
	bin := requireEtcdCluster(t)
	t.Parallel()
	rounds := envCount(t, "EDGEAPI_ETCDCLUSTER_ROUNDS", 2)
	seed := envSeed(t, "EDGEAPI_ETCDCLUSTER_SEED")
	t.Logf("etcd cluster chaos: %d rounds, seed %d", rounds, seed)

	c := newEtcdCluster(t, bin, 3)
	prefix := fmt.Sprintf("/chaos-%d", seed)
	a := StartDaemon(t, DaemonOptions{Args: etcdDaemonArgs(c, prefix)})
	b := StartDaemon(t, DaemonOptions{Args: etcdDaemonArgs(c, prefix)})
	const ns = "chaos"
	createNamespace(t, a.Clientset(), ns)
	waitNamespaceOn(t, b, ns)

	start := listCMs(t, b, ns)
	watch := startResumingWatch(t, b, "/api/v1/namespaces/"+ns+"/configmaps", start.rv)

	run := startChaosWriters(t, ns, seed, a, b)
	run.waitAcks(t, 200, "before the first kill")
	var kills []string
	for round := 0; round < rounds; round++ {
		leader := c.WaitLeader()
		c.Kill(leader)
		kills = append(kills, "leader "+leader.name)
		run.waitAcks(t, 200, fmt.Sprintf("round %d: leader %s killed", round, leader.name))
		c.Start(leader)
		c.WaitCaughtUp()
		run.waitAcks(t, 100, fmt.Sprintf("round %d: leader %s back", round, leader.name))

		follower := c.Follower(c.WaitLeader(), leader)
		c.Kill(follower)
		kills = append(kills, "follower "+follower.name)
		run.waitAcks(t, 200, fmt.Sprintf("round %d: follower %s killed", round, follower.name))
		c.Start(follower)
		c.WaitCaughtUp()
		run.waitAcks(t, 100, fmt.Sprintf("round %d: follower %s back", round, follower.name))
	}
	run.Stop()
	if p := run.failed.Load(); p != nil {
		t.Errorf("a writer gave up: %v", *p)
	}
	acked, byRead, errs := run.check(t, a, b)

	// A last write through the other replica marks the end of the watch.
	marker, err := a.Clientset().CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "end"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the end marker: %v", err)
	}
	events, restarts := watch.Stop(t, mustRV(t, marker.ResourceVersion))
	end := listCMs(t, b, ns)
	var ackedOps []crashOp
	for _, w := range run.writers {
		for _, ops := range w.acks {
			ackedOps = append(ackedOps, ops...)
		}
	}
	checkReplay(t, 0, toCrashSnapshot(start), toCrashSnapshot(end), events, ackedOps)

	t.Logf("etcd cluster chaos: %d kills (%s), %d writes acknowledged (%d of them known only by reading back after an error); "+
		"errors writers saw: %v; answers on the wire (client-go retried some): %v; watch on the second replica: %d events, resumed %d times; seed %d",
		len(kills), strings.Join(kills, ", "), acked, byRead, errs, run.wire.counts, len(events), restarts, seed)
}

// toCrashSnapshot turns a ConfigMap list into the shape checkReplay takes.
func toCrashSnapshot(s cmSnapshot) crashSnapshot {
	out := crashSnapshot{rv: s.rv, objects: map[string]crashKey{}}
	for name, cm := range s.objects {
		out.objects[name] = crashKey{exists: true, value: cm.Data["v"], rv: mustRVNoT(cm.ResourceVersion)}
	}
	return out
}

// waitNamespaceOn waits until d serves namespace ns (a replica learns of
// a namespace created through another from its watch).
func waitNamespaceOn(t *testing.T, d *Daemon, ns string) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		if res := rawGetNoFatal(d, "/api/v1/namespaces/"+ns); res.Status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s not served by %s after %v", ns, d.Addr, eventually)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newRand returns a deterministic source of ints below n for stream of
// seed.
func newRand(seed, stream uint64) func(n int) int {
	r := rand.New(rand.NewPCG(seed, stream))
	return r.IntN
}

// resumingWatch is a raw watch of a collection that, like client-go's
// reflector, starts again from the last resourceVersion it saw (event
// or bookmark) whenever the server ends it or the connection breaks.
type resumingWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex // guards everything below
	events   []crashEvent
	lastRV   int64
	restarts int
	problems []string
}

// startResumingWatch watches path on d from rv until Stop.
func startResumingWatch(t *testing.T, d *Daemon, path string, rv int64) *resumingWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &resumingWatch{cancel: cancel, done: make(chan struct{}), lastRV: rv}
	go func() {
		defer close(w.done)
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				w.mu.Lock()
				w.restarts++
				w.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
			if gone := w.once(ctx, d, path); gone {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// once runs one watch request from the last resourceVersion until it
// ends. gone reports a 410, after which the watch cannot resume.
func (w *resumingWatch) once(ctx context.Context, d *Daemon, path string) (gone bool) {
	w.mu.Lock()
	from := w.lastRV
	w.mu.Unlock()
	url := fmt.Sprintf("%s%s?watch=1&allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=600", d.URL, path, from)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var ev ledgerWatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return false
		}
		w.mu.Lock()
		switch ev.Type {
		case "ERROR":
			w.problems = append(w.problems, fmt.Sprintf("watch from %d: ERROR %d %s", from, ev.Object.Code, ev.Object.Message))
			w.mu.Unlock()
			return ev.Object.Code == http.StatusGone
		case "BOOKMARK":
			w.lastRV = max(w.lastRV, mustRVNoT(ev.Object.Metadata.ResourceVersion))
		default:
			rv := mustRVNoT(ev.Object.Metadata.ResourceVersion)
			w.events = append(w.events, crashEvent{typ: ev.Type, name: ev.Object.Metadata.Name, rv: rv})
			w.lastRV = rv
		}
		w.mu.Unlock()
	}
	return false
}

// Stop waits until the watch has seen an event at rv, ends it, and
// returns its events and how many times it was resumed. A watch that
// cannot reach rv, or that saw an ERROR, fails t.
func (w *resumingWatch) Stop(t *testing.T, rv int64) ([]crashEvent, int) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		w.mu.Lock()
		last := w.lastRV
		w.mu.Unlock()
		if last >= rv {
			break
		}
		select {
		case <-w.done:
			deadline = time.Time{}
		default:
		}
		if time.Now().After(deadline) {
			t.Errorf("watch: at resourceVersion %d, want %d", last, rv)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.problems {
		t.Errorf("%s", p)
	}
	return w.events, w.restarts
}

// TestCrashLoop_EtcdMemberKill is the crash loop with etcd as the victim:
// edgeapi keeps running on a single-member etcd of the test's own while
// that member is killed with SIGKILL and restarted, cycle after cycle,
// under the 64 ledger writers (as in TestEtcdCluster_KillLeaderThenFollower).
// After each restart edgeapi must serve writes again without being
// restarted itself. At the end:
//   - every acknowledged write is there, and each object's acknowledged
//     resourceVersions grow;
//   - the writers saw only errors a client can retry (503 with
//     Retry-After, 504 Timeout, a broken connection);
//   - a watch that began before the first kill, resumed whenever it ends
//     as client-go's reflector does, saw every acknowledged write in
//     order, and a client-go informer started before the first kill holds
//     exactly the final list.
//
// EDGEAPI_ETCDKILL_CYCLES sets the cycles (default 4).
func TestCrashLoop_EtcdMemberKill(t *testing.T) {
	bin := requireEtcdCluster(t)
	t.Parallel()
	cycles := envCount(t, "EDGEAPI_ETCDKILL_CYCLES", 4)
	seed := envSeed(t, "EDGEAPI_ETCDKILL_SEED")
	t.Logf("etcd member kill loop: %d cycles, seed %d", cycles, seed)
	pause := newRand(seed, 0)

	c := newEtcdCluster(t, bin, 1)
	member := c.members[0]
	d := StartDaemon(t, DaemonOptions{Args: etcdDaemonArgs(c, fmt.Sprintf("/etcdkill-%d", seed))})
	const ns = "etcdkill"
	cs := d.Clientset()
	createNamespace(t, cs, ns)

	start := listCMs(t, d, ns)
	watch := startResumingWatch(t, d, "/api/v1/namespaces/"+ns+"/configmaps", start.rv)
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().ConfigMaps().Informer()
	stopInformer := make(chan struct{})
	defer close(stopInformer)
	factory.Start(stopInformer)
	if !cache.WaitForCacheSync(stopInformer, informer.HasSynced) {
		t.Fatal("informer did not sync")
	}

	run := startChaosWriters(t, ns, seed, d)
	run.waitAcks(t, 200, "before the first kill")
	var probes []string
	for cycle := 0; cycle < cycles; cycle++ {
		c.Kill(member)
		if cycle == cycles-1 {
			// The last outage outlasts the store's wait for etcd: a
			// write sent meanwhile must end with a Status a client can
			// retry, not hang until the request timeout.
			probes = append(probes, probeEtcdDown(t, d, ns))
		} else {
			// etcd stays down for 0.5 to 3 s: the store waits for it.
			time.Sleep(time.Duration(500+pause(2500)) * time.Millisecond)
		}
		c.Start(member)
		run.waitAcks(t, 200, fmt.Sprintf("cycle %d: etcd back", cycle))
	}
	run.Stop()
	if p := run.failed.Load(); p != nil {
		t.Errorf("a writer gave up: %v", *p)
	}
	acked, byRead, errs := run.check(t, d)

	marker, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "end"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the end marker: %v", err)
	}
	events, restarts := watch.Stop(t, mustRV(t, marker.ResourceVersion))
	end := listCMs(t, d, ns)
	var ackedOps []crashOp
	for _, w := range run.writers {
		for _, ops := range w.acks {
			ackedOps = append(ackedOps, ops...)
		}
	}
	checkReplay(t, 0, toCrashSnapshot(start), toCrashSnapshot(end), events, ackedOps)

	// The informer converges on the final list.
	want := toCrashSnapshot(end).objects
	var got map[string]crashKey
	deadline := time.Now().Add(eventually)
	for {
		got = map[string]crashKey{}
		for _, o := range informer.GetStore().List() {
			cm := o.(*corev1.ConfigMap)
			got[cm.Name] = crashKey{exists: true, value: cm.Data["v"], rv: mustRVNoT(cm.ResourceVersion)}
		}
		if maps.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !maps.Equal(got, want) {
		t.Errorf("the informer holds %d ConfigMaps, the list %d, and they differ", len(got), len(want))
	}

	t.Logf("etcd member kill loop: %d kills of the only etcd member, %d writes acknowledged (%d of them known only by reading back after an error); "+
		"errors writers saw: %v; answers on the wire (client-go retried some): %v; a create while etcd was down: %s; watch: %d events, resumed %d times; informer converged on %d objects; seed %d",
		cycles, acked, byRead, errs, run.wire.counts, strings.Join(probes, "; "), len(events), restarts, len(got), seed)
}

// probeEtcdDown creates a ConfigMap through d while its etcd is down and
// checks the answer: 503 ServiceUnavailable with Retry-After (nothing was
// written) or 504 Timeout (etcd did not confirm the write), as a Status,
// within the request's hang guard. It returns the answer's code and
// message.
func probeEtcdDown(t *testing.T, d *Daemon, ns string) string {
	t.Helper()
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe"}}`)
	res := doRaw(t, d, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json", "", body)
	var st metav1.Status
	if err := json.Unmarshal(res.Body, &st); err != nil || st.Kind != "Status" {
		t.Errorf("create with etcd down: %d %q, want a Status", res.Status, res.Body)
		return fmt.Sprint(res.Status)
	}
	switch {
	case res.Status == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "":
	case res.Status == http.StatusGatewayTimeout && st.Reason == metav1.StatusReasonTimeout:
	default:
		t.Errorf("create with etcd down: %d %s %q (Retry-After %q), want 503 with Retry-After or 504 Timeout",
			res.Status, st.Reason, st.Message, res.Header.Get("Retry-After"))
	}
	return fmt.Sprintf("%d %s %q", res.Status, st.Reason, st.Message)
}
