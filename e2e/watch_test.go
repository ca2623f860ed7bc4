package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// watchHang bounds how long a test waits for the next watch event or the end
// of a stream that should come promptly. It is a hang guard, not a
// performance assertion.
const watchHang = 30 * time.Second

// startDaemonArgs is StartDaemon with extra `edgeapi serve` flags (for
// example --compaction-interval). It reuses the harness's Daemon, so
// Kubectl, RESTConfig and the clients work as usual.
func startDaemonArgs(t *testing.T, extra ...string) *Daemon {
	t.Helper()
	bin := edgeapiBin.Path(t)
	dataDir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		d := &Daemon{
			t:          t,
			DataDir:    dataDir,
			Addr:       fmt.Sprintf("127.0.0.1:%d", port),
			Kubeconfig: dataDir + "/kubeconfig-insecure",
			home:       t.TempDir(),
			output:     &logBuffer{},
			exited:     make(chan struct{}),
		}
		d.URL = "http://" + d.Addr
		os.Remove(d.Kubeconfig)
		args := append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--insecure-listen", d.Addr}, extra...)
		d.cmd = exec.Command(bin, args...)
		d.cmd.Stdout = d.output
		d.cmd.Stderr = d.output
		if err := d.cmd.Start(); err != nil {
			t.Fatalf("exec %s: %v", bin, err)
		}
		go func() {
			d.exitErr = d.cmd.Wait()
			close(d.exited)
		}()
		t.Cleanup(func() {
			if err := d.Stop(); err != nil {
				t.Logf("edgeapi on %s: stop: %v", d.Addr, err)
			}
			if t.Failed() {
				t.Logf("edgeapi %v on %s output:\n%s", extra, d.Addr, d.output.String())
			}
		})
		if lastErr = d.waitReady(); lastErr == nil {
			return d
		}
		if !strings.Contains(d.output.String(), "address already in use") {
			break
		}
	}
	t.Fatalf("start edgeapi %v: %v", extra, lastErr)
	return nil
}

// httpResult is a plain HTTP response read in full.
type httpResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// rawGet sends GET d.URL+path with Accept: application/json.
func rawGet(t *testing.T, d *Daemon, path string) httpResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// status decodes a metav1.Status body.
func (r httpResult) status(t *testing.T) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(r.Body, &s); err != nil {
		t.Fatalf("body %s is not a Status: %v", r.Body, err)
	}
	return s
}

// cmList decodes a ConfigMapList body; a non-200 answer fails t.
func (r httpResult) cmList(t *testing.T, what string) corev1.ConfigMapList {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("%s: got %d %s, want 200", what, r.Status, r.Body)
	}
	var l corev1.ConfigMapList
	if err := json.Unmarshal(r.Body, &l); err != nil {
		t.Fatalf("%s: decode list: %v", what, err)
	}
	return l
}

// rawEvent is one event of a JSON watch stream.
type rawEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

func (e rawEvent) configMap(t *testing.T) corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	if err := json.Unmarshal(e.Object, &cm); err != nil {
		t.Fatalf("%s event object %s: %v", e.Type, e.Object, err)
	}
	return cm
}

func (e rawEvent) String() string { return e.Type + " " + string(e.Object) }

// rawWatch is a watch over plain HTTP. Events arrive on a goroutine that
// decodes the stream; Next hands them out one by one.
type rawWatch struct {
	t      *testing.T
	path   string
	Status int
	Header http.Header
	Body   []byte // the body when Status isn't 200

	events chan rawEvent
	end    chan error // the decode error that ended the stream (io.EOF for a clean end)
	cancel context.CancelFunc
}

// openRawWatch starts GET d.URL+path as a stream. A non-200 answer is read
// in full into Body.
func openRawWatch(t *testing.T, d *Daemon, path string) *rawWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: watchHang, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	w := &rawWatch{t: t, path: path, Status: resp.StatusCode, Header: resp.Header, cancel: cancel,
		events: make(chan rawEvent), end: make(chan error, 1)}
	if resp.StatusCode != http.StatusOK {
		w.Body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return w
	}
	go func() {
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev rawEvent
			if err := dec.Decode(&ev); err != nil {
				w.end <- err
				close(w.events)
				return
			}
			select {
			case w.events <- ev:
			case <-ctx.Done():
				w.end <- ctx.Err()
				close(w.events)
				return
			}
		}
	}()
	return w
}

// Next returns the next event, or the error that ended the stream (io.EOF
// for a clean end). It fails t if nothing happens within watchHang.
func (w *rawWatch) Next() (rawEvent, error) {
	w.t.Helper()
	if w.Status != http.StatusOK {
		w.t.Fatalf("watch %s answered %d %s", w.path, w.Status, w.Body)
	}
	select {
	case ev, ok := <-w.events:
		if !ok {
			return rawEvent{}, <-w.end
		}
		return ev, nil
	case <-time.After(watchHang):
		w.t.Fatalf("watch %s: no event and no end of stream within %v", w.path, watchHang)
		return rawEvent{}, nil
	}
}

// MustNext returns the next event and fails t if the stream ended.
func (w *rawWatch) MustNext() rawEvent {
	w.t.Helper()
	ev, err := w.Next()
	if err != nil {
		w.t.Fatalf("watch %s ended (%v), want another event", w.path, err)
	}
	return ev
}

// WantEOF fails t unless the stream ends cleanly with no more events.
func (w *rawWatch) WantEOF() {
	w.t.Helper()
	ev, err := w.Next()
	if err == nil {
		w.t.Fatalf("watch %s: got event %s, want the end of the stream", w.path, ev)
	}
	if err != io.EOF {
		w.t.Fatalf("watch %s ended with %v, want a clean EOF", w.path, err)
	}
}

// Close ends the request.
func (w *rawWatch) Close() { w.cancel() }

// storeStats reads the daemon's /debug/edgeapi/stats store figures.
type storeStats struct {
	Rev          int64
	CompactedRev int64
}

