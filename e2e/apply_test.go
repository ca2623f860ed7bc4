package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// Server-side apply through client-go's typed apply configurations: the
// managedFields each write leaves behind, conflicts and force, and the
// ways to clear managedFields. kube-apiserver's answers are the golden
// transcripts s19-ssa-basics and s20-ssa-conflicts in ../shared/apidiff and
// apimachinery's managedfields package, which kube-apiserver runs.

// ownedFields returns an object's managedFields as
// "manager operation apiVersion" → fieldsV1 in canonical JSON. It fails t if
// an entry is not FieldsV1 or appears twice. (Times are not checked: an
// apply that changes nothing leaves its entry's time unset or unchanged in
// apimachinery's managedfields, which kube-apiserver runs.)
func ownedFields(t *testing.T, mf []metav1.ManagedFieldsEntry) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, e := range mf {
		key := string(e.Manager) + " " + string(e.Operation) + " " + e.APIVersion
		if _, dup := got[key]; dup {
			t.Errorf("managedFields has %q twice: %+v", key, mf)
		}
		if e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
			t.Errorf("managedFields entry %q: fieldsType %q, fieldsV1 %v, want FieldsV1 with fields", key, e.FieldsType, e.FieldsV1)
			continue
		}
		got[key] = canonicalJSON(t, string(e.FieldsV1.Raw))
	}
	return got
}

// canonicalJSON re-encodes s with sorted keys and no spaces.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %q: %v", s, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantOwned compares an object's managedFields with want, whose values are
// fieldsV1 JSON in any formatting.
func wantOwned(t *testing.T, what string, mf []metav1.ManagedFieldsEntry, want map[string]string) {
	t.Helper()
	canon := map[string]string{}
	for k, v := range want {
		canon[k] = canonicalJSON(t, v)
	}
	if got := ownedFields(t, mf); !reflect.DeepEqual(got, canon) {
		t.Errorf("%s: managedFields\n got %v\nwant %v", what, got, canon)
	}
}

