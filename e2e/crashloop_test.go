package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

// crashLoopCycles is how many kill/restart cycles TestCrashLoop runs:
// EDGEAPI_CRASHLOOP_CYCLES, or 10 (CI). scripts/crashloop runs 100.
func crashLoopCycles(t *testing.T) int {
	if v := os.Getenv("EDGEAPI_CRASHLOOP_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("EDGEAPI_CRASHLOOP_CYCLES=%q: want a positive number", v)
		}
		return n
	}
	return 10
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
	cycles := crashLoopCycles(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EDGEAPI_CRASHLOOP_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("EDGEAPI_CRASHLOOP_SEED=%q: %v", v, err)
		}
	}
	t.Logf("crash loop: %d cycles, seed %d (EDGEAPI_CRASHLOOP_SEED reruns it)", cycles, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	const (
		ns            = "crashloop"
		writers       = 64
		keysPerWriter = 3
	)
	d := StartDaemon(t)
	dataDir := d.DataDir
	createNamespace(t, d.Clientset(), ns)

	ledger := map[string]crashKey{}
	var (
		maxAcked                              int64
		ackedTotal, unknownTotal, opsTotal    int
		killsCheckpoint, killsReset, compacts int
		watch410, watchReplays, eventsSeen    int
	)
	for cycle := 0; cycle < cycles; cycle++ {
		big := cycle%2 == 1
		compacting := cycle%3 == 2
		before := crashStoreStats(t, d)
		startList := listCMs(t, d, ns)

		// The writers run until the kill.
		var (
			killed atomic.Bool
			mu     sync.Mutex // guards ops and firstErr
			ops    []crashOp
			wg     sync.WaitGroup
		)
		var firstErr error
		cs := d.Clientset()
		for w := 0; w < writers; w++ {
			wrng := rand.New(rand.NewPCG(seed, uint64(cycle*writers+w+1)))
			own := map[string]crashKey{}
			for k := 0; k < keysPerWriter; k++ {
				name := fmt.Sprintf("w%02d-%d", w, k)
				own[name] = ledger[name]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := context.Background()
				for i := 0; !killed.Load(); i++ {
					name := fmt.Sprintf("w%02d-%d", w, wrng.IntN(keysPerWriter))
					cur := own[name]
					op := crashOp{name: name, prevRV: cur.rv}
					value := fmt.Sprintf("c%d-w%d-%d", cycle, w, i)
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
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		mid := crashStoreStats(t, d)
		killed.Store(true)
		d.Kill()
		wg.Wait()
		if firstErr != nil {
			t.Fatalf("cycle %d: %v", cycle, firstErr)
		}
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

		// The ledger, per object: the last acknowledged state, and what
		// the write in flight would have made of it.
		inFlight := map[string]crashOp{}
		var cycleAcked []crashOp
		minRV := int64(0)
		for _, op := range ops {
			opsTotal++
			if !op.acked {
				unknownTotal++
				inFlight[op.name] = op
				continue
			}
			ackedTotal++
			cycleAcked = append(cycleAcked, op)
			switch op.kind {
			case "delete":
				ledger[op.name] = crashKey{}
			default:
				ledger[op.name] = crashKey{exists: true, value: op.value, rv: op.rv}
				if minRV == 0 || op.rv < minRV {
					minRV = op.rv
				}
			}
		}
		if minRV != 0 && minRV <= maxAcked {
			t.Errorf("cycle %d: a write after the restart got resourceVersion %d, not above %d acknowledged before", cycle, minRV, maxAcked)
		}

		// Every object is where its acknowledged writes (or the one in
		// flight) left it; the list holds nothing else.
		after := listCMs(t, d, ns)
		for w := 0; w < writers; w++ {
			for k := 0; k < keysPerWriter; k++ {
				name := fmt.Sprintf("w%02d-%d", w, k)
				want := ledger[name]
				got, present := after.objects[name]
				gotKey := crashKey{exists: present, value: got.Data["v"], rv: mustRVNoT(got.ResourceVersion)}
				if !present {
					gotKey = crashKey{}
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
					t.Errorf("cycle %d: %s is %+v, want %+v (last acknowledged) or the result of the write in flight %+v", cycle, name, brief(gotKey), brief(want), inFlight[name])
				}
				ledger[name] = gotKey
				delete(after.objects, name)
			}
		}
		for name := range after.objects {
			t.Errorf("cycle %d: %s exists, but no one wrote it", cycle, name)
		}
		for _, k := range ledger {
			maxAcked = max(maxAcked, k.rv)
		}
		for _, op := range cycleAcked {
			maxAcked = max(maxAcked, op.rv)
		}

		// A watch from before the kill replays every change since.
		events, expired := watchUntilTimeout(t, d, ns, startList.rv)
		if expired != "" {
			watch410++
			checkExpired(t, cycle, expired, startList.rv)
		} else {
			watchReplays++
			eventsSeen += len(events)
			checkReplay(t, cycle, startList, listCMs(t, d, ns), events, cycleAcked)
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
	l := rawGet(t, d, "/api/v1/namespaces/"+ns+"/configmaps").cmList(t, "list "+ns)
	s := cmSnapshot{rv: mustRV(t, l.ResourceVersion), objects: map[string]corev1.ConfigMap{}}
	for _, cm := range l.Items {
		s.objects[cm.Name] = cm
	}
	return s
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

// checkExpired checks that a 410 names the watch's resourceVersion and a
// compacted revision above it.
func checkExpired(t *testing.T, cycle int, msg string, rv int64) {
	t.Helper()
	m := tooOld.FindStringSubmatch(msg)
	if m == nil {
		t.Errorf("cycle %d: 410 %q, want kube-apiserver's \"too old resource version: N (M)\"", cycle, msg)
		return
	}
	asked, _ := strconv.ParseInt(m[1], 10, 64)
	compacted, _ := strconv.ParseInt(m[2], 10, 64)
	if asked != rv || compacted <= rv {
		t.Errorf("cycle %d: 410 %q for a watch from %d: the compacted revision must be above it", cycle, msg, rv)
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