func getStoreStats(t *testing.T, d *Daemon) storeStats {
	t.Helper()
	r := rawGet(t, d, "/debug/edgeapi/stats")
	var s struct{ Store storeStats }
	if r.Status != 200 || json.Unmarshal(r.Body, &s) != nil {
		t.Fatalf("GET /debug/edgeapi/stats: %d %s", r.Status, r.Body)
	}
	return s.Store
}

// waitCompactedPast waits until the daemon's change log is compacted past
// rev, writing a ConfigMap in namespace ns now and then so that there are
// revisions newer than rev to compact to. It fails t with a note on the
// --compaction-interval flag if that doesn't happen within eventually.
func waitCompactedPast(t *testing.T, d *Daemon, cs kubernetes.Interface, ns string, rev int64) int64 {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("compaction-tick-%d", rand.Int64())
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	deadline := time.Now().Add(eventually)
	for i := 1; ; i++ {
		s := getStoreStats(t, d)
		if s.CompactedRev > rev {
			return s.CompactedRev
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change log was not compacted past revision %d within %v (stats: rev %d, compactedRev %d): "+
				"edgeapi serve --compaction-interval 1s doesn't schedule compaction (server bug, or the test needs a compaction hook)",
				rev, eventually, s.Rev, s.CompactedRev)
		}
		time.Sleep(200 * time.Millisecond)
		cm.Data["i"] = strconv.Itoa(i)
		if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
	}
}

func mustRV(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an integer: %v", rv, err)
	}
	return n
}

// histEvent is one change of the model: what a watch must deliver.
type histEvent struct {
	Type   string // ADDED, MODIFIED, DELETED
	Name   string
	RV     int64 // for DELETED, 0 until a watch has shown it
	Data   map[string]string
	Labels map[string]string
	// For DELETED: the deletion revision lies strictly between these (the
	// previous and the next write of the same writer).
	lo, hi int64
}

func (e histEvent) String() string {
	return fmt.Sprintf("%s %s@%d %v %v", e.Type, e.Name, e.RV, e.Data, e.Labels)
}

// history is the model: every change in one namespace in revision order.
type history struct {
	ns     string
	events []histEvent
}

// stateAt is the namespace's content at rev: name -> the last ADDED or
// MODIFIED event at or below rev, for names not deleted by then.
func (h *history) stateAt(rev int64) map[string]histEvent {
	state := map[string]histEvent{}
	for _, e := range h.events {
		if e.RV > rev {
			break
		}
		if e.Type == "DELETED" {
			delete(state, e.Name)
		} else {
			state[e.Name] = e
		}
	}
	return state
}

// after is the events with revision > rev.
func (h *history) after(rev int64) []histEvent {
	for i, e := range h.events {
		if e.RV > rev {
			return h.events[i:]
		}
	}
	return nil
}

// gotEvent is an event as a watch delivered it.
type gotEvent struct {
	Type   string
	Name   string
	RV     int64
	Data   map[string]string
	Labels map[string]string
}

func (e gotEvent) String() string {
	return fmt.Sprintf("%s %s@%d %v %v", e.Type, e.Name, e.RV, e.Data, e.Labels)
}

func gotFromRaw(t *testing.T, ev rawEvent) gotEvent {
	t.Helper()
	if ev.Type == "ERROR" || ev.Type == "BOOKMARK" {
		return gotEvent{Type: ev.Type}
	}
	cm := ev.configMap(t)
	return gotEvent{Type: ev.Type, Name: cm.Name, RV: mustRV(t, cm.ResourceVersion), Data: cm.Data, Labels: cm.Labels}
}

// matchHistory compares got with want; DELETED revisions not yet known are
// checked against their bounds and then learned into want.
func matchHistory(t *testing.T, what string, got []gotEvent, want []histEvent) {
	t.Helper()
	n := max(len(got), len(want))
	bad := 0
	for i := 0; i < n && bad < 5; i++ {
		switch {
		case i >= len(got):
			t.Errorf("%s: event %d: got nothing, want %s", what, i, want[i])
			bad++
			continue
		case i >= len(want):
			t.Errorf("%s: event %d: got %s, want nothing more", what, i, got[i])
			bad++
			continue
		}
		g, w := got[i], &want[i]
		if w.Type == "DELETED" && w.RV == 0 && g.Type == "DELETED" && g.Name == w.Name {
			if g.RV <= w.lo || g.RV >= w.hi {
				t.Errorf("%s: event %d: DELETED %s has resourceVersion %d, want one between the writes before and after it (%d, %d)", what, i, g.Name, g.RV, w.lo, w.hi)
				bad++
				continue
			}
			w.RV = g.RV
		}
		if g.Type != w.Type || g.Name != w.Name || g.RV != w.RV || !equalStrMap(g.Data, w.Data) || !equalStrMap(g.Labels, w.Labels) {
			t.Errorf("%s: event %d: got %s, want %s", what, i, g, w)
			bad++
		}
	}
	if bad > 0 {
		t.Logf("%s: got %d events, want %d", what, len(got), len(want))
	}
}

func equalStrMap(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// modelWriter applies random creates, updates and deletes to a namespace
// one at a time and records them.
type modelWriter struct {
	t     *testing.T
	cs    kubernetes.Interface
	h     *history
	rng   *rand.Rand
	names []string
	live  map[string]*corev1.ConfigMap
	last  int64 // revision of the last write whose revision is known
	// pendingDelete is the index of a DELETED event whose upper bound is
	// the next known revision.
	pendingDelete []int
}

func newModelWriter(t *testing.T, cs kubernetes.Interface, ns string, names int, seed uint64) *modelWriter {
	m := &modelWriter{t: t, cs: cs, h: &history{ns: ns}, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), live: map[string]*corev1.ConfigMap{}}
	for i := 0; i < names; i++ {
		m.names = append(m.names, fmt.Sprintf("cm-%02d", i))
	}
	return m
}

func (m *modelWriter) known(rev int64) {
	for _, i := range m.pendingDelete {
		m.h.events[i].hi = rev
	}
	m.pendingDelete = nil
	m.last = rev
}

