package registry

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var configMapGK = corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind()

func boolPtr(b bool) *bool { return &b }

// storedConfigMap returns a ConfigMap as the store holds it.
func storedConfigMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns1", UID: types.UID("6a1a3ec6-4b3c-4f2e-8a0e-1f7f9c0a2b11"),
			ResourceVersion: "5", CreationTimestamp: metav1.Unix(1700000000, 0),
		},
		Data: data,
	}
}

func TestConfigMapStrategy_Validate(t *testing.T) {
	longPrefix := strings.Repeat("x", 260) + "-" // as in the s03 request
	tests := []struct {
		golden  string
		cm      *corev1.ConfigMap
		replace map[string]string
	}{
		{"s02-errors/create-422-invalid-name", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name!", Namespace: "ns1"}}, nil},
		{"s22-dry-run/dryrun-invalid-object", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "ns1"}}, nil},
		{"s02-errors/create-422-two-causes", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "ok-name", Namespace: "ns1", Labels: map[string]string{"bad label": "x"}},
			Data:       map[string]string{"bad key!": "v"},
		}, nil},
		{"s02-errors/create-422-no-name", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1"}}, nil},
		{"s03-generate-name/generate-name-invalid", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "Bad_", Name: "Bad_q7x2k", Namespace: "ns1"}},
			map[string]string{"<gen:4>": "q7x2k"}},
		{"s03-generate-name/generate-name-long", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: longPrefix, Name: longPrefix[:58] + "q7x2k", Namespace: "ns1"}},
			map[string]string{"<gen:5>": "q7x2k"}},
		{"s27-immutable-configmap/binary-data-overlap", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "overlap", Namespace: "ns1"},
			Data:       map[string]string{"x": "1"},
			BinaryData: map[string][]byte{"x": {0}},
		}, nil},
		{"s23-finalizers/create-bad-finalizer", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns1", Finalizers: []string{"not a valid finalizer"}}}, nil},
		{"s23-finalizers/create-unqualified-finalizer", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns1", Finalizers: []string{"simple"}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s := configMapStrategy{}
			s.PrepareForCreate(tt.cm)
			assertInvalid(t, tt.golden, configMapGK, tt.cm.Name, s.Validate(tt.cm), tt.replace)
		})
	}

	t.Run("valid", func(t *testing.T) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "ok", Namespace: "ns1", Finalizers: []string{"example.com/x", "orphan"}},
			Data:       map[string]string{"k": "v", "a.b_c-D": "w"},
			BinaryData: map[string][]byte{"b": {0, 1, 2}},
			Immutable:  boolPtr(true),
		}
		assertNoErrors(t, configMapStrategy{}.Validate(cm))
	})

	t.Run("too big", func(t *testing.T) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "ns1"},
			Data:       map[string]string{"a": strings.Repeat("x", corev1.MaxSecretSize)},
			BinaryData: map[string][]byte{"b": {1}},
		}
		errs := configMapStrategy{}.Validate(cm)
		// The empty path is kube-apiserver's way to name the whole object;
		// it prints as "[]".
		if len(errs) != 1 || errs[0].Field != "[]" || errs[0].ErrorBody() != "Too long: may not be more than 1048576 bytes" {
			t.Errorf("got %v, want one whole-object TooLong error", errs)
		}
	})

	t.Run("path segment names pass only after the kind's rule", func(t *testing.T) {
		// Names a DNS subdomain rejects never reach the generic check, so
		// only the kind's message shows.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "..", Namespace: "ns1"}}
		errs := configMapStrategy{}.Validate(cm)
		if len(errs) != 1 || !strings.Contains(errs[0].Detail, "RFC 1123 subdomain") {
			t.Errorf("got %v", errs)
		}
	})
}

