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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// crashOp is one write a crash-loop writer sent.
type crashOp struct {
	name  string
	kind  string // create, update, delete
	value string // data.v after a create or update
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
	d := StartDaemon(t)
	dataDir := d.DataDir
	createNamespace(t, d.Clientset(), ns)

	w := newCrashWorkload(ns, seed)
	var (
		ackedTotal, unknownTotal, opsTotal    int
		killsCheckpoint, killsReset, compacts int
		watch410, watchReplays, eventsSeen    int
	)
	for cycle := 0; cycle < cycles; cycle++ {
		big := cycle%2 == 1
		compacting := cycle%3 == 2
		before := crashStoreStats(t, d)
		startList := listCMs(t, d, ns)

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

		var args []string
		if compacting {
			args = []string{"--compaction-interval", "1s"}
		}
		d = StartDaemon(t, DaemonOptions{DataDir: dataDir, Args: args})

		res := w.check(cycle, ops, listCMs(t, d, ns))
		for _, p := range res.problems {
			t.Errorf("cycle %d: %s", cycle, p)
		}
		opsTotal += len(ops)
		ackedTotal += len(res.acked)
		unknownTotal += res.inFlight

		// A watch from before the kill replays every change since.
		events, expired := watchUntilTimeout(t, d, ns, startList.rv)
		if expired != "" {
			watch410++
			checkExpired(t, cycle, expired, startList.rv, events)
		} else {
			watchReplays++
			eventsSeen += len(events)
			checkReplay(t, cycle, startList, listCMs(t, d, ns), events, res.acked)
		}
		if s := crashStoreStats(t, d); s.CompactedRev > mid.CompactedRev {
			compacts++
		}
		if t.Failed() {
			t.Fatalf("cycle %d failed; seed %d", cycle, seed)
		}
	}
	t.Logf("crash loop: %d cycles, %d writes sent, %d acknowledged and checked, %d in flight at a kill; "+
		"kills in cycles with a WAL checkpoint %d, with a WAL reset %d; cycles that compacted %d; "+
		"watch replays %d (%d events), correct 410s %d; seed %d",
		cycles, opsTotal, ackedTotal, unknownTotal, killsCheckpoint, killsReset, compacts, watchReplays, eventsSeen, watch410, seed)
}

// crashWorkload is the crash loop's writers and their ledger, which
// TestCrashLoop and TestPowerCut share. crashWriters goroutines create,
// update (compare-and-swap on the resourceVersion) and delete ConfigMaps
// in ns, each owning crashKeysPerWriter names; the ledger holds what the
// last acknowledged write left of each name.
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
	cs := d.Clientset()
	ns := w.ns
	for wr := 0; wr < crashWriters; wr++ {
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
				op := crashOp{name: name, prevRV: cur.rv}
				value := fmt.Sprintf("c%d-w%d-%d", cycle, wr, i)
				if big {
					value += strings.Repeat("x", 32<<10)
				}
				var (
					got *corev1.ConfigMap
					err error
				)
				switch {
				case !cur.exists:
					op.kind, op.value = "create", value
					got, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}, metav1.CreateOptions{})
				case wrng.IntN(4) == 0:
					op.kind = "delete"
					rv := strconv.FormatInt(cur.rv, 10)
					err = cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
				default:
					op.kind, op.value = "update", value
					got, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.FormatInt(cur.rv, 10)}, Data: map[string]string{"v": value}}, metav1.UpdateOptions{})
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
					op.rv = mustRVNoT(got.ResourceVersion)
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
func (w *crashWorkload) check(cycle int, ops []crashOp, after cmSnapshot) crashCheck {
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

	objects := maps.Clone(after.objects)
	for wr := 0; wr < crashWriters; wr++ {
		for k := 0; k < crashKeysPerWriter; k++ {
			name := crashName(wr, k)
			seq := states[name]
			if seq == nil {
				seq = []crashKey{w.ledger[name]}
			}
			want := seq[len(seq)-1]
			got, present := objects[name]
			gotKey := crashKey{}
			if present {
				gotKey = crashKey{exists: true, value: got.Data["v"], rv: mustRVNoT(got.ResourceVersion)}
			}
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
				res.problems = append(res.problems, fmt.Sprintf("%s is %s, want %s (last acknowledged%s): %d acknowledged writes lost",
					name, brief(gotKey), brief(want), flying, lost))
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

// watchUntilTimeout watches ns from rv until the server ends the watch (2 s)
// and returns the events, or the message of a 410 ERROR event.
func watchUntilTimeout(t *testing.T, d *Daemon, ns string, rv int64) (events []crashEvent, expired string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	url := fmt.Sprintf("%s/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%d&timeoutSeconds=2", d.URL, ns, rv)
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
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Message  string            `json:"message"`
				Code     int               `json:"code"`
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"object"`
		}
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
func checkReplay(t *testing.T, cycle int, start, end cmSnapshot, events []crashEvent, acked []crashOp) {
	t.Helper()
	state := map[string]int64{}
	for name, cm := range start.objects {
		state[name] = mustRVNoT(cm.ResourceVersion)
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
	for name, cm := range end.objects {
		if got, want := state[name], mustRVNoT(cm.ResourceVersion); got != want {
			t.Errorf("cycle %d: %s: folded events give rv %d, the list has %d", cycle, name, got, want)
		}
	}
}