// step makes one random change.
func (m *modelWriter) step(i int) {
	t := m.t
	t.Helper()
	ctx := context.Background()
	name := m.names[m.rng.IntN(len(m.names))]
	cms := m.cs.CoreV1().ConfigMaps(m.h.ns)
	cur, exists := m.live[name]
	switch {
	case !exists:
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: stepLabels(i)},
			Data: map[string]string{"v": strconv.Itoa(i), "name": name}}
		got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("step %d: create %s: %v", i, name, err)
		}
		rv := mustRV(t, got.ResourceVersion)
		m.known(rv)
		m.live[name] = got
		m.h.events = append(m.h.events, histEvent{Type: "ADDED", Name: name, RV: rv, Data: got.Data, Labels: got.Labels})
	case m.rng.IntN(10) < 6:
		upd := cur.DeepCopy()
		upd.Data = map[string]string{"v": strconv.Itoa(i), "name": name}
		if m.rng.IntN(3) == 0 {
			upd.Data["extra"] = strings.Repeat("x", m.rng.IntN(200))
		}
		upd.Labels = stepLabels(i)
		got, err := cms.Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("step %d: update %s: %v", i, name, err)
		}
		rv := mustRV(t, got.ResourceVersion)
		if rv <= m.last {
			t.Fatalf("step %d: update %s: resourceVersion %d, not newer than the previous write's %d", i, name, rv, m.last)
		}
		m.known(rv)
		m.live[name] = got
		m.h.events = append(m.h.events, histEvent{Type: "MODIFIED", Name: name, RV: rv, Data: got.Data, Labels: got.Labels})
	default:
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("step %d: delete %s: %v", i, name, err)
		}
		delete(m.live, name)
		m.h.events = append(m.h.events, histEvent{Type: "DELETED", Name: name, Data: cur.Data, Labels: cur.Labels, lo: m.last})
		m.pendingDelete = append(m.pendingDelete, len(m.h.events)-1)
	}
}

// stepLabels are the labels step i writes: parity=even|odd moves objects in
// and out of a parity selector.
func stepLabels(i int) map[string]string {
	p := "even"
	if i%2 == 1 {
		p = "odd"
	}
	return map[string]string{"step": strconv.Itoa(i), "parity": p}
}

// selected is what a watch with a label selector must deliver for the
// changes evs (in order, each name's previous state taken from all, the
// whole history): a change into the selection is ADDED, within it MODIFIED,
// out of it DELETED carrying the last selected state at the new
// resourceVersion, as kube-apiserver's watch cache does.
func selected(all, evs []histEvent, match func(map[string]string) bool) []histEvent {
	prev := map[string]*histEvent{}
	start := len(all) - len(evs)
	for i := 0; i < start; i++ {
		e := all[i]
		if e.Type == "DELETED" {
			delete(prev, e.Name)
		} else {
			prev[e.Name] = &all[i]
		}
	}
	var out []histEvent
	for i := start; i < len(all); i++ {
		e := all[i]
		old := prev[e.Name]
		oldIn := old != nil && match(old.Labels)
		switch {
		case e.Type == "DELETED":
			if oldIn {
				out = append(out, e)
			}
			delete(prev, e.Name)
			continue
		case match(e.Labels) && oldIn:
			out = append(out, histEvent{Type: "MODIFIED", Name: e.Name, RV: e.RV, Data: e.Data, Labels: e.Labels})
		case match(e.Labels):
			out = append(out, histEvent{Type: "ADDED", Name: e.Name, RV: e.RV, Data: e.Data, Labels: e.Labels})
		case oldIn:
			out = append(out, histEvent{Type: "DELETED", Name: e.Name, RV: e.RV, Data: old.Data, Labels: old.Labels})
		}
		prev[e.Name] = &all[i]
	}
	return out
}

// wantSelectedWatches checks label-selected watches from rev against the
// model: "parity in (even,end)" and "parity notin (even)"; the sentinel
// zz-end (parity=end) is in both, so both reads end with it.
func wantSelectedWatches(t *testing.T, d *Daemon, h *history, rev int64) {
	t.Helper()
	for _, sel := range []struct {
		query string
		match func(map[string]string) bool
	}{
		{"parity+in+%28even%2Cend%29", func(l map[string]string) bool { return l["parity"] == "even" || l["parity"] == "end" }},
		{"parity+notin+%28even%29", func(l map[string]string) bool { return l["parity"] != "even" }},
	} {
		path := fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%d&labelSelector=%s", h.ns, rev, sel.query)
		w := openRawWatch(t, d, path)
		matchHistory(t, "GET "+path, readUntilEnd(t, w), selected(h.events, h.after(rev), sel.match))
		w.Close()
	}
}

// finish writes the sentinel ConfigMap "zz-end", whose ADDED event ends
// every watch read of this history, and returns its revision.
func (m *modelWriter) finish() int64 {
	t := m.t
	t.Helper()
	got, err := m.cs.CoreV1().ConfigMaps(m.h.ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "zz-end", Labels: map[string]string{"parity": "end"}}, Data: map[string]string{"end": "true"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create zz-end: %v", err)
	}
	rv := mustRV(t, got.ResourceVersion)
	m.known(rv)
	m.h.events = append(m.h.events, histEvent{Type: "ADDED", Name: "zz-end", RV: rv, Data: got.Data, Labels: got.Labels})
	return rv
}

// readUntilEnd reads a raw watch until the sentinel zz-end's ADDED event.
func readUntilEnd(t *testing.T, w *rawWatch) []gotEvent {
	t.Helper()
	var got []gotEvent
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("watch %s ended (%v) before zz-end's ADDED; got %d events: %v", w.path, err, len(got), got)
		}
		g := gotFromRaw(t, ev)
		got = append(got, g)
		if g.Type == "ERROR" {
			t.Fatalf("watch %s: ERROR event %s", w.path, ev.Object)
		}
		if g.Name == "zz-end" {
			return got
		}
	}
}

