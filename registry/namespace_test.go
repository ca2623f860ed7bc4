package registry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

var namespaceGK = corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind()

func storedNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: "9b2e4f60-1c3d-4e5f-8a7b-0c1d2e3f4a5b", ResourceVersion: "1",
			CreationTimestamp: metav1.Unix(1700000000, 0),
			Labels:            map[string]string{corev1.LabelMetadataName: name},
		},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func TestNamespaceStrategy_PrepareForCreate(t *testing.T) {
	// s30 create-ns and create-ns-with-namespace-field.
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "s30-other", Namespace: "foo"},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	s := namespaceStrategy{}
	s.PrepareForCreate(ns)
	want := storedNamespace("s30-other")
	want.UID, want.ResourceVersion, want.CreationTimestamp = "", "", metav1.Time{}
	if !reflect.DeepEqual(ns, want) {
		t.Errorf("got %+v\nwant %+v", ns, want)
	}
	assertNoErrors(t, s.Validate(ns))

	t.Run("keeps other finalizers", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x"}}}
		s.PrepareForCreate(ns)
		if want := []corev1.FinalizerName{"example.com/x", "kubernetes"}; !reflect.DeepEqual(ns.Spec.Finalizers, want) {
			t.Errorf("got %v, want %v", ns.Spec.Finalizers, want)
		}
	})

	t.Run("generated name gets its label in Canonicalize", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}
		s.PrepareForCreate(ns)
		ns.Name = "gen-abcde"
		var c Canonicalizer = s
		c.Canonicalize(ns)
		if got := ns.Labels[corev1.LabelMetadataName]; got != "gen-abcde" {
			t.Errorf("got label %q", got)
		}
	})
}

func TestNamespaceStrategy_Validate(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Bad.Name"}}
	s := namespaceStrategy{}
	Scheme.Default(ns)
	s.PrepareForCreate(ns)
	assertInvalid(t, "s30-namespace-lifecycle/create-invalid-ns", namespaceGK, ns.Name, s.Validate(ns), nil)
}

func TestNamespaceStrategy_PrepareForUpdate(t *testing.T) {
	// s30 change-name-label: the label always follows the name; spec
	// finalizers and status change only through their subresources.
	old := storedNamespace("s30-ns-lifecycle")
	ns := old.DeepCopy()
	ns.Labels[corev1.LabelMetadataName] = "other"
	ns.Spec.Finalizers = nil
	ns.Status.Phase = corev1.NamespaceTerminating
	s := namespaceStrategy{}
	s.PrepareForUpdate(ns, old)
	if !reflect.DeepEqual(ns, old) {
		t.Errorf("got %+v, want unchanged %+v", ns, old)
	}
	assertNoErrors(t, updateErrs(ns, old, false, s.ValidateUpdate(ns, old)))
}

func TestNamespaceStrategy_ValidateFinalizeUpdate(t *testing.T) {
	old := storedNamespace("s30-ns-lifecycle")
	ts := metav1.Unix(1700000100, 0)
	old.DeletionTimestamp = &ts
	old.Status.Phase = corev1.NamespaceTerminating

	ns := old.DeepCopy()
	ns.Spec.Finalizers = []corev1.FinalizerName{"Not Valid"}
	ns.Status.Phase = corev1.NamespaceActive
	var s FinalizeStrategy = namespaceStrategy{}
	s.PrepareForFinalize(ns, old)
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("finalize changed status to %q", ns.Status.Phase)
	}
	assertInvalid(t, "s30-namespace-lifecycle/finalize-invalid", namespaceGK, ns.Name, updateErrs(ns, old, false, s.ValidateFinalizeUpdate(ns, old)), nil)

	ns.Spec.Finalizers = nil
	assertNoErrors(t, s.ValidateFinalizeUpdate(ns, old))
}

func TestNamespaceStrategy_ValidateStatusUpdate(t *testing.T) {
	var s StatusStrategy = namespaceStrategy{}
	old := storedNamespace("a")
	ns := old.DeepCopy()
	ns.Spec.Finalizers = nil
	ns.Status.Phase = corev1.NamespaceTerminating
	s.PrepareForStatusUpdate(ns, old)
	if !reflect.DeepEqual(ns.Spec, old.Spec) {
		t.Errorf("status update changed spec to %v", ns.Spec)
	}
	errs := s.ValidateStatusUpdate(ns, old)
	if len(errs) != 1 || errs[0].Error() != `status.Phase: Invalid value: "Terminating": may only be 'Active' if `+"`deletionTimestamp`"+` is empty` {
		t.Errorf("got %v", errs)
	}
	ns.Status.Phase = corev1.NamespaceActive
	assertNoErrors(t, s.ValidateStatusUpdate(ns, old))
}

func TestNamespaceKind_FieldSet(t *testing.T) {
	k := namespaceKind()
	got := k.FieldSet(storedNamespace("a"))
	want := fields.Set{"metadata.name": "a", "status.phase": "Active"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	sel := fields.ParseSelectorOrDie("metadata.name=a,status.phase=Active")
	if !sel.Matches(got) {
		t.Errorf("s26 namespaces-field-status selector does not match")
	}
}