// sortedCauses returns causes sorted by field then message: the order of
// conflict causes across managers is not specified.
func sortedCauses(causes []metav1.StatusCause) []metav1.StatusCause {
	out := append([]metav1.StatusCause(nil), causes...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Field != out[j].Field {
			return out[i].Field < out[j].Field
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// wantApplyConflict checks an apply conflict the way s20-ssa-conflicts shows
// it: 409 Conflict, the message, one FieldManagerConflict cause per field,
// and no name or kind in the details.
func wantApplyConflict(t *testing.T, err error, message string, causes ...metav1.StatusCause) {
	t.Helper()
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply: got %v, want a Conflict", err)
	}
	wantStatus(t, err, http.StatusConflict, metav1.StatusReasonConflict, message)
	s := apiStatus(t, err)
	if s.Details == nil {
		t.Fatalf("conflict Status has no details, want %d causes", len(causes))
	}
	if s.Details.Name != "" || s.Details.Kind != "" {
		t.Errorf("conflict details name %q kind %q, want both empty (kube-apiserver's NewApplyConflict sets neither)", s.Details.Name, s.Details.Kind)
	}
	if got, want := sortedCauses(s.Details.Causes), sortedCauses(causes); !reflect.DeepEqual(got, want) {
		t.Errorf("conflict causes\n got %+v\nwant %+v", got, want)
	}
}

func conflictCause(field, manager string) metav1.StatusCause {
	return metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: "conflict with " + manager, Field: field}
}

// TestConfigMap_ApplyManagedFields follows managedFields through a create
// and an update by two Update managers, then applies by two Apply managers
// that share a field with an equal value, then conflicts and force.
func TestConfigMap_ApplyManagedFields(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "apply-mf"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	created, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seq"}, Data: map[string]string{"k1": "1"}},
		metav1.CreateOptions{FieldManager: "x"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	want := map[string]string{"x Update v1": `{"f:data":{".":{},"f:k1":{}}}`}
	wantOwned(t, "after create by x", created.ManagedFields, want)

	upd := created.DeepCopy()
	upd.Data["k2"] = "2"
	updated, err := c.Update(ctx, upd, metav1.UpdateOptions{FieldManager: "y"})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	want["y Update v1"] = `{"f:data":{"f:k2":{}}}`
	wantOwned(t, "after update by y", updated.ManagedFields, want)

	a, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"shared": "s", "ka": "a"}), metav1.ApplyOptions{FieldManager: "a"})
	if err != nil {
		t.Fatalf("apply by a: %v", err)
	}
	want["a Apply v1"] = `{"f:data":{"f:ka":{},"f:shared":{}}}`
	wantOwned(t, "after apply by a", a.ManagedFields, want)

	b, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"shared": "s", "kb": "b"}), metav1.ApplyOptions{FieldManager: "b"})
	if err != nil {
		t.Fatalf("apply by b (equal value for shared): %v", err)
	}
	want["b Apply v1"] = `{"f:data":{"f:kb":{},"f:shared":{}}}`
	wantOwned(t, "after apply by b", b.ManagedFields, want)
	if got, wantData := b.Data, map[string]string{"k1": "1", "k2": "2", "ka": "a", "kb": "b", "shared": "s"}; !reflect.DeepEqual(got, wantData) {
		t.Errorf("data after both applies = %v, want %v", got, wantData)
	}
	// kube-apiserver lists Apply entries before Update entries
	// (apimachinery's managedfields sorts by operation first).
	var ops []string
	for _, e := range b.ManagedFields {
		ops = append(ops, string(e.Operation))
	}
	if got, want := strings.Join(ops, ","), "Apply,Apply,Update,Update"; got != want {
		t.Errorf("managedFields operations in order %s, want %s", got, want)
	}
	rvBefore := b.ResourceVersion

	t.Run("conflict with an Update manager", func(t *testing.T) {
		_, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"shared": "s", "kb": "b", "k1": "one"}), metav1.ApplyOptions{FieldManager: "b"})
		wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "x" using v1: .data.k1`,
			conflictCause(".data.k1", `"x" using v1`))
	})
	t.Run("conflict with an Apply manager on a shared field", func(t *testing.T) {
		_, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"shared": "changed", "kb": "b"}), metav1.ApplyOptions{FieldManager: "b"})
		wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "a": .data.shared`,
			conflictCause(".data.shared", `"a"`))
	})
	t.Run("conflicts with two managers", func(t *testing.T) {
		_, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"shared": "changed", "kb": "b", "k2": "bee"}), metav1.ApplyOptions{FieldManager: "b"})
		wantApplyConflict(t, err, "Apply failed with 2 conflicts: conflicts with \"a\":\n- .data.shared\nconflicts with \"y\" using v1:\n- .data.k2",
			conflictCause(".data.shared", `"a"`), conflictCause(".data.k2", `"y" using v1`))
	})
	t.Run("conflicts change nothing", func(t *testing.T) {
		got, err := c.Get(ctx, "seq", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.ResourceVersion != rvBefore {
			t.Errorf("resourceVersion after rejected applies = %s, want %s", got.ResourceVersion, rvBefore)
		}
		wantOwned(t, "after rejected applies", got.ManagedFields, want)
	})
	t.Run("force takes over", func(t *testing.T) {
		got, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"shared": "changed", "kb": "b", "k2": "bee"}), metav1.ApplyOptions{FieldManager: "b", Force: true})
		if err != nil {
			t.Fatalf("forced apply: %v", err)
		}
		if got, wantData := got.Data, map[string]string{"k1": "1", "k2": "bee", "ka": "a", "kb": "b", "shared": "changed"}; !reflect.DeepEqual(got, wantData) {
			t.Errorf("data after forced apply = %v, want %v", got, wantData)
		}
		// y owned only k2, so its entry goes; a keeps only ka.
		wantOwned(t, "after forced apply by b", got.ManagedFields, map[string]string{
			"x Update v1": `{"f:data":{".":{},"f:k1":{}}}`,
			"a Apply v1":  `{"f:data":{"f:ka":{}}}`,
			"b Apply v1":  `{"f:data":{"f:k2":{},"f:kb":{},"f:shared":{}}}`,
		})
	})
	t.Run("dropping a solely owned field removes it", func(t *testing.T) {
		got, err := c.Apply(ctx, corev1ac.ConfigMap("seq", ns).WithData(map[string]string{"kb": "b", "k2": "bee"}), metav1.ApplyOptions{FieldManager: "b"})
		if err != nil {
			t.Fatalf("apply without shared: %v", err)
		}
		if _, ok := got.Data["shared"]; ok {
			t.Errorf("data after b dropped its sole field shared = %v, want shared removed", got.Data)
		}
	})
}