func TestConfigMapStrategy_ValidateUpdate(t *testing.T) {
	frozen := func() *corev1.ConfigMap {
		cm := storedConfigMap("frozen", map[string]string{"k": "v"})
		cm.Immutable = boolPtr(true)
		return cm
	}
	thaw := func() *corev1.ConfigMap {
		cm := storedConfigMap("thaw", map[string]string{"k": "final"})
		cm.Immutable = boolPtr(true)
		return cm
	}
	tests := []struct {
		golden  string
		old     *corev1.ConfigMap
		mutate  func(cm *corev1.ConfigMap)
		replace map[string]string
	}{
		{"s27-immutable-configmap/change-data", frozen(), func(cm *corev1.ConfigMap) { cm.Data["k"] = "v2" }, nil},
		{"s27-immutable-configmap/add-data-key", frozen(), func(cm *corev1.ConfigMap) { cm.Data["k2"] = "x" }, nil},
		{"s27-immutable-configmap/add-binarydata", frozen(), func(cm *corev1.ConfigMap) { cm.BinaryData = map[string][]byte{"b": {0, 1, 2}} }, nil},
		{"s27-immutable-configmap/unset-immutable", frozen(), func(cm *corev1.ConfigMap) { cm.Immutable = boolPtr(false) }, nil},
		{"s27-immutable-configmap/then-change", thaw(), func(cm *corev1.ConfigMap) { cm.Data["k"] = "again" }, nil},
		{"s16-json-patch/invalid-result", storedConfigMap("a", map[string]string{"k1": "v"}), func(cm *corev1.ConfigMap) { cm.Data["bad key"] = "x" }, nil},
		{"s19-ssa-basics/apply-invalid", storedConfigMap("a", map[string]string{"k": "v"}), func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"bad key": "v"} }, nil},
		// kube-apiserver lists these causes twice: once from the generic
		// checks (ValidateGenericUpdate), once from the strategy.
		{"s17-merge-patch/change-uid", storedConfigMap("a", nil), func(cm *corev1.ConfigMap) { cm.UID = "00000000-0000-0000-0000-000000000000" },
			map[string]string{"<uid:3>": "00000000-0000-0000-0000-000000000000"}},
		{"s23-finalizers/add-finalizer-after-deletion", func() *corev1.ConfigMap {
			cm := storedConfigMap("f", nil)
			ts := metav1.Unix(1700000100, 0)
			cm.DeletionTimestamp = &ts
			cm.Finalizers = []string{"example.com/block"}
			return cm
		}(), func(cm *corev1.ConfigMap) { cm.Finalizers = append(cm.Finalizers, "example.com/late") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s := configMapStrategy{}
			cm := tt.old.DeepCopy()
			tt.mutate(cm)
			s.PrepareForUpdate(cm, tt.old)
			assertInvalid(t, tt.golden, configMapGK, cm.Name, updateErrs(cm, tt.old, true, s.ValidateUpdate(cm, tt.old)), tt.replace)
		})
	}

	t.Run("the strategy alone reports the uid once", func(t *testing.T) {
		old := storedConfigMap("a", nil)
		cm := old.DeepCopy()
		cm.UID = "00000000-0000-0000-0000-000000000000"
		if errs := (configMapStrategy{}).ValidateUpdate(cm, old); len(errs) != 1 || errs[0].Field != "metadata.uid" {
			t.Errorf("got %v", errs)
		}
	})

	allowed := []struct {
		name   string
		old    *corev1.ConfigMap
		mutate func(cm *corev1.ConfigMap)
	}{
		{"labels of an immutable configmap", frozen(), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"ok": "yes"} }},
		{"same data again", frozen(), func(cm *corev1.ConfigMap) {}},
		{"make immutable and change data together", storedConfigMap("thaw", map[string]string{"k": "v"}), func(cm *corev1.ConfigMap) {
			cm.Immutable = boolPtr(true)
			cm.Data["k"] = "final"
		}},
	}
	for _, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			cm := tt.old.DeepCopy()
			tt.mutate(cm)
			assertNoErrors(t, updateErrs(cm, tt.old, true, configMapStrategy{}.ValidateUpdate(cm, tt.old)))
		})
	}
}

func TestKind_CheckFieldSelectorKey(t *testing.T) {
	g := golden(t, "s26-selectors/field-unsupported")
	var want statusFields
	if err := jsonUnmarshal(g.Body, &want); err != nil {
		t.Fatal(err)
	}
	reg := Builtin()
	tests := []struct {
		gvr     string
		key     string
		wantErr string
	}{
		{"/v1/configmaps", "data.k", want.Message},
		{"/v1/configmaps", "metadata.name", ""},
		{"/v1/configmaps", "metadata.namespace", ""},
		{"/v1/secrets", "type", ""},
		{"/v1/secrets", "data.k", "field label not supported: data.k"},
		{"/v1/namespaces", "status.phase", ""},
		{"/v1/namespaces", "metadata.namespace", "field label not supported: metadata.namespace"},
		{"/v1/events", "involvedObject.name", ""},
		{"/v1/events", "reportingComponent", ""},
		{"/v1/events", "regarding.name", "field label not supported: regarding.name"},
		{"events.k8s.io/v1/events", "regarding.name", ""},
		{"events.k8s.io/v1/events", "reportingController", ""},
		{"events.k8s.io/v1/events", "involvedObject.name", "field label not supported: involvedObject.name"},
		{"coordination.k8s.io/v1/leases", "spec.holderIdentity", `"spec.holderIdentity" is not a known field selector: only "metadata.name", "metadata.namespace"`},
	}
	for _, tt := range tests {
		t.Run(tt.gvr+" "+tt.key, func(t *testing.T) {
			k := reg.Lookup(parseGVR(t, tt.gvr))
			err := k.CheckFieldSelectorKey(tt.key)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("got %q, want %q", got, tt.wantErr)
			}
		})
	}
}