// readClientGoUntilEnd reads a client-go watch until zz-end's ADDED event.
func readClientGoUntilEnd(t *testing.T, w watch.Interface, what string) []gotEvent {
	t.Helper()
	defer w.Stop()
	var got []gotEvent
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s: channel closed before zz-end's ADDED; got %v", what, got)
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				t.Fatalf("%s: %s event with %T %v", what, ev.Type, ev.Object, ev.Object)
			}
			g := gotEvent{Type: string(ev.Type), Name: cm.Name, RV: mustRV(t, cm.ResourceVersion), Data: cm.Data, Labels: cm.Labels}
			got = append(got, g)
			if g.Name == "zz-end" {
				return got
			}
		case <-time.After(watchHang):
			t.Fatalf("%s: no event within %v; got %v", what, watchHang, got)
		}
	}
}

// wantListAt checks an Exact list (paged when limit > 0) at rev against the
// model's state at rev.
func wantListAt(t *testing.T, d *Daemon, h *history, rev int64, limit int) {
	t.Helper()
	base := fmt.Sprintf("/api/v1/namespaces/%s/configmaps", h.ns)
	var items []corev1.ConfigMap
	path := fmt.Sprintf("%s?resourceVersion=%d&resourceVersionMatch=Exact", base, rev)
	if limit > 0 {
		path += fmt.Sprintf("&limit=%d", limit)
	}
	for page := 0; ; page++ {
		l := rawGet(t, d, path).cmList(t, "GET "+path)
		if got := mustRV(t, l.ResourceVersion); got != rev {
			t.Errorf("GET %s: list resourceVersion %d, want %d", path, got, rev)
		}
		items = append(items, l.Items...)
		if l.Continue == "" {
			break
		}
		if limit == 0 {
			t.Fatalf("GET %s: continue %q without a limit", path, l.Continue)
		}
		path = fmt.Sprintf("%s?limit=%d&continue=%s", base, limit, l.Continue)
	}
	state := h.stateAt(rev)
	var want []string
	for name, e := range state {
		want = append(want, fmt.Sprintf("%s@%d %v %v", name, e.RV, e.Data, e.Labels))
	}
	sort.Strings(want)
	var got []string
	for _, cm := range items {
		got = append(got, fmt.Sprintf("%s@%s %v %v", cm.Name, cm.ResourceVersion, cm.Data, cm.Labels))
	}
	if !sort.StringsAreSorted(got) {
		t.Errorf("Exact list at %d (limit %d): items not in name order: %v", rev, limit, got)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Exact list at %d (limit %d):\ngot  %v\nwant %v", rev, limit, got, want)
	}
}

// TestWatch_ModelHistory records a few hundred random changes and checks
// that watches from past revisions replay exactly the changes after them
// and that Exact lists show the state at each revision.
func TestWatch_ModelHistory(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "model"
	createNamespace(t, cs, ns)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	m := newModelWriter(t, cs, ns, 20, seed)
	start := mustRV(t, rawGet(t, d, "/api/v1/namespaces/"+ns+"/configmaps").cmList(t, "list").ResourceVersion)
	m.last = start
	for i := 0; i < 300; i++ {
		m.step(i)
	}
	end := m.finish()
	h := m.h

	// The first watch, from before the first change, also learns the
	// revisions of the deletions.
	w := openRawWatch(t, d, fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%d", ns, start))
	matchHistory(t, fmt.Sprintf("watch from %d", start), readUntilEnd(t, w), h.events)
	w.Close()
	for _, e := range h.events {
		if e.RV == 0 {
			t.Fatalf("the first watch didn't show every deletion; stopping")
		}
	}

	rng := rand.New(rand.NewPCG(seed, 1))
	revs := []int64{start, end - 1}
	for _, e := range h.events[:len(h.events)-1] {
		if rng.IntN(10) == 0 {
			revs = append(revs, e.RV) // exactly at a change, including deletions
		}
	}
	for i := 0; i < 10; i++ {
		revs = append(revs, start+rng.Int64N(end-start))
	}

	t.Run("RawWatch", func(t *testing.T) {
		for _, rev := range revs {
			for _, path := range []string{
				fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%d", ns, rev),
				fmt.Sprintf("/api/v1/watch/namespaces/%s/configmaps?resourceVersion=%d", ns, rev),
			} {
				w := openRawWatch(t, d, path)
				matchHistory(t, "GET "+path, readUntilEnd(t, w), h.after(rev))
				w.Close()
			}
		}
	})
	t.Run("ClientGoWatch", func(t *testing.T) {
		for _, rev := range revs {
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(rev, 10)})
			if err != nil {
				t.Fatalf("watch from %d: %v", rev, err)
			}
			what := fmt.Sprintf("client-go watch from %d", rev)
			matchHistory(t, what, readClientGoUntilEnd(t, w, what), h.after(rev))
		}
	})
	t.Run("ExactList", func(t *testing.T) {
		for _, rev := range revs {
			wantListAt(t, d, h, rev, 0)
		}
		for _, rev := range revs[:6] {
			wantListAt(t, d, h, rev, 3)
		}
	})
	t.Run("LabelSelector", func(t *testing.T) {
		for _, rev := range revs[:8] {
			wantSelectedWatches(t, d, h, rev)
		}
	})
	t.Run("AllNamespacesFieldSelector", func(t *testing.T) {
		// A cluster-wide watch narrowed to the namespace sees the same.
		path := fmt.Sprintf("/api/v1/configmaps?watch=1&resourceVersion=%d&fieldSelector=metadata.namespace%%3D%s", start, ns)
		w := openRawWatch(t, d, path)
		matchHistory(t, "GET "+path, readUntilEnd(t, w), h.events)
		w.Close()
	})
}

