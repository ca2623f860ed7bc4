package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// envCount is the positive number in the environment variable name, or
// def when it is unset.
func envCount(t *testing.T, name string, def int) int {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", name, v)
		}
		return n
	}
	return def
}

// envSeed is the seed in the environment variable name, or else one from
// the clock.
func envSeed(t *testing.T, name string) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(name); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", name, v, err)
		}
	}
	return seed
}

// crashResource is one kind the crash workload writes. Writers alternate
// between ConfigMaps and the custom resources of crashCRD, so custom
// resources go through every kill and power cut that ConfigMaps do.
type crashResource struct {
	gvr schema.GroupVersionResource
	// collection is the path of a namespace's objects, with %s for the
	// namespace.
	collection       string
	kind, apiVersion string
	// valuePath is where the written value is (data.v, spec.v).
	valuePath []string
}

var crashResources = []crashResource{
	{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, collection: "/api/v1/namespaces/%s/configmaps",
		kind: "ConfigMap", apiVersion: "v1", valuePath: []string{"data", "v"}},
	{gvr: schema.GroupVersionResource{Group: "crash.edgeapi.test", Version: "v1", Resource: "crashes"}, collection: "/apis/crash.edgeapi.test/v1/namespaces/%s/crashes",
		kind: "Crash", apiVersion: "crash.edgeapi.test/v1", valuePath: []string{"spec", "v"}},
}

