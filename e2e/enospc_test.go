package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// enospcAnswer classifies one answer to a write on a file system that may
// be full.
type enospcAnswer int

const (
	answerOK      enospcAnswer = iota // 2xx: acknowledged
	answerNoSpace                     // the clear no-space refusal
	answerBad                         // anything else: a test failure
)

// classifyNoSpace checks an answer that is not 2xx: it must be the
// no-space refusal, a 500 metav1.Status saying the disk is full, with
// Retry-After. It returns answerBad and why otherwise.
func classifyNoSpace(status int, header http.Header, body []byte) (enospcAnswer, string) {
	if status >= 200 && status < 300 {
		return answerOK, ""
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		return answerBad, fmt.Sprintf("%d with a body that is not a Status: %.200s", status, body)
	}
	if status != http.StatusInternalServerError || st.Code != 500 || st.Reason != metav1.StatusReasonInternalError ||
		!strings.Contains(st.Message, "database space exceeded: the file system holding the data directory is full") {
		return answerBad, fmt.Sprintf("%d Status %s %q, want the no-space 500", status, st.Reason, st.Message)
	}
	if got := header.Get("Retry-After"); got != "1" {
		return answerBad, fmt.Sprintf("no-space 500 with Retry-After %q, want \"1\"", got)
	}
	return answerNoSpace, ""
}

// enospcRun is one run of the ENOSPC writers: the crash loop's 64 writers
// (ConfigMaps and custom resources, each writer its own three names, its
// updates and deletes conditional on the resourceVersion it last got) over
// raw HTTP, so that every answer is seen as sent (client-go would retry
// the 500s with Retry-After by itself).
type enospcRun struct {
	mu       sync.Mutex // guards ops and problems
	ops      []crashOp
	problems []string
	acked    atomic.Int64
	refused  atomic.Int64
}

