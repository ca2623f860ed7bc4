package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// PATCH: concurrency, preconditions, no-op patches, the three patch types'
// error answers, and patches refused by validation. kube-apiserver's answers
// are the golden transcripts s16 (JSON patch), s17 (merge patch), s18
// (strategic merge patch) and s27 (immutable ConfigMaps) in ../shared/apidiff.

// sendRaw sends one request with an optional body and Content-Type and
// reads the answer in full.
func sendRaw(t *testing.T, d *Daemon, method, path, contentType string, body []byte) httpResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// wantStatusBody checks an HTTP status and that the body is exactly the
// Status want (compared as JSON, key order and spacing aside).
func wantStatusBody(t *testing.T, what string, r httpResult, code int, want string) {
	t.Helper()
	if r.Status != code {
		t.Errorf("%s: HTTP %d %s, want %d", what, r.Status, r.Body, code)
		return
	}
	var got, exp any
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Errorf("%s: body %q is not JSON: %v", what, r.Body, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("%s: body\n got %s\nwant %s", what, r.Body, want)
	}
}

// TestConfigMap_PatchStorm has many goroutines add their own key to one
// ConfigMap with merge, JSON and strategic merge patches at the same time. Patches without a
// resourceVersion precondition never fail with a conflict (kube-apiserver
// retries them against the latest object), no key is lost, and each patch
// is exactly one new resourceVersion and one watch event.
func TestConfigMap_PatchStorm(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "storm"
	const writers, perWriter = 16, 25
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	start, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "storm"}, Data: map[string]string{"seed": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	wctx, cancel := context.WithTimeout(ctx, 2*eventually)
	defer cancel()
	w, err := c.Watch(wctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion, FieldSelector: "metadata.name=storm"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	type seen struct {
		typ  watch.EventType
		rv   string
		data map[string]string
	}
	const total = writers * perWriter
	events := make(chan []seen, 1)
	go func() {
		var got []seen
		defer func() { events <- got }()
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				got = append(got, seen{typ: ev.Type, rv: fmt.Sprintf("%T %v", ev.Object, ev.Object)})
				return
			}
			got = append(got, seen{typ: ev.Type, rv: cm.ResourceVersion, data: cm.Data})
			if len(cm.Data) == total+1 {
				return
			}
		}
	}()

	var (
		mu      sync.Mutex
		rvs     = map[string]string{} // response resourceVersion → key
		errs    []error
		wg      sync.WaitGroup
		barrier = make(chan struct{})
	)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			<-barrier
			for i := 0; i < perWriter; i++ {
				key := fmt.Sprintf("w%02d-%02d", g, i)
				// Writers use the three patch types in turn.
				pt, patch := types.MergePatchType, fmt.Sprintf(`{"data":{%q:"v"}}`, key)
				switch g % 3 {
				case 1:
					pt, patch = types.JSONPatchType, fmt.Sprintf(`[{"op":"add","path":"/data/%s","value":"v"}]`, key)
				case 2:
					pt = types.StrategicMergePatchType
				}
				got, err := c.Patch(ctx, "storm", pt, []byte(patch), metav1.PatchOptions{})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("patch %s: %w", key, err))
				} else {
					if got.Data[key] != "v" {
						errs = append(errs, fmt.Errorf("patch %s: response data lacks the key", key))
					}
					if other, dup := rvs[got.ResourceVersion]; dup {
						errs = append(errs, fmt.Errorf("patches %s and %s both answered resourceVersion %s", other, key, got.ResourceVersion))
					}
					rvs[got.ResourceVersion] = key
				}
				mu.Unlock()
			}
		}(g)
	}
	close(barrier)
	wg.Wait()
	for i, err := range errs {
		if i == 10 {
			t.Errorf("... and %d more errors", len(errs)-10)
			break
		}
		t.Error(err)
	}

	final, err := c.Get(ctx, "storm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got, want := len(final.Data), total+1; got != want {
		t.Errorf("final object has %d keys, want %d (lost updates)", got, want)
	}
	for g := 0; g < writers; g++ {
		for i := 0; i < perWriter; i++ {
			if key := fmt.Sprintf("w%02d-%02d", g, i); final.Data[key] != "v" {
				t.Errorf("key %s missing from the final object", key)
			}
		}
	}

	got := <-events
	if len(got) != total {
		t.Errorf("got %d watch events after the create, want %d (one per patch)", len(got), total)
	}
	prev := map[string]string{"seed": "0"}
	for i, ev := range got {
		if ev.typ != watch.Modified {
			t.Fatalf("event %d: %s %s, want MODIFIED", i, ev.typ, ev.rv)
		}
		if _, ok := rvs[ev.rv]; !ok {
			t.Errorf("event %d: resourceVersion %s was not answered to any patch", i, ev.rv)
		}
		// Each event adds exactly one key to the previous state.
		var added []string
		for k := range ev.data {
			if _, ok := prev[k]; !ok {
				added = append(added, k)
			}
		}
		if len(added) != 1 || len(ev.data) != len(prev)+1 {
			t.Fatalf("event %d (rv %s): %d keys after %d, added %v; want exactly one key more", i, ev.rv, len(ev.data), len(prev), added)
		}
		prev = ev.data
	}
	if len(got) > 0 && got[len(got)-1].rv != final.ResourceVersion {
		t.Errorf("last event rv %s, final object rv %s", got[len(got)-1].rv, final.ResourceVersion)
	}
}

