package registry

import (
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CoordinatedLeaderElection is the state of kube-apiserver's feature gate
// of that name, off by default in 1.36: then spec.strategy and
// spec.preferredHolder are dropped on create, and on update unless already
// set. A var so tests can turn it on.
var CoordinatedLeaderElection = false

func leaseKind() *Kind {
	return &Kind{
		GVK:                 coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		Resource:            "leases",
		Singular:            "lease",
		ListKind:            "LeaseList",
		InternalPackage:     "coordination",
		Namespaced:          true,
		Verbs:               verbsAll,
		StorageResource:     "leases.coordination.k8s.io",
		StorageGVK:          coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		New:                 func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:             func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy:            leaseStrategy{},
		AllowCreateOnUpdate: true,
		TableColumns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
			ageColumn(),
		},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok {
				return nil, fmt.Errorf("leases table: unexpected object %T", obj)
			}
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []interface{}{l.Name, holder, translateTimestampSince(l.CreationTimestamp)}, nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok {
				return nil
			}
			return objectMetaFieldSet(&l.ObjectMeta, true)
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace"},
	}
}

// leaseStrategy is kube-apiserver's pkg/registry/coordination/lease
// strategy. Unlike the other built-in kinds, Leases need a resourceVersion
// on PUT.
type leaseStrategy struct{}

func (leaseStrategy) AllowUnconditionalUpdate() bool             { return false }
func (leaseStrategy) NameValidator() func(string, bool) []string { return leaseName }

var leaseName = withPathSegment(apimachineryvalidation.NameIsDNSSubdomain)

func (leaseStrategy) PrepareForCreate(obj runtime.Object) {
	l := obj.(*coordinationv1.Lease)
	if !CoordinatedLeaderElection {
		l.Spec.Strategy = nil
		l.Spec.PreferredHolder = nil
	}
}

func (leaseStrategy) PrepareForUpdate(obj, old runtime.Object) {
	l, oldL := obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease)
	if !CoordinatedLeaderElection {
		if oldL.Spec.Strategy == nil {
			l.Spec.Strategy = nil
		}
		if oldL.Spec.PreferredHolder == nil {
			l.Spec.PreferredHolder = nil
		}
	}
}

// Validate is kube-apiserver's ValidateLease. Leases use apimachinery's
// object-meta validation, without the core group's finalizer-name rule.
func (leaseStrategy) Validate(obj runtime.Object) field.ErrorList {
	l := obj.(*coordinationv1.Lease)
	errs := validateObjectMeta(&l.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
	return withGenericCreate(errs, obj, true)
}

// ValidateUpdate is kube-apiserver's ValidateLeaseUpdate.
func (leaseStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	l, oldL := obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease)
	errs := validateObjectMetaUpdate(&l.ObjectMeta, &oldL.ObjectMeta)
	errs = append(errs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
	return errs
}

// validLeaseStrategies are the strategies without a domain prefix.
var validLeaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// validateLeaseSpec is kube-apiserver's ValidateLeaseSpec.
func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, validateCoordinatedLeaseStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// validateCoordinatedLeaseStrategy is kube-apiserver's
// ValidateCoordinatedLeaseStrategy, including its doubled field path
// ("spec.strategy.strategy").
func validateCoordinatedLeaseStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !strings.Contains(string(strategy), "/") {
		for _, s := range validLeaseStrategies {
			if s == strategy {
				return nil
			}
		}
		return field.ErrorList{field.NotSupported(fldPath.Child("strategy"), strategy, validLeaseStrategies)}
	}
	for _, msg := range validation.IsQualifiedName(string(strategy)) {
		errs = append(errs, field.Invalid(fldPath.Child("strategy"), strategy, msg))
	}
	return errs
}