// TestConfigMap_ApplyCreateAndIdempotence applies to a missing object
// (201, created), re-applies the same configuration (200, resourceVersion
// unchanged), and checks apply's request validation.
func TestConfigMap_ApplyCreateAndIdempotence(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "apply-create"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fresh","labels":{"app":"x"}},"data":{"k":"v"}}`)
	var code int
	res := cs.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace(ns).Resource("configmaps").Name("fresh").
		Param("fieldManager", "alpha").Body(body).Do(ctx).StatusCode(&code)
	if err := res.Error(); err != nil {
		t.Fatalf("apply to a missing object: %v", err)
	}
	if code != http.StatusCreated {
		t.Errorf("apply to a missing object: status %d, want 201 Created", code)
	}
	created, err := c.Get(ctx, "fresh", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after apply-create: %v", err)
	}
	if created.Data["k"] != "v" || created.Labels["app"] != "x" {
		t.Errorf("created by apply: data %v labels %v, want k=v app=x", created.Data, created.Labels)
	}
	wantOwned(t, "after apply-create", created.ManagedFields, map[string]string{
		"alpha Apply v1": `{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`,
	})

	t.Run("re-apply keeps the resourceVersion", func(t *testing.T) {
		cfg := corev1ac.ConfigMap("fresh", ns).WithLabels(map[string]string{"app": "x"}).WithData(map[string]string{"k": "v"})
		for i := 0; i < 2; i++ {
			got, err := c.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "alpha"})
			if err != nil {
				t.Fatalf("re-apply %d: %v", i, err)
			}
			if got.ResourceVersion != created.ResourceVersion {
				t.Errorf("re-apply %d: resourceVersion %s, want unchanged %s", i, got.ResourceVersion, created.ResourceVersion)
			}
		}
		// A re-apply with force and nothing to take over is also a no-op.
		got, err := c.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "alpha", Force: true})
		if err != nil {
			t.Fatalf("forced re-apply: %v", err)
		}
		if got.ResourceVersion != created.ResourceVersion {
			t.Errorf("forced re-apply: resourceVersion %s, want unchanged %s", got.ResourceVersion, created.ResourceVersion)
		}
	})

	t.Run("no fieldManager is 422", func(t *testing.T) {
		_, err := c.Apply(ctx, corev1ac.ConfigMap("fresh", ns).WithData(map[string]string{"k": "v"}), metav1.ApplyOptions{})
		wantStatus(t, err, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			`PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`)
		s := apiStatus(t, err)
		wantCauses := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value: is required for apply patch", Field: "fieldManager"}}
		if s.Details == nil || s.Details.Group != "meta.k8s.io" || s.Details.Kind != "PatchOptions" || !reflect.DeepEqual(s.Details.Causes, wantCauses) {
			t.Errorf("details = %+v, want group meta.k8s.io kind PatchOptions causes %+v", s.Details, wantCauses)
		}
	})

	t.Run("managedFields in the body is 400", func(t *testing.T) {
		// client-go refuses to send this, so send it raw.
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fresh","managedFields":[{"manager":"alpha","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"v2"}}`
		r := sendRaw(t, d, http.MethodPatch, "/api/v1/namespaces/"+ns+"/configmaps/fresh?fieldManager=alpha", "application/apply-patch+yaml", []byte(body))
		wantStatusBody(t, "apply with managedFields", r, http.StatusBadRequest, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"metadata.managedFields must be nil","reason":"BadRequest","code":400}`)
		got, err := c.Get(ctx, "fresh", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Data["k"] != "v" || got.ResourceVersion != created.ResourceVersion {
			t.Errorf("after rejected apply: data %v rv %s, want k=v rv %s", got.Data, got.ResourceVersion, created.ResourceVersion)
		}
	})
}