// TestWatch_FromBeforeTheRing starts watches at revisions that the watch
// cache's ring no longer holds (pushed out by about 75 MiB of later events,
// more than its default 64 MiB) but the change log does: they must replay
// exactly like watches served from the ring.
func TestWatch_FromBeforeTheRing(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "small")
	createNamespace(t, cs, "big")

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	m := newModelWriter(t, cs, "small", 8, seed)
	start := mustRV(t, rawGet(t, d, "/api/v1/namespaces/small/configmaps").cmList(t, "list").ResourceVersion)
	m.last = start
	for i := 0; i < 60; i++ {
		m.step(i)
	}

	// Each update of a 900 KiB ConfigMap is an event of about 1.8 MiB
	// (new and previous value); 42 of them are about 75 MiB.
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"blob": strings.Repeat("a", 900<<10)}}
	big, err := cs.CoreV1().ConfigMaps("big").Create(ctx, big, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create big: %v", err)
	}
	for i := 0; i < 42; i++ {
		big.Data["blob"] = strings.Repeat(string(rune('b'+i%20)), 900<<10)
		if big, err = cs.CoreV1().ConfigMaps("big").Update(ctx, big, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update big %d: %v", i, err)
		}
	}
	for i := 60; i < 80; i++ {
		m.step(i)
	}
	m.finish()
	h := m.h

	w := openRawWatch(t, d, fmt.Sprintf("/api/v1/namespaces/small/configmaps?watch=1&resourceVersion=%d", start))
	matchHistory(t, fmt.Sprintf("watch from %d", start), readUntilEnd(t, w), h.events)
	w.Close()
	for _, i := range []int{0, 5, 20, 40, 59, 65} {
		if i >= len(h.events) || h.events[i].RV == 0 {
			continue
		}
		rev := h.events[i].RV
		w := openRawWatch(t, d, fmt.Sprintf("/api/v1/namespaces/small/configmaps?watch=1&resourceVersion=%d", rev))
		matchHistory(t, fmt.Sprintf("watch from %d", rev), readUntilEnd(t, w), h.after(rev))
		w.Close()
		what := fmt.Sprintf("client-go watch from %d", rev)
		cw, err := cs.CoreV1().ConfigMaps("small").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(rev, 10)})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		matchHistory(t, what, readClientGoUntilEnd(t, cw, what), h.after(rev))
		wantListAt(t, d, h, rev, 0)
		wantSelectedWatches(t, d, h, rev)
	}
}

// TestWatch_LabelSelectorTransitions replays golden scenario s10: leaving a
// watch's label selector is a DELETED event (the last state that matched,
// at the new resourceVersion), entering it is ADDED.
func TestWatch_LabelSelectorTransitions(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "transitions"
	createNamespace(t, cs, ns)
	cms := cs.CoreV1().ConfigMaps(ns)
	rv0 := rawGet(t, d, "/api/v1/namespaces/"+ns+"/configmaps").cmList(t, "list").ResourceVersion

	set := func(cm *corev1.ConfigMap, color, k string) *corev1.ConfigMap {
		t.Helper()
		cm.Labels = map[string]string{"color": color}
		cm.Data = map[string]string{"k": k}
		got, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update x to %s/%s: %v", color, k, err)
		}
		return got
	}
	x1, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"color": "blue"}}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x2 := set(x1.DeepCopy(), "blue", "2")
	x3 := set(x2.DeepCopy(), "red", "3")
	x4 := set(x3.DeepCopy(), "red", "4")
	x5 := set(x4.DeepCopy(), "blue", "5")
	y, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "y", Labels: map[string]string{"color": "green"}}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m := newModelWriter(t, cs, ns, 1, 1)
	m.names = []string{"unused"}
	endRV := m.finish() // zz-end has no color: it is in color!=blue only
	rv := func(cm *corev1.ConfigMap) int64 { return mustRV(t, cm.ResourceVersion) }
	blue := map[string]string{"color": "blue"}
	red := map[string]string{"color": "red"}
	green := map[string]string{"color": "green"}
	k := func(v string) map[string]string { return map[string]string{"k": v} }

	cases := []struct {
		selector string
		want     []histEvent
	}{
		{"color%3Dblue", []histEvent{
			{Type: "ADDED", Name: "x", RV: rv(x1), Data: k("1"), Labels: blue},
			{Type: "MODIFIED", Name: "x", RV: rv(x2), Data: k("2"), Labels: blue},
			{Type: "DELETED", Name: "x", RV: rv(x3), Data: k("2"), Labels: blue},
			{Type: "ADDED", Name: "x", RV: rv(x5), Data: k("5"), Labels: blue},
			{Type: "DELETED", Name: "x", lo: rv(y), hi: endRV, Data: k("5"), Labels: blue},
		}},
		{"color%21%3Dblue", []histEvent{
			{Type: "ADDED", Name: "x", RV: rv(x3), Data: k("3"), Labels: red},
			{Type: "MODIFIED", Name: "x", RV: rv(x4), Data: k("4"), Labels: red},
			{Type: "DELETED", Name: "x", RV: rv(x5), Data: k("4"), Labels: red},
			{Type: "ADDED", Name: "y", RV: rv(y), Data: k("1"), Labels: green},
			{Type: "ADDED", Name: "zz-end", RV: endRV, Data: map[string]string{"end": "true"}, Labels: map[string]string{"parity": "end"}},
		}},
		{"color+in+%28green%2Cred%29", []histEvent{
			{Type: "ADDED", Name: "x", RV: rv(x3), Data: k("3"), Labels: red},
			{Type: "MODIFIED", Name: "x", RV: rv(x4), Data: k("4"), Labels: red},
			{Type: "DELETED", Name: "x", RV: rv(x5), Data: k("4"), Labels: red},
			{Type: "ADDED", Name: "y", RV: rv(y), Data: k("1"), Labels: green},
		}},
	}
	for _, c := range cases {
		path := fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=1&labelSelector=%s&resourceVersion=%s", ns, c.selector, rv0)
		w := openRawWatch(t, d, path)
		var got []gotEvent
		for len(got) < len(c.want) {
			got = append(got, gotFromRaw(t, w.MustNext()))
		}
		w.Close()
		matchHistory(t, "GET "+path, got, c.want)
	}

	// A watch that starts after the last transition sees nothing for x
	// but zz-end only where it matches.
	path := fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=1&labelSelector=color%%3Dblue&resourceVersion=%d&timeoutSeconds=1", ns, endRV)
	w := openRawWatch(t, d, path)
	w.WantEOF()
}

