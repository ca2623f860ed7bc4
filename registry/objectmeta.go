package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object-meta validation shared by the built-in strategies. The functions
// mirror kube-apiserver's: the generic checks of
// k8s.io/apiserver/pkg/registry/rest (BeforeCreate, validateCommonFields)
// and the core group's ValidateObjectMeta/ValidateObjectMetaUpdate, which
// add the "standard finalizer name" rule to apimachinery's.

var metadataPath = field.NewPath("metadata")

// nameFunc is an apimachinery ValidateNameFunc: prefix is true when name is
// a generateName.
type nameFunc = apimachineryvalidation.ValidateNameFunc

// withPathSegment returns a name validator that applies kindName (if any)
// and, when that passes, kube-apiserver's generic rule that names are
// usable as URL path segments.
func withPathSegment(kindName nameFunc) nameFunc {
	return func(name string, prefix bool) []string {
		if kindName != nil {
			if msgs := kindName(name, prefix); len(msgs) > 0 {
				return msgs
			}
		}
		return path.ValidatePathSegmentName(name, prefix)
	}
}

// ValidateGenericCreate is the object-meta check kube-apiserver's
// rest.BeforeCreate runs after the strategy's Validate passed: names as path
// segments, the namespace as required by scope, labels, annotations, owner
// references, finalizers and managedFields. Strategies include it in
// Validate; it is exported for strategies defined elsewhere (CRDs).
func ValidateGenericCreate(obj runtime.Object, namespaced bool) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(metadataPath, err)}
	}
	return apimachineryvalidation.ValidateObjectMetaAccessor(m, namespaced, path.ValidatePathSegmentName, metadataPath)
}

// ValidateGenericUpdate is kube-apiserver's rest validateCommonFields, which
// rest.BeforeUpdate runs before the strategy's ValidateUpdate (or the
// status or finalize strategy's): the create-time object-meta check (names
// as path segments, labels, annotations, ...) plus the update rules
// (immutable name, namespace, uid, creation and deletion timestamps; no
// new finalizers while deleting; resourceVersion set; generation not
// decremented). The HTTP layer calls it for every kind and puts its errors
// first.
func ValidateGenericUpdate(obj, old runtime.Object, namespaced bool) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(metadataPath, err)}
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return field.ErrorList{field.InternalError(metadataPath, err)}
	}
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(m, namespaced, path.ValidatePathSegmentName, metadataPath)
	return append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(m, om, metadataPath)...)
}

// withGenericCreate completes a strategy's create errors the way
// rest.BeforeCreate does: the generic check runs only when the strategy
// found nothing.
func withGenericCreate(errs field.ErrorList, obj runtime.Object, namespaced bool) field.ErrorList {
	if len(errs) > 0 {
		return errs
	}
	return ValidateGenericCreate(obj, namespaced)
}

// validateCoreObjectMeta is the core group's ValidateObjectMeta:
// apimachinery's plus the standard-finalizer-name rule for each finalizer.
func validateCoreObjectMeta(m *metav1.ObjectMeta, namespaced bool, name nameFunc) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(m, namespaced, name, metadataPath)
	return appendKubeFinalizerErrors(errs, m.Finalizers)
}

// validateCoreObjectMetaUpdate is the core group's ValidateObjectMetaUpdate.
func validateCoreObjectMetaUpdate(m, old *metav1.ObjectMeta) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(m, old, metadataPath)
	return appendKubeFinalizerErrors(errs, m.Finalizers)
}

// MaxReportedErrors is the most errors an Invalid (422) answer lists; the
// HTTP layer counts the others. Validation may append errNotReported, one
// shared value, in place of any error that would land past this index, so
// that a list of 300,000 bad items costs a pointer per item rather than a
// built error (about 200 bytes) per item.
const MaxReportedErrors = 1000

// errNotReported stands for an error past MaxReportedErrors in a list; it
// is never shown.
var errNotReported = field.Invalid(metadataPath, nil, "error not reported")

// appendKubeFinalizerErrors appends the standard-finalizer-name error of
// each finalizer, built only while errs is shorter than MaxReportedErrors.
// Errors are only ever appended to or prepended to, so a stand-in here
// stays past MaxReportedErrors in the final list.
func appendKubeFinalizerErrors(errs field.ErrorList, finalizers []string) field.ErrorList {
	for i, f := range finalizers {
		if !isKubeFinalizerName(f) {
			if len(errs) >= MaxReportedErrors {
				errs = append(errs, errNotReported)
				continue
			}
			errs = append(errs, validateKubeFinalizerName(f, metadataPath.Child("finalizers").Index(i))...)
		}
	}
	return errs
}

// isKubeFinalizerName reports whether name is qualified or standard.
func isKubeFinalizerName(name string) bool {
	return strings.Contains(name, "/") || standardFinalizers[name]
}

// standardFinalizers are the finalizer names that need no domain prefix
// (kube-apiserver's helper.IsStandardFinalizerName).
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// validateKubeFinalizerName rejects unqualified finalizer names other than
// the standard ones.
func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !isKubeFinalizerName(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

// validateFinalizerName is the core group's check of a finalizer named in a
// spec (Namespace spec.finalizers): a qualified name, and a standard one if
// unqualified.
func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateFinalizerName(name, fldPath)
	return append(errs, validateKubeFinalizerName(name, fldPath)...)
}
