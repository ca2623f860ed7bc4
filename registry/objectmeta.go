package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	return validateObjectMeta(m, namespaced, path.ValidatePathSegmentName)
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
	errs := validateObjectMeta(m, namespaced, path.ValidatePathSegmentName)
	return append(errs, validateObjectMetaUpdate(m, om)...)
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
	errs := validateObjectMeta(m, namespaced, name)
	return appendKubeFinalizerErrors(errs, m.Finalizers)
}

// validateCoreObjectMetaUpdate is the core group's ValidateObjectMetaUpdate.
func validateCoreObjectMetaUpdate(m, old *metav1.ObjectMeta) field.ErrorList {
	errs := validateObjectMetaUpdate(m, old)
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

// validateObjectMeta is apimachinery's ValidateObjectMetaAccessor, with
// owner references checked in linear time (validateOwnerReferences).
func validateObjectMeta(m metav1.Object, namespaced bool, name nameFunc) field.ErrorList {
	if controllers(m.GetOwnerReferences()) < 3 {
		return apimachineryvalidation.ValidateObjectMetaAccessor(m, namespaced, name, metadataPath)
	}
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(withoutOwnerReferences{m}, namespaced, name, metadataPath)
	return append(errs, validateOwnerReferences(m.GetOwnerReferences())...)
}

// validateObjectMetaUpdate is apimachinery's
// ValidateObjectMetaAccessorUpdate, with owner references checked in
// linear time (validateOwnerReferences).
func validateObjectMetaUpdate(m, old metav1.Object) field.ErrorList {
	if controllers(m.GetOwnerReferences()) < 3 {
		return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(m, old, metadataPath)
	}
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(withoutOwnerReferences{m}, old, metadataPath)
	return append(errs, validateOwnerReferences(m.GetOwnerReferences())...)
}

// withoutOwnerReferences hides an object's owner references from
// apimachinery's validation.
type withoutOwnerReferences struct{ metav1.Object }

func (withoutOwnerReferences) GetOwnerReferences() []metav1.OwnerReference { return nil }

// controllers counts the references marked as the controller.
func controllers(refs []metav1.OwnerReference) int {
	n := 0
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			n++
		}
	}
	return n
}

// validateOwnerReferences is apimachinery's ValidateOwnerReferences for a
// list with three or more controllers, where apimachinery is quadratic: it
// reports each controller after the first with an error whose value is the
// whole list (5,000 controller references, a 415 KB body, took 22 s and
// 2.2 GB). This reports only the first of those, after the same
// per-reference errors, and after the other object-meta errors rather than
// between the annotations' and the finalizers'. Lists with fewer than
// three controllers are answered exactly as kube-apiserver answers them.
func validateOwnerReferences(refs []metav1.OwnerReference) field.ErrorList {
	fldPath := metadataPath.Child("ownerReferences")
	var errs field.ErrorList
	first, reported := "", false
	for _, ref := range refs {
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if gvk.Version == "" {
			errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), ref.APIVersion, "version must not be empty"))
		}
		if gvk.Kind == "" {
			errs = append(errs, field.Invalid(fldPath.Child("kind"), ref.Kind, "must not be empty"))
		}
		if ref.Name == "" {
			errs = append(errs, field.Invalid(fldPath.Child("name"), ref.Name, "must not be empty"))
		}
		if ref.UID == "" {
			errs = append(errs, field.Invalid(fldPath.Child("uid"), ref.UID, "must not be empty"))
		}
		if _, banned := apimachineryvalidation.BannedOwners[gvk]; banned {
			errs = append(errs, field.Invalid(fldPath, ref, fmt.Sprintf("%s is disallowed from being an owner", gvk)))
		}
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		name := ref.Kind + "/" + ref.Name
		switch {
		case first == "":
			first = name
		case !reported:
			reported = true
			errs = append(errs, field.Invalid(fldPath, refs, fmt.Sprintf(
				"Only one reference can have Controller set to true. Found \"true\" in references for %v and %v", first, name)))
		}
	}
	return errs
}