// TestWatch_WatchList checks the watch-list protocol client-go's informers
// use: sendInitialEvents=true gives an ADDED event for every object, then a
// BOOKMARK annotated k8s.io/initial-events-end, then live events.
func TestWatch_WatchList(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "watchlist"
	createNamespace(t, cs, ns)
	want := map[string]string{} // name -> resourceVersion
	var maxRV int64
	for i := 0; i < 5; i++ {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"i": strconv.Itoa(i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[cm.Name] = cm.ResourceVersion
		maxRV = max(maxRV, mustRV(t, cm.ResourceVersion))
	}
	// One update, so that an initial event carries a newer RV than creation.
	cm0, _ := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
	cm0.Data["i"] = "updated"
	cm0, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm0, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want["cm-0"] = cm0.ResourceVersion
	maxRV = mustRV(t, cm0.ResourceVersion)

	for idx, rv := range []string{"", "0", strconv.FormatInt(maxRV-2, 10)} {
		t.Run("rv="+rv, func(t *testing.T) {
			path := fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", ns)
			if rv != "" {
				path += "&resourceVersion=" + rv
			}
			w := openRawWatch(t, d, path)
			defer w.Close()
			got := map[string]string{}
			var names []string
			var ev rawEvent
			for {
				ev = w.MustNext()
				if ev.Type != "ADDED" {
					break
				}
				cm := ev.configMap(t)
				got[cm.Name] = cm.ResourceVersion
				names = append(names, cm.Name)
				if cm.Name == "cm-0" && cm.Data["i"] != "updated" {
					t.Errorf("initial ADDED cm-0 has data %v, want the current state", cm.Data)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("initial ADDED events (name -> resourceVersion) = %v, want %v", got, want)
			}
			if !sort.StringsAreSorted(names) {
				t.Errorf("initial ADDED events in order %v, want key (name) order as kube-apiserver sends them", names)
			}
			if ev.Type != "BOOKMARK" {
				t.Fatalf("after the initial events got %s, want BOOKMARK", ev)
			}
			var bm struct {
				Kind       string `json:"kind"`
				APIVersion string `json:"apiVersion"`
				Metadata   struct {
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(ev.Object, &bm); err != nil {
				t.Fatalf("BOOKMARK object %s: %v", ev.Object, err)
			}
			if bm.Kind != "ConfigMap" || bm.APIVersion != "v1" {
				t.Errorf("BOOKMARK object is %s/%s, want v1/ConfigMap", bm.APIVersion, bm.Kind)
			}
			if bm.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
				t.Errorf("BOOKMARK annotations = %v, want k8s.io/initial-events-end: \"true\"", bm.Metadata.Annotations)
			}
			bmRV := mustRV(t, bm.Metadata.ResourceVersion)
			if bmRV < maxRV {
				t.Errorf("BOOKMARK resourceVersion %d, want at least %d (the newest initial object)", bmRV, maxRV)
			}
			// Live events follow.
			created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("live-%d", idx)}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.CoreV1().ConfigMaps(ns).Delete(ctx, created.Name, metav1.DeleteOptions{})
			for {
				ev = w.MustNext()
				if ev.Type == "BOOKMARK" {
					continue // progress bookmarks may come at any time
				}
				break
			}
			g := gotFromRaw(t, ev)
			if g.Type != "ADDED" || g.Name != created.Name || strconv.FormatInt(g.RV, 10) != created.ResourceVersion {
				t.Errorf("live event: got %s, want ADDED %s@%s", g, created.Name, created.ResourceVersion)
			}
		})
	}
}

// TestWatch_TimeoutSeconds: the server ends a watch with timeoutSeconds
// cleanly (EOF), after replaying what it owes.
func TestWatch_TimeoutSeconds(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "timeout")
	start := rawGet(t, d, "/api/v1/namespaces/timeout/configmaps").cmList(t, "list").ResourceVersion
	cm, err := cs.CoreV1().ConfigMaps("timeout").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := openRawWatch(t, d, "/api/v1/namespaces/timeout/configmaps?watch=1&timeoutSeconds=1&resourceVersion="+start)
	if got := gotFromRaw(t, w.MustNext()); got.Type != "ADDED" || got.Name != "a" || strconv.FormatInt(got.RV, 10) != cm.ResourceVersion {
		t.Errorf("got %s, want ADDED a@%s", got, cm.ResourceVersion)
	}
	w.WantEOF()
	if ct := w.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}

	// client-go: the result channel closes.
	cw, err := cs.CoreV1().ConfigMaps("timeout").Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, TimeoutSeconds: ptr(int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-cw.ResultChan():
		if ok {
			t.Errorf("client-go watch with timeoutSeconds=1 and no changes: got %s %v, want the channel closed", ev.Type, ev.Object)
		}
	case <-time.After(watchHang):
		t.Errorf("client-go watch with timeoutSeconds=1 still open after %v", watchHang)
	}
}

var tooOldRE = regexp.MustCompile(`^too old resource version: (\d+) \((\d+)\)$`)