// TestConfigMap_ClearManagedFields clears managedFields the documented ways
// (a list holding one empty entry, by merge patch and by JSON patch) and with
// an empty list.
//
// The Chinese server-side-apply page (seed 002) says an empty list alone does
// not reset managedFields. kube-apiserver does reset on it since 1.19
// (kubernetes/kubernetes#91748; apimachinery's isResetManagedFields returns
// true for a non-nil empty list; upstream's integration test
// TestClearManagedFieldsWithUpdateEmptyList asserts it). edgeapi must
// behave like kube-apiserver, so that is what is asserted here. A request
// that omits managedFields (nil) keeps them.
func TestConfigMap_ClearManagedFields(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "clear-mf"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	setup := func(t *testing.T, name string) *corev1.ConfigMap {
		t.Helper()
		if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
			t.Fatalf("create: %v", err)
		}
		cm, err := c.Apply(ctx, corev1ac.ConfigMap(name, ns).WithLabels(map[string]string{"app": "x"}), metav1.ApplyOptions{FieldManager: "applier"})
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		if len(cm.ManagedFields) != 2 {
			t.Fatalf("setup: managedFields %+v, want creator and applier", cm.ManagedFields)
		}
		return cm
	}
	patch := func(t *testing.T, name string, pt types.PatchType, body string) *corev1.ConfigMap {
		t.Helper()
		got, err := c.Patch(ctx, name, pt, []byte(body), metav1.PatchOptions{FieldManager: "clearer"})
		if err != nil {
			t.Fatalf("patch %s: %v", body, err)
		}
		return got
	}

	clearing := []struct {
		name string
		pt   types.PatchType
		body string
	}{
		{"merge-empty-entry", types.MergePatchType, `{"metadata":{"managedFields":[{}]}}`},
		{"json-empty-entry", types.JSONPatchType, `[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`},
		{"strategic-empty-entry", types.StrategicMergePatchType, `{"metadata":{"managedFields":[{}]}}`},
		{"merge-empty-list", types.MergePatchType, `{"metadata":{"managedFields":[]}}`},
		{"json-empty-list", types.JSONPatchType, `[{"op":"replace","path":"/metadata/managedFields","value":[]}]`},
	}
	for _, tc := range clearing {
		t.Run(tc.name, func(t *testing.T) {
			before := setup(t, tc.name)
			got := patch(t, tc.name, tc.pt, tc.body)
			if len(got.ManagedFields) != 0 {
				t.Errorf("patch response managedFields = %+v, want none", got.ManagedFields)
			}
			stored, err := c.Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(stored.ManagedFields) != 0 {
				t.Errorf("stored managedFields = %+v, want none", stored.ManagedFields)
			}
			if stored.Data["k"] != "v" || stored.Labels["app"] != "x" {
				t.Errorf("other fields changed: data %v labels %v", stored.Data, stored.Labels)
			}
			if stored.ResourceVersion == before.ResourceVersion {
				t.Errorf("resourceVersion unchanged at %s; clearing managedFields is a write", stored.ResourceVersion)
			}
			// With nothing tracked, later updates are not tracked either;
			// the next apply first hands every existing field to a
			// "before-first-apply" Update entry and then records its
			// own (apimachinery's skipNonAppliedManager, which
			// kube-apiserver runs).
			upd := patch(t, tc.name, types.MergePatchType, `{"metadata":{"labels":{"later":"1"}}}`)
			if len(upd.ManagedFields) != 0 {
				t.Errorf("update after clearing: managedFields = %+v, want none (kube-apiserver stops tracking until the next apply)", upd.ManagedFields)
			}
			app, err := c.Apply(ctx, corev1ac.ConfigMap(tc.name, ns).WithLabels(map[string]string{"app": "x"}), metav1.ApplyOptions{FieldManager: "applier"})
			if err != nil {
				t.Fatalf("apply after clearing: %v", err)
			}
			wantOwned(t, "apply after clearing", app.ManagedFields, map[string]string{
				"applier Apply v1":             `{"f:metadata":{"f:labels":{"f:app":{}}}}`,
				"before-first-apply Update v1": `{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:app":{},"f:later":{}}}}`,
			})
		})
	}

	t.Run("omitting managedFields keeps them", func(t *testing.T) {
		before := setup(t, "omitted")
		want := ownedFields(t, before.ManagedFields)
		got := patch(t, "omitted", types.MergePatchType, `{"metadata":{"annotations":{"a":"b"}}}`)
		want["clearer Update v1"] = canonicalJSON(t, `{"f:metadata":{"f:annotations":{".":{},"f:a":{}}}}`)
		if got := ownedFields(t, got.ManagedFields); !reflect.DeepEqual(got, want) {
			t.Errorf("managedFields after a patch without them\n got %v\nwant %v", got, want)
		}
		// An Update that sends them back unchanged keeps them too.
		cur, err := c.Get(ctx, "omitted", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Data["k2"] = "v2"
		put, err := c.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "putter"})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		want["putter Update v1"] = canonicalJSON(t, `{"f:data":{"f:k2":{}}}`)
		if got := ownedFields(t, put.ManagedFields); !reflect.DeepEqual(got, want) {
			t.Errorf("managedFields after an update echoing them\n got %v\nwant %v", got, want)
		}
	})
}

