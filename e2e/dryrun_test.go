package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
)

// dryRun=All on every write: the request runs as far as a real one
// (defaulting, validation, conflicts) and answers what would have been
// stored, but nothing is stored, no revision is used and no watch event is
// sent. kube-apiserver's answers are the golden transcript s22-dry-run in
// ../shared/apidiff and "Dry-run" in the API concepts page (seed 000).

var dryRunAll = []string{metav1.DryRunAll}

// decodeCM decodes a ConfigMap answer and fails t unless the status is
// code.
func decodeCM(t *testing.T, what string, r httpResult, code int) corev1.ConfigMap {
	t.Helper()
	if r.Status != code {
		t.Fatalf("%s: HTTP %d %s, want %d", what, r.Status, r.Body, code)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(r.Body, &cm); err != nil || cm.Kind != "ConfigMap" {
		t.Fatalf("%s: body %s is not a ConfigMap (%v)", what, r.Body, err)
	}
	return cm
}

// TestDryRun_Writes sends every kind of write with dryRun=All and checks
// the answers, that nothing changed, that no revision was used and that no
// watch event was sent.
func TestDryRun_Writes(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "dry"
	// The revisions counted below are the test's alone once the daemon's
	// own writes after startup are done: the ClusterRole aggregation
	// controller's, which a slow daemon (under emulation) makes after it
	// is ready.
	waitFor(t, "the aggregated ClusterRoles admin, edit and view", func() bool {
		return clusterRolesAggregated(t, cs)
	})
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps"

	real, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "real", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	fin, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fin", Finalizers: []string{"example.com/keep"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create fin: %v", err)
	}
	lastRV := fin.ResourceVersion
	wctx, cancel := context.WithTimeout(ctx, 2*eventually)
	defer cancel()
	w, err := c.Watch(wctx, metav1.ListOptions{ResourceVersion: lastRV})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// unchanged fails t if a stored object differs from want in anything.
	unchanged := func(t *testing.T, want *corev1.ConfigMap) {
		t.Helper()
		got, err := c.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s after a dry run: %v", want.Name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s changed by a dry run:\n got %+v\nwant %+v", want.Name, got, want)
		}
	}

	t.Run("POST", func(t *testing.T) {
		r := sendRaw(t, d, http.MethodPost, base+"?dryRun=All", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"},"data":{"k":"v"}}`))
		cm := decodeCM(t, "dry-run POST", r, http.StatusCreated)
		if cm.UID == "" || cm.CreationTimestamp.IsZero() || cm.Namespace != ns || cm.Data["k"] != "v" {
			t.Errorf("dry-run POST answer: uid %q creationTimestamp %v namespace %q data %v, want a uid, a timestamp, %s and k=v", cm.UID, cm.CreationTimestamp, cm.Namespace, cm.Data, ns)
		}
		if cm.ResourceVersion != "" {
			t.Errorf("dry-run POST answer has resourceVersion %q, want none", cm.ResourceVersion)
		}
		if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != "Go-http-client" || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("dry-run POST managedFields = %+v, want one Update entry by the User-Agent", cm.ManagedFields)
		}
		if _, err := c.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after dry-run POST: %v, want NotFound", err)
		}

		// generateName: a name is generated, nothing is stored.
		got, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "dry-"}}, metav1.CreateOptions{DryRun: dryRunAll})
		if err != nil {
			t.Fatalf("dry-run create with generateName: %v", err)
		}
		if !strings.HasPrefix(got.Name, "dry-") || len(got.Name) != len("dry-")+5 || got.GenerateName != "dry-" || got.ResourceVersion != "" || got.UID == "" {
			t.Errorf("dry-run generateName answer: name %q generateName %q rv %q uid %q, want dry-XXXXX, dry-, no rv, a uid", got.Name, got.GenerateName, got.ResourceVersion, got.UID)
		}
		if _, err := c.Get(ctx, got.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get %s after dry-run POST: %v, want NotFound", got.Name, err)
		}

		// A Namespace too.
		nsObj, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dry-ns"}}, metav1.CreateOptions{DryRun: dryRunAll})
		if err != nil {
			t.Fatalf("dry-run namespace create: %v", err)
		}
		if nsObj.Status.Phase != corev1.NamespaceActive || nsObj.Labels["kubernetes.io/metadata.name"] != "dry-ns" || nsObj.ResourceVersion != "" {
			t.Errorf("dry-run namespace answer: phase %q labels %v rv %q, want Active, the name label, no rv", nsObj.Status.Phase, nsObj.Labels, nsObj.ResourceVersion)
		}
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "dry-ns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get namespace after dry-run create: %v, want NotFound", err)
		}
	})

	t.Run("PUT", func(t *testing.T) {
		upd := real.DeepCopy()
		upd.Data = map[string]string{"k": "changed"}
		got, err := c.Update(ctx, upd, metav1.UpdateOptions{DryRun: dryRunAll})
		if err != nil {
			t.Fatalf("dry-run update: %v", err)
		}
		if got.Data["k"] != "changed" || got.ResourceVersion != real.ResourceVersion {
			t.Errorf("dry-run update answer: data %v rv %s, want k=changed and the unchanged rv %s", got.Data, got.ResourceVersion, real.ResourceVersion)
		}
		unchanged(t, real)
	})

	t.Run("PATCH", func(t *testing.T) {
		for _, p := range []struct {
			pt        types.PatchType
			body, key string
		}{
			{types.MergePatchType, `{"data":{"merge":"1"}}`, "merge"},
			{types.JSONPatchType, `[{"op":"add","path":"/data/json","value":"1"}]`, "json"},
			{types.StrategicMergePatchType, `{"data":{"smp":"1"}}`, "smp"},
		} {
			got, err := c.Patch(ctx, "real", p.pt, []byte(p.body), metav1.PatchOptions{DryRun: dryRunAll})
			if err != nil {
				t.Fatalf("dry-run %s: %v", p.pt, err)
			}
			if got.Data[p.key] != "1" || got.Data["k"] != "v" || got.ResourceVersion != real.ResourceVersion {
				t.Errorf("dry-run %s answer: data %v rv %s, want %s=1 k=v and rv %s", p.pt, got.Data, got.ResourceVersion, p.key, real.ResourceVersion)
			}
		}
		unchanged(t, real)
	})

	t.Run("apply", func(t *testing.T) {
		got, err := c.Apply(ctx, corev1ac.ConfigMap("real", ns).WithData(map[string]string{"applied": "1"}), metav1.ApplyOptions{FieldManager: "dry", DryRun: dryRunAll})
		if err != nil {
			t.Fatalf("dry-run apply: %v", err)
		}
		if got.Data["applied"] != "1" || got.ResourceVersion != real.ResourceVersion {
			t.Errorf("dry-run apply answer: data %v rv %s", got.Data, got.ResourceVersion)
		}
		if len(got.ManagedFields) != 2 || got.ManagedFields[0].Manager != "dry" || got.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("dry-run apply managedFields = %+v, want dry's Apply entry first, then the creator's", got.ManagedFields)
		}
		unchanged(t, real)
		// A dry-run apply to a missing object answers 201 and creates
		// nothing.
		var code int
		err = cs.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace(ns).Resource("configmaps").Name("applied-dry").
			Param("fieldManager", "dry").Param("dryRun", "All").
			Body([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied-dry"}}`)).Do(ctx).StatusCode(&code).Error()
		if err != nil || code != http.StatusCreated {
			t.Errorf("dry-run apply to a missing object: %d %v, want 201", code, err)
		}
		if _, err := c.Get(ctx, "applied-dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after dry-run apply-create: %v, want NotFound", err)
		}
	})

	t.Run("DELETE", func(t *testing.T) {
		wantBody := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"real","kind":"configmaps","uid":%q}}`, real.UID)
		r := sendRaw(t, d, http.MethodDelete, base+"/real?dryRun=All", "", nil)
		wantStatusBody(t, "dry-run DELETE", r, http.StatusOK, wantBody)
		r = sendRaw(t, d, http.MethodDelete, base+"/real", "application/json", []byte(`{"apiVersion":"v1","kind":"DeleteOptions","dryRun":["All"]}`))
		wantStatusBody(t, "DELETE with dryRun in the body", r, http.StatusOK, wantBody)
		if err := c.Delete(ctx, "real", metav1.DeleteOptions{DryRun: dryRunAll, PropagationPolicy: ptr(metav1.DeletePropagationForeground)}); err != nil {
			t.Errorf("dry-run foreground delete: %v", err)
		}
		unchanged(t, real)

		// An object with a finalizer: the answer shows it terminating,
		// the stored one is not.
		r = sendRaw(t, d, http.MethodDelete, base+"/fin?dryRun=All", "", nil)
		cm := decodeCM(t, "dry-run DELETE of an object with a finalizer", r, http.StatusOK)
		if cm.DeletionTimestamp == nil || cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 {
			t.Errorf("dry-run DELETE answer: deletionTimestamp %v deletionGracePeriodSeconds %v, want both set (0)", cm.DeletionTimestamp, cm.DeletionGracePeriodSeconds)
		}
		unchanged(t, fin)

		// Namespaces are not deleted either.
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{DryRun: dryRunAll}); err != nil {
			t.Fatalf("dry-run namespace delete: %v", err)
		}
		got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || got.Status.Phase != corev1.NamespaceActive || got.DeletionTimestamp != nil {
			t.Errorf("namespace after dry-run delete: %+v %v, want Active", got.Status, err)
		}
	})

	t.Run("deletecollection", func(t *testing.T) {
		r := sendRaw(t, d, http.MethodDelete, base+"?dryRun=All", "", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("dry-run deletecollection: %d %s", r.Status, r.Body)
		}
		var l corev1.ConfigMapList
		if err := json.Unmarshal(r.Body, &l); err != nil || l.Kind != "ConfigMapList" {
			t.Fatalf("dry-run deletecollection body %s: %v", r.Body, err)
		}
		if got := configMapNames(l.Items); !reflect.DeepEqual(got, []string{"fin", "real"}) {
			t.Errorf("dry-run deletecollection answered %v, want [fin real]", got)
		}
		for _, item := range l.Items {
			if item.Name == "real" && item.DeletionTimestamp != nil {
				t.Errorf("deletecollection item real has a deletionTimestamp")
			}
		}
		if err := c.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dryRunAll}, metav1.ListOptions{}); err != nil {
			t.Errorf("client-go dry-run deletecollection: %v", err)
		}
		unchanged(t, real)
		unchanged(t, fin)
	})

	t.Run("invalid and conflicting dry-run creates fail like real ones", func(t *testing.T) {
		bad := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}`)
		dry := sendRaw(t, d, http.MethodPost, base+"?dryRun=All", "application/json", bad)
		wantStatusBody(t, "dry-run create of an invalid name", dry, http.StatusUnprocessableEntity,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","reason":"Invalid","details":{"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","field":"metadata.name"}]},"code":422}`)
		taken := sendRaw(t, d, http.MethodPost, base+"?dryRun=All", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"real"}}`))
		wantStatusBody(t, "dry-run create of a taken name", taken, http.StatusConflict,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"real\" already exists","reason":"AlreadyExists","details":{"name":"real","kind":"configmaps"},"code":409}`)
		// Dry-run updates are checked too: a stale resourceVersion conflicts.
		stale := real.DeepCopy()
		stale.ResourceVersion = "1"
		_, err := c.Update(ctx, stale, metav1.UpdateOptions{DryRun: dryRunAll})
		if !apierrors.IsConflict(err) {
			t.Errorf("dry-run update with a stale resourceVersion: %v, want Conflict", err)
		}
		// A dry-run apply reports field conflicts like a real one: k
		// belongs to the creator's Update entry.
		_, err = c.Apply(ctx, corev1ac.ConfigMap("real", ns).WithData(map[string]string{"k": "other"}), metav1.ApplyOptions{FieldManager: "dry", DryRun: dryRunAll})
		wantApplyConflict(t, err, `Apply failed with 1 conflict: conflict with "edgeapi-e2e" using v1: .data.k`, conflictCause(".data.k", `"edgeapi-e2e" using v1`))
		// And a dry-run delete of a missing object is 404.
		if err := c.Delete(ctx, "missing", metav1.DeleteOptions{DryRun: dryRunAll}); !apierrors.IsNotFound(err) {
			t.Errorf("dry-run delete of a missing object: %v, want NotFound", err)
		}
	})

	// After all of that, the next real write takes the next revision and
	// is the first event the watch sees.
	t.Run("no revision used and no event sent", func(t *testing.T) {
		got, err := c.Patch(ctx, "real", types.MergePatchType, []byte(`{"data":{"k":"real-change"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("real patch: %v", err)
		}
		last, err := strconv.ParseInt(lastRV, 10, 64)
		if err != nil {
			t.Fatalf("resourceVersion %q: %v", lastRV, err)
		}
		// On etcd the revision is the cluster's, which the other tests'
		// daemons on the shared etcd advance too.
		if want := strconv.FormatInt(last+1, 10); got.ResourceVersion != want && !onEtcd() {
			t.Errorf("first real write after the dry runs has resourceVersion %s, want %s (one above the last real write)", got.ResourceVersion, want)
		}
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			cm, _ := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Modified || cm == nil || cm.Name != "real" || cm.ResourceVersion != got.ResourceVersion {
				t.Errorf("first watch event after the dry runs: %s %+v, want MODIFIED real at %s", ev.Type, ev.Object, got.ResourceVersion)
			}
		case <-time.After(watchHang):
			t.Fatalf("no watch event within %v of the real write", watchHang)
		}
	})
}

// TestDryRun_InvalidValues sends dryRun values other than All: kube-apiserver
// answers 422 Invalid on the verb's options kind.
func TestDryRun_InvalidValues(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	const ns = "dry-invalid"
	createNamespace(t, cs, ns)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
	requests := []struct {
		method, path, ct, optionsKind string
		body                          []byte
	}{
		{http.MethodPost, base, "application/json", "CreateOptions", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}`)},
		{http.MethodPut, base + "/x", "application/json", "UpdateOptions", body},
		{http.MethodPatch, base + "/x", "application/merge-patch+json", "PatchOptions", []byte(`{"data":{"a":"b"}}`)},
		{http.MethodDelete, base + "/x", "", "DeleteOptions", nil},
		{http.MethodDelete, base, "", "DeleteOptions", nil},
	}
	for _, value := range []string{"", "Foo", "all"} {
		for _, rq := range requests {
			sep := "?"
			r := sendRaw(t, d, rq.method, rq.path+sep+"dryRun="+value, rq.ct, rq.body)
			want := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"%[1]s.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"%[2]s\"]: supported values: \"All\"","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"%[1]s","causes":[{"reason":"FieldValueNotSupported","message":"Unsupported value: [\"%[2]s\"]: supported values: \"All\"","field":"dryRun"}]},"code":422}`, rq.optionsKind, value)
			wantStatusBody(t, fmt.Sprintf("%s %s?dryRun=%s", rq.method, rq.path, value), r, http.StatusUnprocessableEntity, want)
		}
	}
	// Nothing happened.
	l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := configMapNames(l.Items); !reflect.DeepEqual(got, []string{"x"}) || len(l.Items[0].Data) != 0 {
		t.Errorf("after rejected requests: %v %v, want only x, unchanged", got, l.Items)
	}
}

// TestDryRun_DeleteLeavesDependents dry-run deletes owners with each
// propagation policy: the garbage collector must not act on a deletion that
// did not happen. A real deletion of another owner afterwards serves as a
// barrier: once its dependent is collected, the collector has seen
// everything before it.
func TestDryRun_DeleteLeavesDependents(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "dry-gc"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	var deps []*corev1.ConfigMap
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		name := strings.ToLower(string(policy))
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-" + name, Labels: map[string]string{"role": "owner"}}})
		deps = append(deps, mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep-" + name, OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}}))
		p := policy
		if err := c.Delete(ctx, owner.Name, metav1.DeleteOptions{DryRun: dryRunAll, PropagationPolicy: &p}); err != nil {
			t.Fatalf("dry-run delete %s: %v", owner.Name, err)
		}
		if err := c.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dryRunAll, PropagationPolicy: &p}, metav1.ListOptions{LabelSelector: "role=owner"}); err != nil {
			t.Fatalf("dry-run deletecollection (%s): %v", policy, err)
		}
		if got := mustGetCM(t, cs, ns, owner.Name); !reflect.DeepEqual(got, owner) {
			t.Errorf("owner changed by a dry-run %s delete:\n got %+v\nwant %+v", policy, got, owner)
		}
	}

	barrierOwner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "barrier"}})
	mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "barrier-dep", OwnerReferences: []metav1.OwnerReference{ownerRef(barrierOwner, false)}}})
	deleteWith(t, cs, ns, "barrier", metav1.DeletePropagationBackground)
	waitCMGone(t, cs, ns, "barrier-dep")

	for _, dep := range deps {
		if got := mustGetCM(t, cs, ns, dep.Name); !reflect.DeepEqual(got, dep) {
			t.Errorf("dependent %s changed after its owner's dry-run delete:\n got %+v\nwant %+v", dep.Name, got, dep)
		}
	}
}

// clusterRolesAggregated reports whether the aggregation controller has
// filled the bootstrap aggregated ClusterRoles: view has rules, edit has
// all of view's (view is aggregated to edit) and admin all of edit's.
func clusterRolesAggregated(t *testing.T, cs kubernetes.Interface) bool {
	t.Helper()
	rules := map[string][]rbacv1.PolicyRule{}
	for _, name := range []string{"admin", "edit", "view"} {
		r, err := cs.RbacV1().ClusterRoles().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get ClusterRole %s: %v", name, err)
		}
		rules[name] = r.Rules
	}
	has := func(all, some []rbacv1.PolicyRule) bool {
		for _, r := range some {
			if !slices.ContainsFunc(all, func(a rbacv1.PolicyRule) bool { return reflect.DeepEqual(a, r) }) {
				return false
			}
		}
		return true
	}
	return len(rules["view"]) > 0 && has(rules["edit"], rules["view"]) && has(rules["admin"], rules["edit"])
}