// TestWatch_Compacted: a watch from a compacted revision is 200, then one
// ERROR event carrying a 410 Expired Status, then EOF — as kube-apiserver's
// watch cache answers. It needs the daemon to compact on its own
// (--compaction-interval 1s).
func TestWatch_Compacted(t *testing.T) {
	t.Parallel()
	d := startDaemonArgs(t, "--compaction-interval", "1s")
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "compacted")
	cm, err := cs.CoreV1().ConfigMaps("compacted").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := mustRV(t, cm.ResourceVersion)
	compacted := waitCompactedPast(t, d, cs, "compacted", old)

	for _, path := range []string{
		fmt.Sprintf("/api/v1/namespaces/compacted/configmaps?watch=1&resourceVersion=%d", old),
		fmt.Sprintf("/api/v1/namespaces/compacted/configmaps?watch=1&resourceVersion=%d&allowWatchBookmarks=true", old),
		fmt.Sprintf("/api/v1/configmaps?watch=1&resourceVersion=%d", old),
	} {
		w := openRawWatch(t, d, path)
		if w.Status != 200 {
			t.Errorf("GET %s: status %d %s, want 200 and an ERROR event", path, w.Status, w.Body)
			continue
		}
		ev := w.MustNext()
		if ev.Type != "ERROR" {
			t.Errorf("GET %s: got %s, want ERROR", path, ev)
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(ev.Object, &st); err != nil {
			t.Fatalf("ERROR object %s: %v", ev.Object, err)
		}
		if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
			t.Errorf("GET %s: ERROR object %s, want a v1 Status Failure 410 Expired", path, ev.Object)
		}
		mm := tooOldRE.FindStringSubmatch(st.Message)
		if mm == nil {
			t.Errorf("GET %s: message %q, want \"too old resource version: %d (N)\"", path, st.Message, old)
		} else if mm[1] != strconv.FormatInt(old, 10) {
			t.Errorf("GET %s: message %q names revision %s, want %d", path, st.Message, mm[1], old)
		} else if n, _ := strconv.ParseInt(mm[2], 10, 64); n < compacted || n <= old {
			t.Errorf("GET %s: message %q: the oldest available revision %d should be at least the compacted revision %d and newer than %d", path, st.Message, n, compacted, old)
		}
		w.WantEOF()
	}

	// client-go reports it as an ERROR event with the Status, then closes.
	cw, err := cs.CoreV1().ConfigMaps("compacted").Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(old, 10)})
	if err != nil {
		t.Fatalf("client-go watch from %d: %v", old, err)
	}
	select {
	case ev := <-cw.ResultChan():
		st, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
			t.Errorf("client-go watch from %d: got %s %v, want ERROR with a 410 Expired Status", old, ev.Type, ev.Object)
		}
	case <-time.After(watchHang):
		t.Errorf("client-go watch from %d: nothing within %v", old, watchHang)
	}
	cw.Stop()
}

// TestWatch_SlowWatcher: a watcher that doesn't read while 1,600 writes
// happen doesn't hold up writers; what it gets, when it reads at last, is a
// non-empty, in-order prefix of the changes with no gaps, and then the end
// of the stream: the server closed it when it fell more than 1,024 events
// behind, as kube-apiserver closes slow watchers. A watcher on the same
// server that keeps reading gets every event in order.
func TestWatch_SlowWatcher(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "slow"
	createNamespace(t, cs, ns)
	start := rawGet(t, d, "/api/v1/namespaces/"+ns+"/configmaps").cmList(t, "list").ResourceVersion

	// A raw connection whose response nobody reads until the writes end.
	conn, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", ns, start, d.Addr)

	// A watcher that reads everything as it comes, on the same server.
	type readResult struct {
		rvs []int64
		err error
	}
	fast := make(chan readResult, 1)
	fastConn, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fastConn.Close()
	fmt.Fprintf(fastConn, "GET /api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", ns, start, d.Addr)

	// 4 writers × 400 updates of 20 KiB: about 32 MiB and 1,600 events,
	// far beyond socket buffers and the 1,024 events a watcher may fall
	// behind before the server closes it.
	const writers, perWriter = 4, 400
	go func() {
		var res readResult
		defer func() { fast <- res }()
		fastConn.SetReadDeadline(time.Now().Add(4 * eventually))
		resp, err := http.ReadResponse(bufio.NewReader(fastConn), nil)
		if err != nil {
			res.err = err
			return
		}
		dec := json.NewDecoder(resp.Body)
		for len(res.rvs) < writers*perWriter {
			var ev rawEvent
			if res.err = dec.Decode(&ev); res.err != nil {
				return
			}
			var cm corev1.ConfigMap
			if res.err = json.Unmarshal(ev.Object, &cm); res.err != nil {
				return
			}
			rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			if err != nil {
				res.err = err
				return
			}
			res.rvs = append(res.rvs, rv)
		}
	}()
	blob := strings.Repeat("z", 20<<10)
	rvs := make([][]int64, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for wi := 0; wi < writers; wi++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", wi)
			cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": "0", "blob": blob}}, metav1.CreateOptions{})
			if err != nil {
				errs <- err
				return
			}
			rvs[wi] = append(rvs[wi], mustRVNoT(cm.ResourceVersion))
			for i := 1; i < perWriter; i++ {
				cm.Data["i"] = strconv.Itoa(i)
				if cm, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					errs <- fmt.Errorf("writer %d update %d: %w", wi, i, err)
					return
				}
				rvs[wi] = append(rvs[wi], mustRVNoT(cm.ResourceVersion))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a write failed while a watcher wasn't reading: %v", err)
	}
	// Every write's revision, in order: what a complete watch delivers.
	var all []int64
	for _, r := range rvs {
		all = append(all, r...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })

	// Now read. Events must be all[0], all[1], ... until the stream ends.
	conn.SetReadDeadline(time.Now().Add(2 * eventually))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read the slow watch's response: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("slow watch: status %d", resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	n := 0
	for n < len(all) {
		var ev rawEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("slow watch: after %d of %d events, neither more events nor the end of the stream", n, len(all))
			}
			t.Logf("slow watch ended after %d of %d events (%v)", n, len(all), err)
			break
		}
		if ev.Type == "ERROR" {
			t.Logf("slow watch: ERROR %s after %d events", ev.Object, n)
			break
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(ev.Object, &cm); err != nil {
			t.Fatalf("event %d: %v", n, err)
		}
		if got := mustRV(t, cm.ResourceVersion); got != all[n] {
			t.Fatalf("slow watch event %d: resourceVersion %d, want %d (events must come in order without gaps)", n, got, all[n])
		}
		n++
	}
	t.Logf("slow watcher got %d of %d events", n, len(all))
	// It was closed as too slow, after a gap-free prefix: not at once, and
	// not after everything (it fell more than 1,024 events behind).
	if n == 0 || n >= len(all) {
		t.Errorf("slow watcher got %d of %d events, want a prefix that ends when the server closes it", n, len(all))
	}

	// The watcher that kept reading got every event, in order.
	res := <-fast
	if res.err != nil {
		t.Fatalf("reading watcher: after %d of %d events: %v", len(res.rvs), len(all), res.err)
	}
	if !slices.Equal(res.rvs, all) {
		t.Errorf("reading watcher: got %d events, want all %d in revision order", len(res.rvs), len(all))
	}

	// The daemon still serves.
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "w0", metav1.GetOptions{}); err != nil {
		t.Errorf("get after the slow watch: %v", err)
	}
}