// TestConfigMap_ApplyStorm has several field managers apply to one
// ConfigMap at the same time, each growing its own set of keys. No apply
// fails, no key is lost, and each manager ends up owning exactly its keys.
func TestConfigMap_ApplyStorm(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "apply-storm"
	const managers, rounds = 8, 12
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	errs := make(chan error, managers*rounds)
	done := make(chan struct{})
	for m := 0; m < managers; m++ {
		go func(m int) {
			defer func() { done <- struct{}{} }()
			data := map[string]string{}
			for r := 0; r < rounds; r++ {
				data[fmt.Sprintf("m%d-%02d", m, r)] = "v"
				_, err := c.Apply(ctx, corev1ac.ConfigMap("shared", ns).WithData(data), metav1.ApplyOptions{FieldManager: fmt.Sprintf("m%d", m)})
				if err != nil {
					errs <- fmt.Errorf("manager m%d round %d: %w", m, r, err)
				}
			}
		}(m)
	}
	for m := 0; m < managers; m++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got, err := c.Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != managers*rounds {
		t.Errorf("final object has %d keys, want %d", len(got.Data), managers*rounds)
	}
	want := map[string]string{}
	for m := 0; m < managers; m++ {
		fields := map[string]any{}
		for r := 0; r < rounds; r++ {
			fields[fmt.Sprintf("f:m%d-%02d", m, r)] = map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"f:data": fields})
		want[fmt.Sprintf("m%d Apply v1", m)] = string(b)
	}
	owned := ownedFields(t, got.ManagedFields)
	for k := range owned {
		if strings.HasSuffix(k, " Update v1") {
			delete(owned, k) // the creator's entry, if any
		}
	}
	for k, v := range want {
		want[k] = canonicalJSON(t, v)
	}
	if !reflect.DeepEqual(owned, want) {
		t.Errorf("Apply entries after the storm\n got %v\nwant %v", owned, want)
	}
}

// TestNamespace_Apply creates a cluster-scoped object by apply and applies
// into a namespace that does not exist.
func TestNamespace_Apply(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()

	got, err := cs.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace("applied").WithLabels(map[string]string{"team": "a"}), metav1.ApplyOptions{FieldManager: "ns-applier"})
	if err != nil {
		t.Fatalf("apply namespace: %v", err)
	}
	if got.Status.Phase != corev1.NamespaceActive || got.Labels["team"] != "a" || got.Labels["kubernetes.io/metadata.name"] != "applied" ||
		!reflect.DeepEqual(got.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) {
		t.Errorf("namespace created by apply: phase %q labels %v finalizers %v, want Active, team=a plus the name label, [kubernetes]", got.Status.Phase, got.Labels, got.Spec.Finalizers)
	}
	wantOwned(t, "namespace created by apply", got.ManagedFields, map[string]string{
		"ns-applier Apply v1": `{"f:metadata":{"f:labels":{"f:team":{}}}}`,
	})

	_, err = cs.CoreV1().ConfigMaps("nowhere").Apply(ctx, corev1ac.ConfigMap("x", "nowhere").WithData(map[string]string{"k": "v"}), metav1.ApplyOptions{FieldManager: "a"})
	wantStatus(t, err, http.StatusNotFound, metav1.StatusReasonNotFound, `namespaces "nowhere" not found`)
}
