package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func namespaceKind() *Kind {
	return &Kind{
		GVK:                 corev1.SchemeGroupVersion.WithKind("Namespace"),
		Resource:            "namespaces",
		Singular:            "namespace",
		ListKind:            "NamespaceList",
		InternalPackage:     "core",
		Namespaced:          false,
		ShortNames:          []string{"ns"},
		Verbs:               verbsNoDeleteCollection,
		StatusSubresource:   true,
		FinalizeSubresource: true,
		StorageResource:     "namespaces",
		StorageGVK:          corev1.SchemeGroupVersion.WithKind("Namespace"),
		New:                 func() runtime.Object { return &corev1.Namespace{} },
		NewList:             func() runtime.Object { return &corev1.NamespaceList{} },
		Strategy:            namespaceStrategy{},
		TableColumns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Status", Type: "string", Description: "The status of the namespace"},
			ageColumn(),
		},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			ns, ok := obj.(*corev1.Namespace)
			if !ok {
				return nil, fmt.Errorf("namespaces table: unexpected object %T", obj)
			}
			return []interface{}{ns.Name, string(ns.Status.Phase), translateTimestampSince(ns.CreationTimestamp)}, nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			ns, ok := obj.(*corev1.Namespace)
			if !ok {
				return nil
			}
			set := objectMetaFieldSet(&ns.ObjectMeta, false)
			set["status.phase"] = string(ns.Status.Phase)
			return set
		},
		// kube-apiserver's field set also has "name", but its field-label
		// conversion rejects it, so it cannot be selected.
		FieldSelectorKeys: []string{"metadata.name", "status.phase"},
		UnknownFieldLabel: fieldLabelNotSupported,
	}
}

// namespaceStrategy is kube-apiserver's pkg/registry/core/namespace
// strategy, with its status and finalize strategies.
type namespaceStrategy struct{}

func (namespaceStrategy) AllowUnconditionalUpdate() bool             { return true }
func (namespaceStrategy) NameValidator() func(string, bool) []string { return namespaceName }

var namespaceName = withPathSegment(apimachineryvalidation.ValidateNamespaceName)

// PrepareForCreate clears metadata.namespace (Namespaces are cluster
// scoped), sets status.phase Active and adds the "kubernetes" finalizer.
func (namespaceStrategy) PrepareForCreate(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Namespace = ""
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	hasKube := false
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			hasKube = true
			break
		}
	}
	if !hasKube {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	setNamespaceNameLabel(ns)
}

// PrepareForUpdate keeps spec.finalizers (changed only through finalize)
// and status (changed only through status) from old.
func (namespaceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Namespace = ""
	ns.Spec.Finalizers = oldNS.Spec.Finalizers
	ns.Status = oldNS.Status
	setNamespaceNameLabel(ns)
}

// Canonicalize sets the kubernetes.io/metadata.name label to the name; a
// name generated from generateName is known only now.
func (namespaceStrategy) Canonicalize(obj runtime.Object) {
	setNamespaceNameLabel(obj.(*corev1.Namespace))
}

func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func (namespaceStrategy) Validate(obj runtime.Object) field.ErrorList {
	return withGenericCreate(validateNamespace(obj.(*corev1.Namespace)), obj, false)
}

func (namespaceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := validateNamespace(ns)
	errs = append(errs, validateCoreObjectMetaUpdate(&ns.ObjectMeta, &oldNS.ObjectMeta)...)
	return errs
}

// PrepareForStatusUpdate keeps spec from old; metadata may change, as in
// kube-apiserver.
func (namespaceStrategy) PrepareForStatusUpdate(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Namespace = ""
	ns.Spec = oldNS.Spec
}

// ValidateStatusUpdate is kube-apiserver's ValidateNamespaceStatusUpdate:
// the phase must be Active unless the namespace is being deleted, and
// Terminating then. The field path "status.Phase" is kube-apiserver's.
func (namespaceStrategy) ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := validateCoreObjectMetaUpdate(&ns.ObjectMeta, &oldNS.ObjectMeta)
	phasePath := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// PrepareForFinalize keeps status from old.
func (namespaceStrategy) PrepareForFinalize(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Namespace = ""
	ns.Status = oldNS.Status
}

// ValidateFinalizeUpdate is kube-apiserver's ValidateNamespaceFinalizeUpdate.
func (namespaceStrategy) ValidateFinalizeUpdate(obj, old runtime.Object) field.ErrorList {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := validateCoreObjectMetaUpdate(&ns.ObjectMeta, &oldNS.ObjectMeta)
	finalizers := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), finalizers.Index(i))...)
	}
	return errs
}

// validateNamespace is kube-apiserver's ValidateNamespace. Its
// spec.finalizers errors carry no index, as in kube-apiserver.
func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateCoreObjectMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName)
	for _, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers"))...)
	}
	return errs
}