// TestConfigMap_PatchSemantics covers preconditions, no-op patches and the
// error answers of the patch types.
func TestConfigMap_PatchSemantics(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "patching"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps/"

	created, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k1": "v1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	current := func(t *testing.T) *corev1.ConfigMap {
		t.Helper()
		cm, err := c.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		return cm
	}

	t.Run("stale resourceVersion in a merge patch is 409", func(t *testing.T) {
		if _, err := c.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k1":"v2"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch: %v", err)
		}
		before := current(t)
		r := sendRaw(t, d, http.MethodPatch, base+"a", "application/merge-patch+json",
			[]byte(fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"data":{"k1":"stale"}}`, created.ResourceVersion)))
		wantStatusBody(t, "stale merge patch", r, http.StatusConflict, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"a","kind":"configmaps"},"code":409}`)
		// The same through JSON patch and client-go.
		jp := fmt.Sprintf(`[{"op":"replace","path":"/metadata/resourceVersion","value":%q},{"op":"replace","path":"/data/k1","value":"stale"}]`, created.ResourceVersion)
		_, err := c.Patch(ctx, "a", types.JSONPatchType, []byte(jp), metav1.PatchOptions{})
		if !apierrors.IsConflict(err) {
			t.Errorf("stale JSON patch: got %v, want Conflict", err)
		}
		// The current resourceVersion as a precondition succeeds.
		ok, err := c.Patch(ctx, "a", types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"data":{"k1":"v3"}}`, before.ResourceVersion)), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("merge patch with the current resourceVersion: %v", err)
		}
		if ok.Data["k1"] != "v3" || ok.ResourceVersion == before.ResourceVersion {
			t.Errorf("merge patch with the current resourceVersion: data %v rv %s (before %s)", ok.Data, ok.ResourceVersion, before.ResourceVersion)
		}
	})

	t.Run("no-op patches neither bump resourceVersion nor emit events", func(t *testing.T) {
		before := current(t)
		wctx, cancel := context.WithTimeout(ctx, eventually)
		defer cancel()
		w, err := c.Watch(wctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion, FieldSelector: "metadata.name=a"})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		noops := []struct {
			pt   types.PatchType
			body string
		}{
			{types.MergePatchType, `{"data":{"k1":"v3"}}`},
			{types.MergePatchType, `{}`},
			{types.JSONPatchType, `[{"op":"test","path":"/data/k1","value":"v3"}]`},
			{types.JSONPatchType, `[{"op":"replace","path":"/metadata/labels/app","value":"x"}]`},
			{types.StrategicMergePatchType, `{"metadata":{"labels":{"app":"x"}}}`},
			{types.StrategicMergePatchType, `{"data":{"absent":null}}`},
		}
		for _, p := range noops {
			got, err := c.Patch(ctx, "a", p.pt, []byte(p.body), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("no-op %s %s: %v", p.pt, p.body, err)
			}
			if got.ResourceVersion != before.ResourceVersion {
				t.Errorf("no-op %s %s: resourceVersion %s, want unchanged %s", p.pt, p.body, got.ResourceVersion, before.ResourceVersion)
			}
		}
		real, err := c.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k1":"real"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("real patch: %v", err)
		}
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended before any event")
			}
			cm, _ := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Modified || cm == nil || cm.ResourceVersion != real.ResourceVersion || cm.Data["k1"] != "real" {
				t.Errorf("first event after the no-op patches: %s %+v, want MODIFIED at %s with k1=real", ev.Type, ev.Object, real.ResourceVersion)
			}
		case <-time.After(watchHang):
			t.Fatalf("no event within %v of the real patch", watchHang)
		}
	})

	t.Run("JSON patch test failure is 422 with the generic message", func(t *testing.T) {
		before := current(t)
		generic := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server rejected our request due to an error in our request","reason":"Invalid","details":{},"code":422}`
		for _, body := range []string{
			`[{"op":"test","path":"/data/k1","value":"wrong"},{"op":"replace","path":"/data/k1","value":"never"}]`,
			`[{"op":"remove","path":"/data/nope"}]`,
			`[{"op":"frobnicate","path":"/data/k1"}]`,
		} {
			r := sendRaw(t, d, http.MethodPatch, base+"a", "application/json-patch+json", []byte(body))
			wantStatusBody(t, body, r, http.StatusUnprocessableEntity, generic)
		}
		if after := current(t); after.ResourceVersion != before.ResourceVersion || after.Data["k1"] != before.Data["k1"] {
			t.Errorf("failed JSON patches changed the object: rv %s→%s data %v", before.ResourceVersion, after.ResourceVersion, after.Data)
		}
		// client-go sees an Invalid error.
		_, err := c.Patch(ctx, "a", types.JSONPatchType, []byte(`[{"op":"test","path":"/data/k1","value":"wrong"}]`), metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("client-go: got %v, want Invalid", err)
		}
	})

	t.Run("strategic merge patch directives on ownerReferences and finalizers", func(t *testing.T) {
		var owners []metav1.OwnerReference
		for _, name := range []string{"owner-1", "owner-2"} {
			o, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
			owners = append(owners, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: o.UID})
		}
		if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Labels: map[string]string{"app": "x"}, OwnerReferences: owners[:1], Finalizers: []string{"example.com/one"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create dep: %v", err)
		}
		smp := func(body string) *corev1.ConfigMap {
			t.Helper()
			got, err := c.Patch(ctx, "dep", types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("strategic patch %s: %v", body, err)
			}
			return got
		}
		uids := func(cm *corev1.ConfigMap) []types.UID {
			var out []types.UID
			for _, r := range cm.OwnerReferences {
				out = append(out, r.UID)
			}
			return out
		}
		// A new reference merges by uid instead of replacing the list;
		// like kube-apiserver (s18 merge-ownerrefs-by-uid) the new
		// element comes first.
		got := smp(fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner-2","uid":%q}]}}`, owners[1].UID))
		if want := []types.UID{owners[1].UID, owners[0].UID}; !reflect.DeepEqual(uids(got), want) {
			t.Errorf("after merging owner-2: ownerReferences uids %v, want %v", uids(got), want)
		}
		got = smp(fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}]}}`, owners[0].UID))
		if want := []types.UID{owners[1].UID}; !reflect.DeepEqual(uids(got), want) {
			t.Errorf("after $patch delete of owner-1: ownerReferences uids %v, want %v", uids(got), want)
		}
		got = smp(`{"metadata":{"finalizers":["example.com/two"]}}`)
		if want := []string{"example.com/two", "example.com/one"}; !reflect.DeepEqual(got.Finalizers, want) { // s18 finalizers-merge
			t.Errorf("after merging a finalizer: %v, want %v", got.Finalizers, want)
		}
		got = smp(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/one"]}}`)
		if want := []string{"example.com/two"}; !reflect.DeepEqual(got.Finalizers, want) {
			t.Errorf("after $deleteFromPrimitiveList: %v, want %v", got.Finalizers, want)
		}
		got = smp(`{"metadata":{"labels":{"$patch":"replace","only":"this"}}}`)
		if want := map[string]string{"only": "this"}; !reflect.DeepEqual(got.Labels, want) {
			t.Errorf("after $patch replace of labels: %v, want %v", got.Labels, want)
		}
		// Release the finalizer so the namespace can go.
		if _, err := c.Patch(ctx, "dep", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("clear finalizers: %v", err)
		}
	})

	t.Run("unsupported patch Content-Type is 415", func(t *testing.T) {
		want415 := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"415: Unsupported Media Type","reason":"UnsupportedMediaType","details":{},"code":415}`
		for _, ct := range []string{"application/foo-patch+json", "application/json", "application/apply-patch+json", "text/plain"} {
			r := sendRaw(t, d, http.MethodPatch, base+"a?fieldManager=m", ct, []byte(`{"data":{"k":"v"}}`))
			wantStatusBody(t, "PATCH with Content-Type "+ct, r, http.StatusUnsupportedMediaType, want415)
		}
		r := sendRaw(t, d, http.MethodPatch, base+"a", "", []byte(`{"data":{"k":"v"}}`))
		wantStatusBody(t, "PATCH without Content-Type", r, http.StatusUnsupportedMediaType, want415)
		if _, ok := current(t).Data["k"]; ok {
			t.Error("a refused patch changed the object")
		}
	})

	t.Run("patching an immutable ConfigMap's data is 422", func(t *testing.T) {
		if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Data: map[string]string{"k": "v"}, Immutable: ptr(true)}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		forbidden := func(field string) string {
			return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"frozen\" is invalid: %[1]s: Forbidden: field is immutable when `+"`immutable`"+` is set","reason":"Invalid","details":{"name":"frozen","kind":"ConfigMap","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: field is immutable when `+"`immutable`"+` is set","field":%[1]q}]},"code":422}`, field)
		}
		for _, p := range []struct{ ct, body, field string }{
			{"application/merge-patch+json", `{"data":{"k":"v2"}}`, "data"},
			{"application/strategic-merge-patch+json", `{"data":{"k2":"x"}}`, "data"},
			{"application/json-patch+json", `[{"op":"remove","path":"/data/k"}]`, "data"},
			{"application/merge-patch+json", `{"binaryData":{"b":"AAEC"}}`, "binaryData"},
			{"application/merge-patch+json", `{"immutable":false}`, "immutable"},
		} {
			r := sendRaw(t, d, http.MethodPatch, base+"frozen", p.ct, []byte(p.body))
			wantStatusBody(t, p.ct+" "+p.body, r, http.StatusUnprocessableEntity, forbidden(p.field))
		}
		// Apply is refused the same way (forced, as data.k belongs to
		// the creator's Update entry).
		r := sendRaw(t, d, http.MethodPatch, base+"frozen?fieldManager=m&force=true", "application/apply-patch+yaml", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"data":{"k":"applied"}}`))
		wantStatusBody(t, "apply to frozen data", r, http.StatusUnprocessableEntity, forbidden("data"))
		// Metadata can still change.
		got, err := c.Patch(ctx, "frozen", types.MergePatchType, []byte(`{"metadata":{"labels":{"ok":"yes"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("label patch on an immutable ConfigMap: %v", err)
		}
		if got.Labels["ok"] != "yes" || got.Data["k"] != "v" {
			t.Errorf("after label patch: labels %v data %v", got.Labels, got.Data)
		}
	})

	t.Run("patch of a missing object is 404", func(t *testing.T) {
		for _, ct := range []string{"application/merge-patch+json", "application/strategic-merge-patch+json"} {
			r := sendRaw(t, d, http.MethodPatch, base+"missing", ct, []byte(`{"data":{"x":"y"}}`))
			wantStatusBody(t, ct, r, http.StatusNotFound, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"missing\" not found","reason":"NotFound","details":{"name":"missing","kind":"configmaps"},"code":404}`)
		}
	})
}

// TestPatch_OtherKinds patches a Secret through stringData and a
// Namespace's name label.
func TestPatch_OtherKinds(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "patch-kinds"
	createNamespace(t, cs, ns)

	t.Run("Secret stringData", func(t *testing.T) {
		s := cs.CoreV1().Secrets(ns)
		if _, err := s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"a": []byte("1")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			pt   types.PatchType
			body string
		}{
			{types.MergePatchType, `{"stringData":{"b":"two"}}`},
			{types.StrategicMergePatchType, `{"stringData":{"c":"three","a":"one"}}`},
		} {
			got, err := s.Patch(ctx, "s", p.pt, []byte(p.body), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("%s %s: %v", p.pt, p.body, err)
			}
			if got.StringData != nil {
				t.Errorf("%s: answer carries stringData %v, want none", p.pt, got.StringData)
			}
		}
		got, err := s.Get(ctx, "s", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"a": []byte("one"), "b": []byte("two"), "c": []byte("three")}
		if !reflect.DeepEqual(got.Data, want) || got.StringData != nil {
			t.Errorf("secret data = %q stringData %v, want %q and no stringData", got.Data, got.StringData, want)
		}
	})

	t.Run("Namespace name label is kept", func(t *testing.T) {
		n := cs.CoreV1().Namespaces()
		got, err := n.Patch(ctx, ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"kubernetes.io/metadata.name":null,"team":"a"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("patch namespace: %v", err)
		}
		if want := map[string]string{"kubernetes.io/metadata.name": ns, "team": "a"}; !reflect.DeepEqual(got.Labels, want) {
			t.Errorf("namespace labels = %v, want %v (the name label is always set)", got.Labels, want)
		}
		got, err = n.Patch(ctx, ns, types.JSONPatchType, []byte(`[{"op":"replace","path":"/metadata/labels/kubernetes.io~1metadata.name","value":"other"}]`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("json patch namespace: %v", err)
		}
		if got.Labels["kubernetes.io/metadata.name"] != ns {
			t.Errorf("name label after setting it to another value = %q, want %q", got.Labels["kubernetes.io/metadata.name"], ns)
		}
	})
}

// TestPatch_Options checks PatchOptions validation: force only with apply,
// fieldManager length and characters.
func TestPatch_Options(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	const ns = "patch-options"
	createNamespace(t, cs, ns)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"x": "y"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/" + ns + "/configmaps/a"
	// invalid is kube-apiserver's answer to options that fail validation
	// (errors.NewInvalid on the options kind, as in s19 and s22).
	invalid := func(kind, field, reason, msg string) string {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%s,"reason":"Invalid","details":{"group":"meta.k8s.io","kind":%s,"causes":[{"reason":%s,"message":%s,"field":%s}]},"code":422}`,
			q(kind+`.meta.k8s.io "" is invalid: `+field+": "+msg), q(kind), q(reason), q(msg), q(field))
	}
	const tabMsg = `Invalid value: "bad\tname": invalid character U+0009 (at position 3)`
	for _, ct := range []string{"application/merge-patch+json", "application/strategic-merge-patch+json"} {
		r := sendRaw(t, d, http.MethodPatch, path+"?force=true", ct, []byte(`{"data":{"k":"v"}}`))
		wantStatusBody(t, ct+" with force", r, http.StatusUnprocessableEntity, invalid("PatchOptions", "force", "FieldValueForbidden", "Forbidden: may not be specified for non-apply patch"))
	}
	long := strings.Repeat("m", 129)
	r := sendRaw(t, d, http.MethodPatch, path+"?fieldManager="+long, "application/merge-patch+json", []byte(`{"data":{"k":"v"}}`))
	wantStatusBody(t, "merge patch with a 129-byte fieldManager", r, http.StatusUnprocessableEntity, invalid("PatchOptions", "fieldManager", "FieldValueTooLong", "Too long: may not be more than 128 bytes"))
	r = sendRaw(t, d, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps?fieldManager=bad%09name", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`))
	wantStatusBody(t, "create with a tab in fieldManager", r, http.StatusUnprocessableEntity, invalid("CreateOptions", "fieldManager", "FieldValueInvalid", tabMsg))
	r = sendRaw(t, d, http.MethodPut, path+"?fieldManager=bad%09name", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":"z"}}`))
	wantStatusBody(t, "update with a tab in fieldManager", r, http.StatusUnprocessableEntity, invalid("UpdateOptions", "fieldManager", "FieldValueInvalid", tabMsg))
	r = sendRaw(t, d, http.MethodPatch, path+"?fieldManager=bad%09name", "application/merge-patch+json", []byte(`{"data":{"x":"w"}}`))
	wantStatusBody(t, "patch with a tab in fieldManager", r, http.StatusUnprocessableEntity, invalid("PatchOptions", "fieldManager", "FieldValueInvalid", tabMsg))
	if l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) != 1 || !reflect.DeepEqual(l.Items[0].Data, map[string]string{"x": "y"}) {
		t.Errorf("after the rejected requests: %+v %v, want only a with x=y", l, err)
	}
	// A 128-byte manager is fine and recorded.
	ok := strings.Repeat("m", 128)
	got, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "a", types.MergePatchType, []byte(`{"data":{"long":"v"}}`), metav1.PatchOptions{FieldManager: ok})
	if err != nil {
		t.Fatalf("merge patch with a 128-byte fieldManager: %v", err)
	}
	found := false
	for _, e := range got.ManagedFields {
		found = found || e.Manager == ok
	}
	if !found {
		t.Errorf("128-byte manager not recorded: %+v", got.ManagedFields)
	}
}
