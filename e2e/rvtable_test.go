package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantInvalidListOptions checks a 422 for bad ListOptions, built the way
// kube-apiserver builds it (NewInvalid on meta.k8s.io ListOptions).
func wantInvalidListOptions(t *testing.T, what string, r httpResult, errs ...*field.Error) {
	t.Helper()
	want := apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", errs).ErrStatus
	want.Kind, want.APIVersion = "Status", "v1"
	if r.Status != 422 {
		t.Errorf("%s: got %d %s, want 422 %q", what, r.Status, r.Body, want.Message)
		return
	}
	got := r.status(t)
	if !reflect.DeepEqual(got, want) {
		wb, _ := json.Marshal(want)
		t.Errorf("%s:\ngot  %s\nwant %s", what, r.Body, wb)
	}
}

var (
	rvMatchPath   = field.NewPath("resourceVersionMatch")
	errMatchNoRV  = field.Forbidden(rvMatchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided")
	errMatchCont  = field.Forbidden(rvMatchPath, "resourceVersionMatch is forbidden when continue is provided")
	errExactZero  = field.Forbidden(rvMatchPath, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`)
	errSendForLst = field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list")
)

// rvFixture is the content the table tests read: a (updated once), b, c.
type rvFixture struct {
	ns                   string
	rvA1, rvB, rvA2, rvC int64
}

func setupRVFixture(t *testing.T, d *Daemon, ns string) rvFixture {
	t.Helper()
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, ns)
	cms := cs.CoreV1().ConfigMaps(ns)
	f := rvFixture{ns: ns}
	a, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "a1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.rvA1 = mustRV(t, a.ResourceVersion)
	b, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Data: map[string]string{"k": "b1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.rvB = mustRV(t, b.ResourceVersion)
	a.Data["k"] = "a2"
	if a, err = cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.rvA2 = mustRV(t, a.ResourceVersion)
	c, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "c1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.rvC = mustRV(t, c.ResourceVersion)
	return f
}

// listShape is what a table cell's answer must look like.
type listShape struct {
	items     string // "name=k name=k ..."
	rv        int64  // exact list resourceVersion, or 0 for "at least minRV"
	minRV     int64
	cont      bool   // a continue token is present
	remaining *int64 // remainingItemCount
}

func shapeOf(l corev1.ConfigMapList) string {
	s := ""
	for i, cm := range l.Items {
		if i > 0 {
			s += " "
		}
		s += cm.Name + "=" + cm.Data["k"]
	}
	return s
}

func wantShape(t *testing.T, what string, r httpResult, want listShape) corev1.ConfigMapList {
	t.Helper()
	l := r.cmList(t, what)
	if got := shapeOf(l); got != want.items {
		t.Errorf("%s: items %q, want %q", what, got, want.items)
	}
	rv := mustRV(t, l.ResourceVersion)
	if want.rv != 0 && rv != want.rv {
		t.Errorf("%s: list resourceVersion %d, want exactly %d", what, rv, want.rv)
	}
	if want.rv == 0 && rv < want.minRV {
		t.Errorf("%s: list resourceVersion %d, want at least %d", what, rv, want.minRV)
	}
	if (l.Continue != "") != want.cont {
		t.Errorf("%s: continue %q, want a token: %v", what, l.Continue, want.cont)
	}
	if got := l.RemainingItemCount; (got == nil) != (want.remaining == nil) || got != nil && *got != *want.remaining {
		t.Errorf("%s: remainingItemCount %v, want %v", what, deref(got), deref(want.remaining))
	}
	return l
}

// TestList_ResourceVersionTable walks every cell of the LIST table in the
// API concepts page (resourceVersion unset / "0" / specific ×
// resourceVersionMatch unset / Exact / NotOlderThan × no limit / limit /
// continue), with kube-apiserver 1.36's answers (golden s04, s05, s06).
func TestList_ResourceVersionTable(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	f := setupRVFixture(t, d, "rvtable")
	base := "/api/v1/namespaces/" + f.ns + "/configmaps"
	get := func(q string) httpResult { return rawGet(t, d, base+"?"+q) }
	R := strconv.FormatInt(f.rvB, 10) // state at R: a=a1, b=b1
	latest := "a=a2 b=b1 c=c1"
	atR := "a=a1 b=b1"
	one, two := ptr(int64(1)), ptr(int64(2))

	// A continue token from a paged list at R (Exact via limit + RV).
	tokR := wantShape(t, "rv=R&limit=1", get("resourceVersion="+R+"&limit=1"), listShape{items: "a=a1", rv: f.rvB, cont: true, remaining: one}).Continue
	// A continue token from a paged latest list.
	tokLatest := wantShape(t, "limit=1", get("limit=1"), listShape{items: "a=a2", minRV: f.rvC, cont: true, remaining: two}).Continue
	esc := url.QueryEscape

	t.Run("MatchUnset", func(t *testing.T) {
		// limit unset: Most Recent / Any / Not older than.
		wantShape(t, "no rv", get(""), listShape{items: latest, minRV: f.rvC})
		wantShape(t, "rv=0", get("resourceVersion=0"), listShape{items: latest, minRV: f.rvC})
		wantShape(t, "rv=R", get("resourceVersion="+R), listShape{items: latest, minRV: f.rvB})
		// limit=n, continue unset: Most Recent (paged) / Any (limit
		// ignored, served from the watch cache) / Exact.
		wantShape(t, "rv=0&limit=1", get("resourceVersion=0&limit=1"), listShape{items: latest, minRV: f.rvC})
		wantShape(t, "rv=R&limit=2", get("resourceVersion="+R+"&limit=2"), listShape{items: atR, rv: f.rvB})
		// limit=n, continue=token: Continue Token, Exact / the same (rv=0
		// is accepted, and the cache ignores the limit) / 400.
		wantShape(t, "continue=tokR", get("limit=1&continue="+esc(tokR)), listShape{items: "b=b1", rv: f.rvB})
		wantShape(t, "continue=tokLatest", get("limit=1&continue="+esc(tokLatest)), listShape{items: "b=b1", minRV: f.rvC, cont: true, remaining: one})
		wantShape(t, "rv=0&continue=tokLatest", get("resourceVersion=0&limit=1&continue="+esc(tokLatest)), listShape{items: "b=b1 c=c1", minRV: f.rvC})
		r := get("resourceVersion=" + R + "&limit=1&continue=" + esc(tokR))
		if st := r.status(t); r.Status != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != "specifying resource version is not allowed when using continue" {
			t.Errorf("rv=R&continue: got %d %s, want 400 BadRequest \"specifying resource version is not allowed when using continue\"", r.Status, r.Body)
		}
	})
	t.Run("MatchExact", func(t *testing.T) {
		wantInvalidListOptions(t, "Exact, no rv", get("resourceVersionMatch=Exact"), errMatchNoRV)
		wantInvalidListOptions(t, "Exact, no rv, limit", get("resourceVersionMatch=Exact&limit=1"), errMatchNoRV)
		wantInvalidListOptions(t, "Exact, rv=0", get("resourceVersionMatch=Exact&resourceVersion=0"), errExactZero)
		wantInvalidListOptions(t, "Exact, rv=0, limit", get("resourceVersionMatch=Exact&resourceVersion=0&limit=1"), errExactZero)
		wantShape(t, "Exact, rv=R", get("resourceVersionMatch=Exact&resourceVersion="+R), listShape{items: atR, rv: f.rvB})
		l := wantShape(t, "Exact, rv=R, limit=1", get("resourceVersionMatch=Exact&resourceVersion="+R+"&limit=1"), listShape{items: "a=a1", rv: f.rvB, cont: true, remaining: one})
		wantShape(t, "continue from Exact", get("limit=1&continue="+esc(l.Continue)), listShape{items: "b=b1", rv: f.rvB})
		// Exact at the revision of a's first version, before b existed.
		wantShape(t, "Exact, rv=rvA1", get(fmt.Sprintf("resourceVersionMatch=Exact&resourceVersion=%d", f.rvA1)), listShape{items: "a=a1", rv: f.rvA1})
		// With continue: forbidden.
		wantInvalidListOptions(t, "Exact, continue", get("resourceVersionMatch=Exact&limit=1&continue="+esc(tokR)), errMatchNoRV, errMatchCont)
		wantInvalidListOptions(t, "Exact, rv=R, continue", get("resourceVersionMatch=Exact&resourceVersion="+R+"&limit=1&continue="+esc(tokR)), errMatchCont)
	})
	t.Run("MatchNotOlderThan", func(t *testing.T) {
		wantInvalidListOptions(t, "NotOlderThan, no rv", get("resourceVersionMatch=NotOlderThan"), errMatchNoRV)
		wantInvalidListOptions(t, "NotOlderThan, no rv, limit", get("resourceVersionMatch=NotOlderThan&limit=1"), errMatchNoRV)
		wantShape(t, "NotOlderThan, rv=0", get("resourceVersionMatch=NotOlderThan&resourceVersion=0"), listShape{items: latest, minRV: f.rvC})
		wantShape(t, "NotOlderThan, rv=0, limit=1", get("resourceVersionMatch=NotOlderThan&resourceVersion=0&limit=1"), listShape{items: latest, minRV: f.rvC})
		wantShape(t, "NotOlderThan, rv=R", get("resourceVersionMatch=NotOlderThan&resourceVersion="+R), listShape{items: latest, minRV: f.rvB})
		l := wantShape(t, "NotOlderThan, rv=R, limit=1", get("resourceVersionMatch=NotOlderThan&resourceVersion="+R+"&limit=1"), listShape{items: "a=a2", minRV: f.rvC, cont: true, remaining: two})
		wantShape(t, "continue from NotOlderThan", get("limit=2&continue="+esc(l.Continue)), listShape{items: "b=b1 c=c1", rv: mustRV(t, l.ResourceVersion)})
		wantInvalidListOptions(t, "NotOlderThan, continue", get("resourceVersionMatch=NotOlderThan&limit=1&continue="+esc(tokR)), errMatchNoRV, errMatchCont)
	})
	t.Run("Invalid", func(t *testing.T) {
		wantInvalidListOptions(t, "match=Sometimes", get("resourceVersion="+R+"&resourceVersionMatch=Sometimes"),
			field.NotSupported(rvMatchPath, metav1.ResourceVersionMatch("Sometimes"), []string{"Exact", "NotOlderThan", ""}))
		wantInvalidListOptions(t, "sendInitialEvents on a list", get("sendInitialEvents=true"), errSendForLst)
		for _, rv := range []string{"abc", "-1"} {
			r := get("resourceVersion=" + rv)
			want := fmt.Sprintf("invalid resource version: resourceVersion: Invalid value: %q: strconv.ParseUint: parsing %q: invalid syntax", rv, rv)
			if st := r.status(t); r.Status != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != want || st.Code != 400 {
				t.Errorf("rv=%s: got %d %s, want 400 BadRequest %q", rv, r.Status, r.Body, want)
			}
		}
	})
	t.Run("TooLarge", func(t *testing.T) {
		// kube-apiserver waits about 3 s for the revision, then answers 504
		// with Retry-After: 1. GET and LIST (any match) alike.
		paths := []string{
			base + "/a?resourceVersion=999999999",
			base + "?resourceVersion=999999999",
			base + "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan",
			base + "?resourceVersion=999999999&resourceVersionMatch=Exact",
		}
		results := make([]httpResult, len(paths))
		var wg sync.WaitGroup
		for i, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = rawGetNoFatal(d, p)
			}()
		}
		wg.Wait()
		re := regexp.MustCompile(`^Timeout: Too large resource version: 999999999, current: (\d+)$`)
		for i, r := range results {
			if r.Status != 504 || r.Header.Get("Retry-After") != "1" {
				t.Errorf("GET %s: got %d Retry-After %q %s, want 504 with Retry-After: 1", paths[i], r.Status, r.Header.Get("Retry-After"), r.Body)
				continue
			}
			st := r.status(t)
			m := re.FindStringSubmatch(st.Message)
			wantDetails := &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}, RetryAfterSeconds: 1}
			if m == nil || st.Reason != metav1.StatusReasonTimeout || st.Code != 504 || !reflect.DeepEqual(st.Details, wantDetails) {
				t.Errorf("GET %s: got %s, want Status 504 Timeout \"Timeout: Too large resource version: 999999999, current: N\" with cause ResourceVersionTooLarge and retryAfterSeconds 1", paths[i], r.Body)
			} else if cur, _ := strconv.ParseInt(m[1], 10, 64); cur < f.rvC {
				t.Errorf("GET %s: current revision in the message is %d, want at least %d", paths[i], cur, f.rvC)
			}
		}
	})
}

// rawGetNoFatal is rawGet for use off the test goroutine: a transport
// error comes back as status 0 with the error as the body.
func rawGetNoFatal(d *Daemon, path string) httpResult {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+path, nil)
	if err != nil {
		return httpResult{Body: []byte(err.Error())}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpResult{Body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpResult{Body: []byte(err.Error())}
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// TestWatch_ResourceVersionTable walks the WATCH table: resourceVersion
// unset and "0" start with synthetic ADDED events for the current state (in
// key order, each with its own resourceVersion) and then changes; a
// specific resourceVersion gives only the changes after it. sendInitialEvents
// and resourceVersionMatch follow kube-apiserver's validation.
func TestWatch_ResourceVersionTable(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	f := setupRVFixture(t, d, "watchtable")
	cs := d.Clientset()
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps(f.ns)
	base := "/api/v1/namespaces/" + f.ns + "/configmaps?watch=1"

	// state: name -> current object.
	state := map[string]*corev1.ConfigMap{}
	for _, n := range []string{"a", "b", "c"} {
		cm, err := cms.Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		state[n] = cm
	}
	touch := 0
	// change updates b and returns the event a live watch must deliver.
	change := func() histEvent {
		t.Helper()
		touch++
		cm := state["b"].DeepCopy()
		cm.Data = map[string]string{"k": fmt.Sprintf("b-touch-%d", touch)}
		got, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		state["b"] = got
		return histEvent{Type: "MODIFIED", Name: "b", RV: mustRV(t, got.ResourceVersion), Data: got.Data}
	}
	synthetic := func() []histEvent {
		var out []histEvent
		for _, n := range []string{"a", "b", "c"} {
			out = append(out, histEvent{Type: "ADDED", Name: n, RV: mustRV(t, state[n].ResourceVersion), Data: state[n].Data})
		}
		return out
	}
	read := func(w *rawWatch, n int) []gotEvent {
		t.Helper()
		var got []gotEvent
		for len(got) < n {
			got = append(got, gotFromRaw(t, w.MustNext()))
		}
		return got
	}

	// Specific resourceVersion: Start at exact, no synthetic events. Runs
	// first, while the history after rvB is known: MODIFIED a, ADDED c.
	afterB := []histEvent{
		{Type: "MODIFIED", Name: "a", RV: f.rvA2, Data: map[string]string{"k": "a2"}},
		{Type: "ADDED", Name: "c", RV: f.rvC, Data: map[string]string{"k": "c1"}},
	}
	for _, q := range []string{"&resourceVersion=%d", "&resourceVersion=%d&allowWatchBookmarks=true"} {
		q = fmt.Sprintf(q, f.rvB)
		w := openRawWatch(t, d, base+q)
		got := read(w, len(afterB))
		afterB = append(afterB, change())
		got = append(got, read(w, 1)...)
		matchHistory(t, "watch"+q, got, afterB)
		w.Close()
	}
	// Unset and "0": Get State and Start at Most Recent / Any.
	for _, q := range []string{"", "&resourceVersion=0", "&allowWatchBookmarks=true", "&resourceVersion=0&allowWatchBookmarks=true"} {
		w := openRawWatch(t, d, base+q)
		want := synthetic()
		got := read(w, 3)
		want = append(want, change())
		got = append(got, read(w, 1)...)
		matchHistory(t, "watch"+q, got, want)
		w.Close()
	}
	// sendInitialEvents=false with NotOlderThan: no synthetic events.
	for _, q := range []string{"&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=0", "&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"} {
		w := openRawWatch(t, d, base+q)
		want := []histEvent{change()}
		matchHistory(t, "watch"+q, read(w, 1), want)
		w.Close()
	}
	// sendInitialEvents=true without bookmarks: the initial events, then
	// changes.
	{
		q := "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
		w := openRawWatch(t, d, base+q)
		want := synthetic()
		got := read(w, 3)
		want = append(want, change())
		got = append(got, read(w, 1)...)
		matchHistory(t, "watch"+q, got, want)
		w.Close()
	}

	t.Run("Invalid", func(t *testing.T) {
		get := func(q string) httpResult { return rawGet(t, d, base+q) }
		notOlderOnly := field.NotSupported(rvMatchPath, metav1.ResourceVersionMatchExact, []string{"NotOlderThan"})
		wantInvalidListOptions(t, "watch, NotOlderThan without sendInitialEvents", get("&resourceVersionMatch=NotOlderThan&resourceVersion=0"),
			field.Forbidden(rvMatchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		wantInvalidListOptions(t, "watch, sendInitialEvents without resourceVersionMatch", get("&sendInitialEvents=true"),
			field.Forbidden(rvMatchPath, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		wantInvalidListOptions(t, "watch, Exact", get(fmt.Sprintf("&resourceVersionMatch=Exact&resourceVersion=%d", f.rvB)),
			field.Forbidden(rvMatchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"), notOlderOnly)
		wantInvalidListOptions(t, "watch, sendInitialEvents with Exact", get(fmt.Sprintf("&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=%d", f.rvB)),
			field.Forbidden(rvMatchPath, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"), notOlderOnly)
		// kube-apiserver answers resourceVersion=abc on a watch with a
		// 500; edgeapi with a 4xx Status (allowed difference, s07).
		r := get("&resourceVersion=abc")
		if st := r.status(t); r.Status < 400 || r.Status > 499 || st.Kind != "Status" || int(st.Code) != r.Status {
			t.Errorf("watch rv=abc: got %d %s, want a 4xx Status", r.Status, r.Body)
		}
	})
}