func mustRVNoT(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// TestWatch_FutureResourceVersion: a watch from a revision the store hasn't
// reached answers 200 and waits; once the store gets there, it delivers the
// changes after that revision.
func TestWatch_FutureResourceVersion(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "future")
	cur := mustRV(t, rawGet(t, d, "/api/v1/namespaces/future/configmaps").cmList(t, "list").ResourceVersion)
	future := cur + 5
	w := openRawWatch(t, d, fmt.Sprintf("/api/v1/namespaces/future/configmaps?watch=1&resourceVersion=%d", future))
	if w.Status != 200 {
		t.Fatalf("watch from future revision %d: status %d %s, want 200", future, w.Status, w.Body)
	}
	var created []*corev1.ConfigMap
	for i := 0; i < 10; i++ {
		cm, err := cs.CoreV1().ConfigMaps("future").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("f%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, cm)
	}
	var want []histEvent
	for _, cm := range created {
		if rv := mustRV(t, cm.ResourceVersion); rv > future {
			want = append(want, histEvent{Type: "ADDED", Name: cm.Name, RV: rv})
		}
	}
	if len(want) == 0 {
		t.Fatalf("no write landed after revision %d", future)
	}
	var got []gotEvent
	for len(got) < len(want) {
		got = append(got, gotFromRaw(t, w.MustNext()))
	}
	matchHistory(t, fmt.Sprintf("watch from future revision %d", future), got, want)
}

// TestWatch_CatchUpWhileWriting opens watches from revisions the ring no
// longer holds while writes continue, so that each watch's change-log
// catch-up hands over to the ring while new events arrive. Every watch
// must still deliver exactly the changes after its start, without a gap or
// a duplicate at the hand-over.
func TestWatch_CatchUpWhileWriting(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, "small")
	createNamespace(t, cs, "big")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	m := newModelWriter(t, cs, "small", 10, seed)
	start := mustRV(t, rawGet(t, d, "/api/v1/namespaces/small/configmaps").cmList(t, "list").ResourceVersion)
	m.last = start
	for i := 0; i < 30; i++ {
		m.step(i)
	}
	// Push everything so far out of the ring (see TestWatch_FromBeforeTheRing).
	big, err := cs.CoreV1().ConfigMaps("big").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"blob": strings.Repeat("a", 900<<10)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 42; i++ {
		big.Data["blob"] = strings.Repeat(string(rune('b'+i%20)), 900<<10)
		if big, err = cs.CoreV1().ConfigMaps("big").Update(ctx, big, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update big %d: %v", i, err)
		}
	}
	type opened struct {
		w   *rawWatch
		rev int64
	}
	var watches []opened
	for i := 30; i < 330; i++ {
		m.step(i)
		if i%15 == 0 {
			rev := start
			if e := m.h.events[rng.IntN(len(m.h.events))]; e.RV != 0 && len(watches) > 0 && rng.IntN(2) == 0 {
				rev = e.RV
			}
			watches = append(watches, opened{openRawWatch(t, d, fmt.Sprintf("/api/v1/namespaces/small/configmaps?watch=1&resourceVersion=%d", rev)), rev})
		}
	}
	m.finish()
	// The first watch is from start: it learns the deletions' revisions.
	sort.SliceStable(watches, func(i, j int) bool { return watches[i].rev < watches[j].rev })
	for _, o := range watches {
		matchHistory(t, fmt.Sprintf("watch from %d", o.rev), readUntilEnd(t, o.w), m.h.after(o.rev))
		o.w.Close()
	}
}

// TestWatch_WatchListPaged: a watch-list whose objects add up to many of
// the store's pages (200 ConfigMaps of 50 KiB, 10 MB) sends them page by
// page at the revision the watch started at: writes made while the client
// has read only the first event (the daemon then blocks on the
// connection, pages behind) do not show in the initial events, which are
// exactly the objects as they were, in key order; they come after the
// initial-events-end BOOKMARK as live events.
func TestWatch_WatchListPaged(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "watchlist-paged"
	createNamespace(t, cs, ns)
	pad := strings.Repeat("0123456789", 5<<10) // 50 KiB
	const n = 200
	want := map[string]string{}
	for i := range n {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)}, Data: map[string]string{"pad": pad}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[cm.Name] = cm.ResourceVersion
	}
	w := openRawWatch(t, d, "/api/v1/namespaces/"+ns+"/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	defer w.Close()
	first := w.MustNext()
	if first.Type != "ADDED" {
		t.Fatalf("first event %s, want ADDED", first)
	}
	// Change the end of the list while the daemon is still sending it.
	last := fmt.Sprintf("cm-%03d", n-1)
	upd, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, last, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upd.Data = map[string]string{"pad": "changed"}
	if upd, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := fmt.Sprintf("cm-%03d", n-2)
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	added, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "zz-late"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	var names []string
	ev := first
	for ev.Type == "ADDED" {
		cm := ev.configMap(t)
		got[cm.Name] = cm.ResourceVersion
		names = append(names, cm.Name)
		if cm.Data["pad"] != pad {
			t.Errorf("initial %s has the data written after the watch started", cm.Name)
		}
		ev = w.MustNext()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("initial events: %d objects, want the %d there were when the watch started (as of then)", len(got), len(want))
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("initial events not in key order")
	}
	if ev.Type != "BOOKMARK" {
		t.Fatalf("after the initial events got %s, want the initial-events-end BOOKMARK", ev)
	}
	var live []string
	for len(live) < 3 {
		ev = w.MustNext()
		if ev.Type == "BOOKMARK" {
			continue
		}
		cm := ev.configMap(t)
		live = append(live, ev.Type+" "+cm.Name+" "+cm.ResourceVersion)
	}
	wantLive := []string{"MODIFIED " + last + " " + upd.ResourceVersion, "DELETED " + gone, "ADDED zz-late " + added.ResourceVersion}
	if len(live) != 3 || live[0] != wantLive[0] || !strings.HasPrefix(live[1], wantLive[1]+" ") || live[2] != wantLive[2] {
		t.Errorf("live events after the bookmark = %q, want %q", live, wantLive)
	}
}