// writeENOSPC runs w's writers against d until each is done: until stop
// returns true for the answers it has seen so far (acked writes and
// no-space refusals). A refused write is not in the returned ops: the
// ledger check then requires that it changed nothing. After a refusal a
// writer waits 20 ms (the refusal's Retry-After is 1 s; the test wants to
// see the state change quickly). Values are 16 KiB. Every transport error
// or other answer is a problem, and stops that writer.
func (w *crashWorkload) writeENOSPC(d *Daemon, phase int, stop func(acked, refused int) bool) *enospcRun {
	run := &enospcRun{}
	var wg sync.WaitGroup
	client := d.HTTPClient()
	deadline := time.Now().Add(2 * eventually)
	for wr := 0; wr < crashWriters; wr++ {
		ri := crashResourceOf(wr)
		r := crashResources[ri]
		wrng := rand.New(rand.NewPCG(w.seed, uint64(phase*crashWriters+wr+1)))
		own := map[string]crashKey{}
		for k := 0; k < crashKeysPerWriter; k++ {
			own[crashName(wr, k)] = w.ledger[crashName(wr, k)]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			problem := func(format string, args ...any) {
				run.mu.Lock()
				run.problems = append(run.problems, fmt.Sprintf("writer %d: ", wr)+fmt.Sprintf(format, args...))
				run.mu.Unlock()
			}
			acked, refused := 0, 0
			for i := 0; !stop(acked, refused); i++ {
				if time.Now().After(deadline) {
					problem("not done after %v (%d acknowledged, %d refused)", 2*eventually, acked, refused)
					return
				}
				name := crashName(wr, wrng.IntN(crashKeysPerWriter))
				cur := own[name]
				op := crashOp{res: ri, name: name, prevRV: cur.rv}
				value := fmt.Sprintf("c%d-w%d-%d", phase, wr, i) + strings.Repeat("x", 16<<10)
				obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": r.apiVersion, "kind": r.kind}}
				obj.SetName(name)
				_ = unstructured.SetNestedField(obj.Object, value, r.valuePath...)
				collection := fmt.Sprintf(r.collection, w.ns)
				var method, path string
				var body []byte
				switch {
				case !cur.exists:
					op.kind, op.value = "create", value
					method, path = http.MethodPost, collection
				case wrng.IntN(4) == 0:
					op.kind = "delete"
					method, path = http.MethodDelete, collection+"/"+name
					body = []byte(fmt.Sprintf(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"%d"}}`, cur.rv))
				default:
					op.kind, op.value = "update", value
					method, path = http.MethodPut, collection+"/"+name
					obj.SetResourceVersion(strconv.FormatInt(cur.rv, 10))
				}
				if body == nil {
					body, _ = obj.MarshalJSON()
				}
				status, header, resp, err := sendENOSPC(client, method, d.URL+path, body)
				if err != nil {
					problem("%s %s: %v", op.kind, name, err)
					return
				}
				kind, why := classifyNoSpace(status, header, resp)
				switch kind {
				case answerBad:
					problem("%s %s: %s", op.kind, name, why)
					return
				case answerNoSpace:
					refused++
					run.refused.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				acked++
				run.acked.Add(1)
				op.acked = true
				if op.kind == "delete" {
					own[name] = crashKey{}
				} else {
					var got unstructured.Unstructured
					if err := got.UnmarshalJSON(resp); err != nil {
						problem("%s %s: decode the answer: %v", op.kind, name, err)
						return
					}
					op.rv = mustRVNoT(got.GetResourceVersion())
					own[name] = crashKey{exists: true, value: op.value, rv: op.rv}
				}
				run.mu.Lock()
				run.ops = append(run.ops, op)
				run.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return run
}

// sendENOSPC sends one request and reads the whole answer.
func sendENOSPC(c *http.Client, method, url string, body []byte) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// checkLedger lists the writers' objects on d and checks them against the
// ledger and run's acknowledged writes: each object is exactly where its
// last acknowledged write left it (a refused write changed nothing), and
// nothing else exists.
func (w *crashWorkload) checkLedger(t *testing.T, d *Daemon, phase int, run *enospcRun) int {
	t.Helper()
	var ops []crashOp
	if run != nil {
		for _, p := range run.problems {
			t.Errorf("phase %d: %s", phase, p)
		}
		ops = run.ops
	}
	res := w.check(phase, ops, w.list(t, d))
	for _, p := range res.problems {
		t.Errorf("phase %d: %s", phase, p)
	}
	return len(res.acked)
}

// noSpaceStats returns the store's no-space figures from
// /debug/edgeapi/stats.
func noSpaceStats(t *testing.T, d *Daemon) (s struct {
	NoSpace        bool
	NoSpaceEntered int64
}) {
	t.Helper()
	got := rawGet(t, d, "/debug/edgeapi/stats")
	var body struct {
		Store *json.RawMessage `json:"store"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil || body.Store == nil {
		t.Fatalf("stats: %d %s (%v)", got.Status, got.Body, err)
	}
	if err := json.Unmarshal(*body.Store, &s); err != nil {
		t.Fatalf("stats: %v", err)
	}
	return s
}

// TestENOSPC fills the small file system (a tmpfs the test mounts) that
// holds the data dir with the daemon's own writes: the crash loop's 64
// writers, ConfigMaps and custom resources of 16 KiB, until every writer
// has been refused. It checks, with the crash loop's ledger:
//   - every write got either its 2xx or the clear no-space 500 Status
//     (with Retry-After), never a connection error or another answer, and
//     the daemon stays up;
//   - every acknowledged write is there, and no refused one changed
//     anything;
//   - stopped on the full disk, the data dir passes `edgeapi check`, and
//     the daemon starts again there (with the test's 12 MiB of slack
//     freed, see below; TestDiskFull restarts with no room at all) and
//     serves the same state, and the writers fill the disk again until
//     refused;
//   - once the file system is made larger (remount), writes succeed again
//     with no restart, and the state after a last stop passes `edgeapi
//     check` and restarts with every acknowledged write.
func TestENOSPC(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	const ns = "enospc"
	mnt := mountTmpfs(t, 40<<20)
	dataDir := filepath.Join(mnt, "data")
	// The harness removes the kubeconfig it waits for before each start,
	// which a real data dir keeps (the daemon overwrites it in place on
	// a full disk, and starts without one if it cannot: then the harness
	// would wait for it in vain). slack, removed before the restart
	// after the stop on the full disk, leaves room for the new one
	// beside what the store's start takes: opening a database whose last
	// checkpoint failed for space took 4 MiB in one run. TestDiskFull
	// restarts with no room at all.
	slack := filepath.Join(mnt, "slack")
	if err := os.WriteFile(slack, make([]byte, 12<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := DaemonOptions{DataDir: dataDir, Args: []string{"--disk-reserve", "2Mi"}}
	d := StartDaemon(t, opts)
	createNamespace(t, d.Clientset(), ns)
	w := newCrashWorkload(ns, envSeed(t, "EDGEAPI_ENOSPC_SEED"))
	w.prepare(t, d)

	// 1. Fill the disk: each writer goes on until it has been refused
	// three times.
	run := w.writeENOSPC(d, 1, func(_, refused int) bool { return refused >= 3 })
	t.Logf("filling: %d writes acknowledged, %d refused for space", run.acked.Load(), run.refused.Load())
	if run.refused.Load() == 0 {
		t.Fatalf("the disk never filled: %d writes acknowledged", run.acked.Load())
	}
	checked := w.checkLedger(t, d, 1, run)
	if got := rawGet(t, d, "/readyz"); got.Status != http.StatusOK {
		t.Errorf("/readyz on a full disk: %d %s", got.Status, got.Body)
	}
	// (The space monitor may have left the state again by now: it
	// compacts the change log and vacuums while the disk is full.)
	if st := noSpaceStats(t, d); st.NoSpaceEntered == 0 {
		t.Errorf("stats after filling the disk: NoSpaceEntered is 0")
	}

	// 2. A clean stop on the full disk; check; a start on it.
	if err := d.Stop(); err != nil {
		t.Fatalf("stop on a full disk: %v", err)
	}
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", dataDir); code != 0 {
		t.Errorf("edgeapi check on the full disk: exit %d: %s%s", code, out, errOut)
	}
	if err := os.Remove(slack); err != nil {
		t.Fatal(err)
	}
	d = StartDaemon(t, opts)
	t.Logf("restarted with the slack freed: no-space state %v", noSpaceStats(t, d).NoSpace)
	w.checkLedger(t, d, 2, nil)
	run = w.writeENOSPC(d, 2, func(_, refused int) bool { return refused >= 1 })
	checked += w.checkLedger(t, d, 2, run)

	// 3. Room again, without a restart: every writer gets five writes
	// acknowledged.
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d,mode=0700", 128<<20)); err != nil {
		t.Fatalf("remount the tmpfs larger: %v", err)
	}
	run = w.writeENOSPC(d, 3, func(acked, _ int) bool { return acked >= 5 })
	t.Logf("after the remount: %d writes acknowledged, %d refused while the store noticed", run.acked.Load(), run.refused.Load())
	checked += w.checkLedger(t, d, 3, run)

	// 4. Stop, check, start: everything acknowledged is there.
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", dataDir); code != 0 {
		t.Errorf("edgeapi check after the disk was full: exit %d: %s%s", code, out, errOut)
	}
	d = StartDaemon(t, opts)
	w.checkLedger(t, d, 4, nil)
	if n := d.output.Panics(); n > 0 {
		t.Errorf("the daemon logged %d panics", n)
	}
	t.Logf("%d acknowledged writes checked against the ledger; seed %d", checked, w.seed)
}
