// Package crdvalidation checks apiextensions.k8s.io CustomResourceDefinitions
// as kube-apiserver 1.36 does: the same rules, the same field paths and the
// same messages, so that a client sees the 422 causes kube-apiserver would
// give. The code is edgeapi's own; kube-apiserver's validation package
// (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation) is
// only imported by the tests, which compare every case with it, because it
// links apiserver's admission machinery and more (about 18 MB).
//
// It reuses the light parts of apiextensions-apiserver: the structural
// schema (pkg/apiserver/schema) with its structural rules, pruning and
// object-meta checks, kube-openapi's value validator for defaults, and
// the CEL compiler of pkg/apiserver/schema/cel, which the custom resource
// handlers link anyway.
//
// It validates the internal version (pkg/apis/apiextensions), as
// kube-apiserver does after converting the v1 request: a schema shared by
// every version is spec.validation there, and the error paths say so.
//
// x-kubernetes-validations rules are compiled and their cost estimated
// with the CEL package the custom resource handlers run them with
// (pkg/apiserver/schema/cel) in kube-apiserver's base environment. Unlike
// kube-apiserver, the work of compiling is bounded (see compileBudget).
//
// Defaults are run through the rules of their node and below.
//
// Not done: kube-apiserver's last step, building a value validator from a
// schema that passed every rule (which cannot fail for such a schema), is
// left out.
package crdvalidation

import (
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// policy holds the rules that depend on the stored object. kube-apiserver
// does not tighten validation on data it accepted before: an update keeps
// a rule off when the stored CRD already breaks it. A create has every
// rule on.
type policy struct {
	// everyVersionHasSchema: each version needs an openAPIV3Schema.
	everyVersionHasSchema bool
	// knownTypes: type must be one of the six OpenAPI v3 types.
	knownTypes bool
	// structural: schemas must be structural (also forced on by
	// preserveUnknownFields false, defaults and x-kubernetes-* extensions).
	structural bool
	// prunedDefaults: defaults must hold no field the schema would prune.
	prunedDefaults bool
	// atomicSetItems: items of an x-kubernetes-list-type=set list are
	// atomic.
	atomicSetItems bool
	// listKeyRules: set and map list items are not nullable, and map keys
	// are required or defaulted and not nullable.
	listKeyRules bool
	// knownReviewVersion: a webhook's conversionReviewVersions include v1
	// or v1beta1.
	knownReviewVersion bool
	// fixedScopeAndKind: scope and names.kind are immutable (the CRD is
	// established).
	fixedScopeAndKind bool
	// checkCABundle: a webhook's caBundle must parse. Off on create and
	// before the CRD is established, and when the stored one did not parse.
	checkCABundle bool
	// manySelectableFields names the versions ("" for the top level) that
	// may keep more than maxSelectableFields because they did and are
	// unchanged.
	manySelectableFields map[string]bool
	// stored holds the rules and messageExpressions of the stored CRD,
	// which compile with every library function (see expressions).
	stored expressions
	// unchangedSchemas names the versions whose schema the update leaves
	// as it was: their rules may stay over the per-rule cost limit.
	unchangedSchemas map[string]bool
	// compile bounds the work of compiling rules, over every schema.
	compile *compileAllowance
}

// createPolicy is the policy of a create: every rule applies, and an
// invalid caBundle is allowed because the CRD is not established yet.
func createPolicy() policy {
	return policy{
		everyVersionHasSchema: true,
		knownTypes:            true,
		structural:            true,
		prunedDefaults:        true,
		atomicSetItems:        true,
		listKeyRules:          true,
		knownReviewVersion:    true,
		stored:                storedExpressions(nil),
		compile:               newCompileAllowance(),
	}
}

// updatePolicy relaxes each rule the stored CRD old already breaks.
func updatePolicy(crd, old *apiextensions.CustomResourceDefinition) policy {
	established := apiextensions.IsCRDConditionTrue(old, apiextensions.Established)
	return policy{
		everyVersionHasSchema: everyVersionHasSchema(&old.Spec),
		knownTypes:            !anySchema(&old.Spec, hasUnknownType),
		structural:            !anySchemaIs(&old.Spec, isNonStructural),
		prunedDefaults:        !anySchemaIs(&old.Spec, hasUnprunedDefaults),
		atomicSetItems:        !anySchema(&old.Spec, hasNonAtomicSetItems),
		listKeyRules:          !anySchema(&old.Spec, breaksListKeyRules),
		knownReviewVersion:    old.Spec.Conversion == nil || reviewVersionsKnownOrEmpty(old.Spec.Conversion.ConversionReviewVersions),
		fixedScopeAndKind:     established,
		checkCABundle:         established && !storedCABundleBroken(old),
		manySelectableFields:  keptSelectableFields(crd, old),
		stored:                storedExpressions(&old.Spec),
		unchangedSchemas:      unchangedSchemas(crd, old),
		compile:               newCompileAllowance(),
	}
}

// Create returns the causes kube-apiserver gives for creating crd
// (ValidateCustomResourceDefinition).
func Create(crd *apiextensions.CustomResourceDefinition) field.ErrorList {
	p := createPolicy()
	nameRule := func(name string, prefix bool) []string {
		msgs := apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
		if name != crd.Spec.Names.Plural+"."+crd.Spec.Group {
			msgs = append(msgs, `must be spec.names.plural+"."+spec.group`)
		}
		return msgs
	}
	errs := apimachineryvalidation.ValidateObjectMeta(&crd.ObjectMeta, false, nameRule, field.NewPath("metadata"))
	errs = append(errs, p.spec(&crd.Spec, field.NewPath("spec"))...)
	return append(errs, crdWide(crd, nil)...)
}

// Update returns the causes kube-apiserver gives for replacing old by crd
// through the main resource (ValidateCustomResourceDefinitionUpdate).
func Update(crd, old *apiextensions.CustomResourceDefinition) field.ErrorList {
	p := updatePolicy(crd, old)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&crd.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	errs = append(errs, p.spec(&crd.Spec, specPath)...)
	if p.fixedScopeAndKind {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(crd.Spec.Scope, old.Spec.Scope, specPath.Child("scope"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(crd.Spec.Names.Kind, old.Spec.Names.Kind, specPath.Child("names", "kind"))...)
	}
	// The group and the plural make up the object's name, which never
	// changes.
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(crd.Spec.Group, old.Spec.Group, specPath.Child("group"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(crd.Spec.Names.Plural, old.Spec.Names.Plural, specPath.Child("names", "plural"))...)
	return append(errs, crdWide(crd, old)...)
}

// StatusUpdate returns the causes kube-apiserver gives for a write to the
// status subresource (ValidateUpdateCustomResourceDefinitionStatus): the
// metadata update rules and status.acceptedNames.
func StatusUpdate(crd, old *apiextensions.CustomResourceDefinition) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&crd.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, names(&crd.Status.AcceptedNames, field.NewPath("status", "acceptedNames"))...)
}

// crdWide holds the checks that follow the spec on both create and update
// (old is nil on create): accepted names, stored versions, the approval
// annotation of protected groups and spec.preserveUnknownFields.
func crdWide(crd, old *apiextensions.CustomResourceDefinition) field.ErrorList {
	errs := names(&crd.Status.AcceptedNames, field.NewPath("status", "acceptedNames"))
	errs = append(errs, storedVersions(crd.Status.StoredVersions, crd.Spec.Versions, field.NewPath("status", "storedVersions"))...)
	errs = append(errs, apiApproval(crd, old)...)
	return append(errs, preserveUnknownFieldsTurnedOn(crd, old)...)
}