// crashCRD defines the Crash kind: a schema with a default (so reads
// default stored objects) and a CEL rule (so writes run it).
const crashCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"crashes.crash.edgeapi.test"},
"spec":{"group":"crash.edgeapi.test","scope":"Namespaced",
"names":{"plural":"crashes","singular":"crash","kind":"Crash"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.v.startsWith('c')","message":"v starts with c"}],
"properties":{"v":{"type":"string"},"n":{"type":"integer","default":1}}}}}}}]}}`

// crashResourceOf is the resource writer wr writes.
func crashResourceOf(wr int) int { return wr % len(crashResources) }

// crashOp is one write a crash-loop writer sent.
type crashOp struct {
	res   int // index in crashResources
	name  string
	kind  string // create, update, delete
	value string // data.v or spec.v after a create or update
	// prevRV is the object's resourceVersion before the op ("" if absent).
	prevRV int64
	// rv is the acknowledged resourceVersion of a create or update.
	rv int64
	// acked: the server answered 2xx. An op that was in flight at the kill
	// is not acked: it may or may not have happened.
	acked bool
}

// crashKey is what the ledger knows of one object: the state the last
// acknowledged write left, and the write in flight at the kill, if any.
type crashKey struct {
	exists bool
	value  string
	rv     int64
}

// TestCrashLoop is a Jepsen-style check of durability and ordering across
// crashes. 64 writers create, update (compare-and-swap on the
// resourceVersion) and delete ConfigMaps, each owning its own names, and a
// ledger records every acknowledged write and every write in flight. The
// daemon is killed with SIGKILL at a random moment of each cycle (the seed is
// logged) and restarted on the same data dir. After each restart:
//   - every object is in the state its last acknowledged write left, or in
//     the state of the write that was in flight at the kill; nothing exists
//     that no one wrote;
//   - resourceVersions never go backwards: every write after the restart
//     gets one above every resourceVersion acknowledged before;
//   - a watch from the resourceVersion of a list taken before the kill
//     replays every acknowledged write after it, in strictly increasing
//     resourceVersion order with no gap or duplicate, and folding its events
//     onto that list gives exactly the list after the restart. Where
//     compaction has removed that history, the answer must be a correct 410.
//
// Odd cycles write 32 KiB values, so that WAL checkpoints and resets run
// while the writes go on; every third cycle compacts every second.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	// EDGEAPI_CRASHLOOP_CYCLES, or 10 (CI); scripts/crashloop runs 100.
	cycles := envCount(t, "EDGEAPI_CRASHLOOP_CYCLES", 10)
	seed := envSeed(t, "EDGEAPI_CRASHLOOP_SEED")
	t.Logf("crash loop: %d cycles, seed %d (EDGEAPI_CRASHLOOP_SEED reruns it)", cycles, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	const ns = "crashloop"
	// Every value the writers store is encrypted at rest (aesgcm), so
	// the kills also cover encryption's write and read paths, on both
	// backends. On etcd the loop kills the daemon, never etcd (which
	// TestCrashLoop_EtcdMemberKill kills).
	enc := []string{"--encryption-provider-config", writeCrashEncConfig(t)}
	d := StartDaemon(t, DaemonOptions{Args: enc})
	dataDir := d.DataDir
	createNamespace(t, d.Clientset(), ns)

	w := newCrashWorkload(ns, seed)
	w.prepare(t, d)
	var (
		ackedTotal, unknownTotal, opsTotal    int
		killsCheckpoint, killsReset, compacts int
		watch410, watchReplays, eventsSeen    int
	)
	for cycle := 0; cycle < cycles; cycle++ {
		big := cycle%2 == 1
		compacting := cycle%3 == 2
		before := crashStoreStats(t, d)
		startLists := w.list(t, d)

		var mid crashStats
		ops := w.writeUntilKill(t, d, cycle, big, func() {
			time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
			mid = crashStoreStats(t, d)
		})
		if mid.Checkpoints > before.Checkpoints {
			killsCheckpoint++
		}
		if mid.WALResets > before.WALResets {
			killsReset++
		}

		args := enc
		if compacting {
			flag := "--compaction-interval"
			if onEtcd() {
				flag = "--etcd-compaction-interval"
			}
			args = append(args[:len(args):len(args)], flag, "1s")
		}
		d = StartDaemon(t, DaemonOptions{DataDir: dataDir, Args: args})

		res := w.check(cycle, ops, w.list(t, d))
		for _, p := range res.problems {
			t.Errorf("cycle %d: %s", cycle, p)
		}
		opsTotal += len(ops)
		ackedTotal += len(res.acked)
		unknownTotal += res.inFlight

		// A watch from before the kill replays every change since.
		for i, r := range crashResources {
			events, expired := watchUntilTimeout(t, d, fmt.Sprintf(r.collection, ns), startLists[i].rv)
			if expired != "" {
				watch410++
				checkExpired(t, cycle, expired, startLists[i].rv, events)
			} else {
				watchReplays++
				eventsSeen += len(events)
				checkReplay(t, cycle, startLists[i], w.listOne(t, d, i), events, res.ackedOf(i))
			}
		}
		if s := crashStoreStats(t, d); s.CompactedRev > mid.CompactedRev {
			compacts++
		}
		if t.Failed() {
			t.Fatalf("cycle %d failed; seed %d", cycle, seed)
		}
	}
	// Nothing the writers wrote is in the data files in the clear.
	d.Stop()
	clear := regexp.MustCompile(`c[0-9]+-w[0-9]+-[0-9]+`)
	for _, f := range []string{"edgeapi.db", "edgeapi.db-wal"} {
		if onEtcd() {
			break // the objects are in etcd, not encrypted
		}
		b, err := os.ReadFile(filepath.Join(dataDir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if m := clear.Find(b); m != nil {
			t.Errorf("%s holds the written value %q in the clear", f, m)
		}
	}
	t.Logf("crash loop: %d cycles, %d writes sent, %d acknowledged and checked, %d in flight at a kill; "+
		"kills in cycles with a WAL checkpoint %d, with a WAL reset %d; cycles that compacted %d; "+
		"watch replays %d (%d events), correct 410s %d; seed %d",
		cycles, opsTotal, ackedTotal, unknownTotal, killsCheckpoint, killsReset, compacts, watchReplays, eventsSeen, watch410, seed)
}

// writeCrashEncConfig writes an EncryptionConfiguration that encrypts
// both crash resources with aesgcm and returns its path.
func writeCrashEncConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "encryption.yaml")
	data := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [configmaps, crashes.crash.edgeapi.test]\n  providers:\n" +
		encProvider("aesgcm", "crash", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=") + "\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// crashWorkload is the crash loop's writers and their ledger, which
// TestCrashLoop and TestPowerCut share. crashWriters goroutines create,
// update (compare-and-swap on the resourceVersion) and delete ConfigMaps
// and custom resources (crashResources, alternating by writer) in ns, each
// owning crashKeysPerWriter names; the ledger holds what the last
// acknowledged write left of each name.
type crashWorkload struct {
	ns   string
	seed uint64
	// ledger is, per name, the state its last acknowledged write left, as
	// found by the last check.
	ledger map[string]crashKey
	// maxAcked is the highest resourceVersion acknowledged (or found) so
	// far: every later write must get one above it.
	maxAcked int64
}

const (
	crashWriters       = 64
	crashKeysPerWriter = 3
)

func newCrashWorkload(ns string, seed uint64) *crashWorkload {
	return &crashWorkload{ns: ns, seed: seed, ledger: map[string]crashKey{}}
}

func crashName(writer, k int) string { return fmt.Sprintf("w%02d-%d", writer, k) }

// prepare creates the CustomResourceDefinition of the custom resources the
// writers write, and waits until it is established.
func (w *crashWorkload) prepare(t *testing.T, d *Daemon) {
	t.Helper()
	res := doRaw(t, d, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", "", []byte(crashCRD))
	if res.Status != http.StatusCreated {
		t.Fatalf("create the crash CRD: %d %s", res.Status, res.Body)
	}
	waitCRD(t, d, "crashes.crash.edgeapi.test", established)
}

// crashSnapshot is a LIST of one crash resource in a namespace: its
// resourceVersion and each object's value and resourceVersion.
type crashSnapshot struct {
	rv      int64
	objects map[string]crashKey
}

// list lists every crash resource in the workload's namespace, in the
// order of crashResources.
func (w *crashWorkload) list(t *testing.T, d *Daemon) []crashSnapshot {
	t.Helper()
	out, err := w.tryList(d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryList is list returning its error.
func (w *crashWorkload) tryList(d *Daemon) ([]crashSnapshot, error) {
	out := make([]crashSnapshot, len(crashResources))
	for i := range crashResources {
		s, err := tryListCrash(d, crashResources[i], w.ns)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// listOne lists the crash resource crashResources[i].
func (w *crashWorkload) listOne(t *testing.T, d *Daemon, i int) crashSnapshot {
	t.Helper()
	s, err := tryListCrash(d, crashResources[i], w.ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryListCrash(d *Daemon, r crashResource, ns string) (crashSnapshot, error) {
	path := fmt.Sprintf(r.collection, ns)
	got := rawGetNoFatal(d, path)
	if got.Status != http.StatusOK {
		return crashSnapshot{}, fmt.Errorf("list %s: got %d %s, want 200", path, got.Status, got.Body)
	}
	var l unstructured.UnstructuredList
	if err := l.UnmarshalJSON(got.Body); err != nil {
		return crashSnapshot{}, fmt.Errorf("list %s: decode: %w", path, err)
	}
	rv, err := strconv.ParseInt(l.GetResourceVersion(), 10, 64)
	if err != nil {
		return crashSnapshot{}, fmt.Errorf("list %s: resourceVersion %q: %w", path, l.GetResourceVersion(), err)
	}
	s := crashSnapshot{rv: rv, objects: map[string]crashKey{}}
	for _, o := range l.Items {
		v, _, _ := unstructured.NestedString(o.Object, r.valuePath...)
		orv, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
		if err != nil {
			return crashSnapshot{}, fmt.Errorf("list %s: %s: resourceVersion %q", path, o.GetName(), o.GetResourceVersion())
		}
		if o.GetKind() != r.kind || o.GetAPIVersion() != r.apiVersion {
			return crashSnapshot{}, fmt.Errorf("list %s: item %s is a %s %s", path, o.GetName(), o.GetAPIVersion(), o.GetKind())
		}
		s.objects[o.GetName()] = crashKey{exists: true, value: v, rv: orv}
	}
	return s, nil
}

// writeUntilKill runs the writers against d until wait returns, then kills
// the daemon with SIGKILL, waits until it has exited and the writers have
// stopped, and returns every write sent: acknowledged, or in flight at the
// kill. big makes each value 32 KiB. A write that fails before the kill
// fails t.
func (w *crashWorkload) writeUntilKill(t *testing.T, d *Daemon, cycle int, big bool, wait func()) []crashOp {
	t.Helper()
	var (
		killed   atomic.Bool
		mu       sync.Mutex // guards ops and firstErr
		ops      []crashOp
		firstErr error
		wg       sync.WaitGroup
	)
	dyn := d.Dynamic()
	ns := w.ns
	for wr := 0; wr < crashWriters; wr++ {
		ri := crashResourceOf(wr)
		r := crashResources[ri]
		client := dyn.Resource(r.gvr).Namespace(ns)
		wrng := rand.New(rand.NewPCG(w.seed, uint64(cycle*crashWriters+wr+1)))
		own := map[string]crashKey{}
		for k := 0; k < crashKeysPerWriter; k++ {
			own[crashName(wr, k)] = w.ledger[crashName(wr, k)]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; !killed.Load(); i++ {
				name := crashName(wr, wrng.IntN(crashKeysPerWriter))
				cur := own[name]
				op := crashOp{res: ri, name: name, prevRV: cur.rv}
				value := fmt.Sprintf("c%d-w%d-%d", cycle, wr, i)
				if big {
					value += strings.Repeat("x", 32<<10)
				}
				var (
					got *unstructured.Unstructured
					err error
				)
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": r.apiVersion, "kind": r.kind}}
				obj.SetName(name)
				_ = unstructured.SetNestedField(obj.Object, value, r.valuePath...)
				switch {
				case !cur.exists:
					op.kind, op.value = "create", value
					got, err = client.Create(ctx, obj, metav1.CreateOptions{})
				case wrng.IntN(4) == 0:
					op.kind = "delete"
					rv := strconv.FormatInt(cur.rv, 10)
					err = client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
				default:
					op.kind, op.value = "update", value
					obj.SetResourceVersion(strconv.FormatInt(cur.rv, 10))
					got, err = client.Update(ctx, obj, metav1.UpdateOptions{})
				}
				if err != nil {
					mu.Lock()
					if killed.Load() {
						ops = append(ops, op) // in flight at the kill
					} else if firstErr == nil {
						firstErr = fmt.Errorf("%s %s before the kill: %w", op.kind, name, err)
					}
					mu.Unlock()
					return
				}
				op.acked = true
				switch op.kind {
				case "delete":
					own[name] = crashKey{}
				default:
					op.rv = mustRVNoT(got.GetResourceVersion())
					own[name] = crashKey{exists: true, value: op.value, rv: op.rv}
				}
				mu.Lock()
				ops = append(ops, op)
				mu.Unlock()
			}
		}()
	}
	wait()
	killed.Store(true)
	d.Kill()
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("cycle %d: %v", cycle, firstErr)
	}
	return ops
}

// crashCheck is what one check after a restart found.
type crashCheck struct {
	// acked are the cycle's acknowledged writes.
	acked []crashOp
	// inFlight is the number of writes in flight at the kill.
	inFlight int
	// lost is the number of acknowledged writes whose effect is gone:
	// for each object not where its last acknowledged write (or the write
	// in flight) left it, the acknowledged writes of the cycle after the
	// last one whose state it is in (at least 1).
	lost int
	// problems are every discrepancy, lost writes included.
	problems []string
}

// check compares after, the list after a restart, with the ledger and the
// cycle's writes, and then takes after as the ledger:
//   - every object is in the state its last acknowledged write left, or in
//     the state of the write that was in flight at the kill; nothing exists
//     that no one wrote;
//   - resourceVersions never go backwards: every write after the restart
//     gets one above every resourceVersion acknowledged before.
func (w *crashWorkload) check(cycle int, ops []crashOp, after []crashSnapshot) crashCheck {
	var res crashCheck
	// Per object: the states its acknowledged writes of this cycle left,
	// the first being the one before the cycle, and what the write in
	// flight would have made of the last.
	states := map[string][]crashKey{}
	inFlight := map[string]crashOp{}
	minRV := int64(0)
	for _, op := range ops {
		if !op.acked {
			res.inFlight++
			inFlight[op.name] = op
			continue
		}
		res.acked = append(res.acked, op)
		if _, ok := states[op.name]; !ok {
			states[op.name] = []crashKey{w.ledger[op.name]}
		}
		next := crashKey{}
		if op.kind != "delete" {
			next = crashKey{exists: true, value: op.value, rv: op.rv}
			if minRV == 0 || op.rv < minRV {
				minRV = op.rv
			}
		}
		states[op.name] = append(states[op.name], next)
	}
	if minRV != 0 && minRV <= w.maxAcked {
		res.problems = append(res.problems, fmt.Sprintf("a write after the restart got resourceVersion %d, not above %d acknowledged before", minRV, w.maxAcked))
	}

	objects := map[string]crashKey{}
	for _, s := range after {
		maps.Copy(objects, s.objects)
	}
	for wr := 0; wr < crashWriters; wr++ {
		for k := 0; k < crashKeysPerWriter; k++ {
			name := crashName(wr, k)
			seq := states[name]
			if seq == nil {
				seq = []crashKey{w.ledger[name]}
			}
			want := seq[len(seq)-1]
			gotKey, present := objects[name]
			ok := gotKey == want
			if op, inflight := inFlight[name]; !ok && inflight {
				switch op.kind {
				case "delete":
					ok = !present
				default:
					ok = present && gotKey.value == op.value && gotKey.rv > want.rv
				}
			}
			if !ok {
				lost := 1
				for i := len(seq) - 2; i >= 0; i-- {
					if seq[i] == gotKey {
						lost = len(seq) - 1 - i
						break
					}
				}
				res.lost += lost
				flying := ", none in flight"
				if op, ok := inFlight[name]; ok {
					flying = fmt.Sprintf(" or what the %s in flight wrote (v=%.24s…)", op.kind, op.value)
				}
				res.problems = append(res.problems, fmt.Sprintf("%s %s is %s, want %s (last acknowledged%s): %d acknowledged writes lost",
					crashResources[crashResourceOf(wr)].kind, name, brief(gotKey), brief(want), flying, lost))
			}
			w.ledger[name] = gotKey
			delete(objects, name)
		}
	}
	for name := range objects {
		res.problems = append(res.problems, fmt.Sprintf("%s exists, but no one wrote it", name))
	}
	for _, k := range w.ledger {
		w.maxAcked = max(w.maxAcked, k.rv)
	}
	for _, op := range res.acked {
		w.maxAcked = max(w.maxAcked, op.rv)
	}
	return res
}

// ackedOf returns the acknowledged writes of crashResources[i].
func (c crashCheck) ackedOf(i int) []crashOp {
	var out []crashOp
	for _, op := range c.acked {
		if op.res == i {
			out = append(out, op)
		}
	}
	return out
}

func brief(k crashKey) string {
	if !k.exists {
		return "absent"
	}
	v := k.value
	if len(v) > 24 {
		v = v[:24] + "…"
	}
	return fmt.Sprintf("{v=%s rv=%d}", v, k.rv)
}

// cmSnapshot is a LIST of a namespace's ConfigMaps.
type cmSnapshot struct {
	rv      int64
	objects map[string]corev1.ConfigMap
}

func listCMs(t *testing.T, d *Daemon, ns string) cmSnapshot {
	t.Helper()
	s, err := tryListCMs(d, ns)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tryListCMs is listCMs returning its error.
func tryListCMs(d *Daemon, ns string) (cmSnapshot, error) {
	got := rawGetNoFatal(d, "/api/v1/namespaces/"+ns+"/configmaps")
	if got.Status != http.StatusOK {
		return cmSnapshot{}, fmt.Errorf("list %s: got %d %s, want 200", ns, got.Status, got.Body)
	}
	var l corev1.ConfigMapList
	if err := json.Unmarshal(got.Body, &l); err != nil {
		return cmSnapshot{}, fmt.Errorf("list %s: decode: %w", ns, err)
	}
	rv, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
	if err != nil {
		return cmSnapshot{}, fmt.Errorf("list %s: resourceVersion %q: %w", ns, l.ResourceVersion, err)
	}
	s := cmSnapshot{rv: rv, objects: map[string]corev1.ConfigMap{}}
	for _, cm := range l.Items {
		s.objects[cm.Name] = cm
	}
	return s, nil
}

// crashStats are the store counters of /debug/edgeapi/stats.
type crashStats struct {
	Rev, CompactedRev, Checkpoints, WALResets int64
}

func crashStoreStats(t *testing.T, d *Daemon) crashStats {
	t.Helper()
	got := rawGet(t, d, "/debug/edgeapi/stats")
	var s struct {
		Store crashStats `json:"store"`
	}
	if got.Status != 200 {
		t.Fatalf("stats: %d %s", got.Status, got.Body)
	}
	if err := json.Unmarshal(got.Body, &s); err != nil {
		t.Fatalf("stats: %v", err)
	}
	return s.Store
}

// crashEvent is one watch event, as the replay check needs it.
type crashEvent struct {
	typ, name string
	rv        int64
}

// watchUntilTimeout watches the collection at path from rv until the
// server ends the watch (2 s) and returns the events, or the message of a
// 410 ERROR event.
func watchUntilTimeout(t *testing.T, d *Daemon, path string, rv int64) (events []crashEvent, expired string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	url := fmt.Sprintf("%s%s?watch=1&resourceVersion=%d&timeoutSeconds=2", d.URL, path, rv)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("watch from %d: %v", rv, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("watch from %d: status %d", rv, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var ev ledgerWatchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("watch from %d: event %q: %v", rv, sc.Bytes(), err)
		}
		if ev.Type == "ERROR" {
			if ev.Object.Code != http.StatusGone {
				t.Fatalf("watch from %d: ERROR %+v", rv, ev.Object)
			}
			return events, ev.Object.Message
		}
		events = append(events, crashEvent{typ: ev.Type, name: ev.Object.Metadata.Name, rv: mustRV(t, ev.Object.Metadata.ResourceVersion)})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("watch from %d: %v", rv, err)
	}
	return events, ""
}

var tooOld = regexp.MustCompile(`^too old resource version: (\d+) \((\d+)\)$`)

// checkExpired checks a watch from rv that ended with a 410 after events:
// the events came in strictly increasing resourceVersion order above rv,
// and the 410 names the watch's position (rv, or, when the history was
// compacted while the watch replayed it, a revision at or above the last
// event delivered) and a compacted revision above that position.
func checkExpired(t *testing.T, cycle int, msg string, rv int64, events []crashEvent) {
	t.Helper()
	last := rv
	for i, ev := range events {
		if ev.rv <= last {
			t.Errorf("cycle %d: event %d (%s %s) before the 410 has resourceVersion %d, not above %d", cycle, i, ev.typ, ev.name, ev.rv, last)
		}
		last = ev.rv
	}
	m := tooOld.FindStringSubmatch(msg)
	if m == nil {
		t.Errorf("cycle %d: 410 %q, want kube-apiserver's \"too old resource version: N (M)\"", cycle, msg)
		return
	}
	at, _ := strconv.ParseInt(m[1], 10, 64)
	compacted, _ := strconv.ParseInt(m[2], 10, 64)
	if at < last || compacted <= at {
		t.Errorf("cycle %d: 410 %q for a watch from %d after %d events (the last at %d): it must name the watch's position and a compacted revision above it",
			cycle, msg, rv, len(events), last)
	}
}

// checkReplay checks a watch's events from start against the list after
// them and the acknowledged writes.
func checkReplay(t *testing.T, cycle int, start, end crashSnapshot, events []crashEvent, acked []crashOp) {
	t.Helper()
	state := map[string]int64{}
	for name, k := range start.objects {
		state[name] = k.rv
	}
	last := start.rv
	seen := map[int64]crashEvent{}
	deletedAfter := map[string][]int64{}
	for i, ev := range events {
		if ev.rv <= last {
			t.Errorf("cycle %d: event %d (%s %s) has resourceVersion %d, not above %d: reordered or duplicated", cycle, i, ev.typ, ev.name, ev.rv, last)
		}
		last = ev.rv
		seen[ev.rv] = ev
		switch ev.typ {
		case "ADDED", "MODIFIED":
			state[ev.name] = ev.rv
		case "DELETED":
			delete(state, ev.name)
			deletedAfter[ev.name] = append(deletedAfter[ev.name], ev.rv)
		default:
			t.Errorf("cycle %d: event %d of type %q", cycle, i, ev.typ)
		}
	}
	for _, op := range acked {
		switch op.kind {
		case "delete":
			found := false
			for _, rv := range deletedAfter[op.name] {
				found = found || rv > op.prevRV
			}
			if !found {
				t.Errorf("cycle %d: acknowledged delete of %s (after rv %d) has no DELETED event", cycle, op.name, op.prevRV)
			}
		default:
			if ev, ok := seen[op.rv]; !ok || ev.name != op.name {
				t.Errorf("cycle %d: acknowledged %s of %s at rv %d: no such event (gap)", cycle, op.kind, op.name, op.rv)
			}
		}
	}
	if len(state) != len(end.objects) {
		t.Errorf("cycle %d: folding the events gives %d objects, the list after has %d", cycle, len(state), len(end.objects))
	}
	for name, k := range end.objects {
		if got, want := state[name], k.rv; got != want {
			t.Errorf("cycle %d: %s: folded events give rv %d, the list has %d", cycle, name, got, want)
		}
	}
}

// ledgerWatchEvent is a watch event as the ledger checks read it: the
// object's metadata, or an ERROR event's Status code and message.
type ledgerWatchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Message  string            `json:"message"`
		Code     int               `json:"code"`
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"object"`
}
