package crdvalidation

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDeprecationWarning is the longest deprecationWarning, in bytes.
const maxDeprecationWarning = 256

// spec checks spec in kube-apiserver's order: group, scope, schemas
// present, defaults, each version, the top-level against the per-version
// fields, the version list, names, the top-level schema, subresources,
// columns and selectable fields, then conversion.
func (p policy) spec(spec *apiextensions.CustomResourceDefinitionSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, group(spec.Group, fld.Child("group"))...)
	errs = append(errs, oneOf(string(spec.Scope), fld.Child("scope"), string(apiextensions.ClusterScoped), string(apiextensions.NamespaceScoped))...)

	// An unset spec.preserveUnknownFields (only the internal version can
	// have one) counts, as in kube-apiserver, both as pruning and as
	// keeping unknown fields.
	pruning := spec.PreserveUnknownFields == nil || !*spec.PreserveUnknownFields
	keeping := spec.PreserveUnknownFields == nil || *spec.PreserveUnknownFields
	if pruning {
		// Pruning needs to know every field, which only a structural
		// schema says.
		p.structural = true
	}
	versionsPath := fld.Child("versions")
	if spec.Validation == nil || spec.Validation.OpenAPIV3Schema == nil {
		for i, v := range spec.Versions {
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				continue
			}
			schemaPath := versionsPath.Index(i).Child("schema", "openAPIV3Schema")
			switch {
			case p.everyVersionHasSchema:
				errs = append(errs, field.Required(schemaPath, ""))
			case pruning && v.Served:
				errs = append(errs, field.Required(schemaPath, "because otherwise all fields are pruned"))
			}
		}
	}
	if anySchema(spec, hasDefault) {
		p.structural = true
		if keeping {
			errs = append(errs, field.Invalid(fld.Child("preserveUnknownFields"), true, "must be false in order to use defaults in the schema"))
		}
	}
	if anySchema(spec, usesKubernetesExtensions) {
		p.structural = true
	}

	storage := 0
	seen := map[string]bool{}
	duplicate := false
	for i := range spec.Versions {
		v := &spec.Versions[i]
		if v.Storage {
			storage++
		}
		duplicate = duplicate || seen[v.Name]
		seen[v.Name] = true
		vPath := versionsPath.Index(i)
		if msgs := utilvalidation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vPath.Child("name"), v.Name, strings.Join(msgs, ",")))
		}
		errs = append(errs, p.version(spec, v, vPath)...)
	}

	errs = append(errs, perVersionFields(spec, fld)...)
	if duplicate {
		errs = append(errs, field.Invalid(versionsPath, spec.Versions, "must contain unique version names"))
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(versionsPath, spec.Versions, "must have exactly one version marked as storage version"))
	}
	// The internal version's spec.version is the first of spec.versions.
	if spec.Version != "" {
		if msgs := utilvalidation.IsDNS1035Label(spec.Version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child("version"), spec.Version, strings.Join(msgs, ",")))
		}
		if len(spec.Versions) > 0 && spec.Versions[0].Name != spec.Version {
			errs = append(errs, field.Invalid(fld.Child("version"), spec.Version, "must match the first version in spec.versions"))
		}
	}

	namesPath := fld.Child("names")
	for _, n := range []struct{ key, value string }{
		{"plural", spec.Names.Plural}, {"singular", spec.Names.Singular}, {"kind", spec.Names.Kind}, {"listKind", spec.Names.ListKind},
	} {
		if n.value == "" {
			errs = append(errs, field.Required(namesPath.Child(n.key), ""))
		}
	}
	errs = append(errs, names(&spec.Names, namesPath)...)

	errs = append(errs, p.schema(spec.Validation, anyStatus(spec), spec.Version, fld.Child("validation"))...)
	errs = append(errs, subresources(spec.Subresources, fld.Child("subresources"))...)
	for i := range spec.AdditionalPrinterColumns {
		errs = append(errs, printerColumn(&spec.AdditionalPrinterColumns[i], fld.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(spec.SelectableFields) > 0 {
		if spec.Validation == nil {
			errs = append(errs, field.Invalid(fld.Child("selectableFields"), "", "may only be set when validations.schema is included"))
		} else {
			errs = append(errs, p.selectableFields(spec.SelectableFields, spec.Validation.OpenAPIV3Schema, "", fld)...)
		}
	}

	if spec.Conversion != nil && spec.Conversion.Strategy != apiextensions.NoneConverter && keeping {
		errs = append(errs, field.Invalid(fld.Child("conversion", "strategy"), spec.Conversion.Strategy, "must be None if spec.preserveUnknownFields is true"))
	}
	return append(errs, p.conversion(spec.Conversion, fld.Child("conversion"))...)
}

// version checks one entry of spec.versions.
func (p policy) version(spec *apiextensions.CustomResourceDefinitionSpec, v *apiextensions.CustomResourceDefinitionVersion, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range deprecationWarning(v.Deprecated, v.DeprecationWarning) {
		errs = append(errs, field.Invalid(fld.Child("deprecationWarning"), v.DeprecationWarning, msg))
	}
	errs = append(errs, p.schema(v.Schema, statusEnabled(subresourcesOf(spec, v.Name)), v.Name, fld.Child("schema"))...)
	errs = append(errs, subresources(v.Subresources, fld.Child("subresources"))...)
	for i := range v.AdditionalPrinterColumns {
		errs = append(errs, printerColumn(&v.AdditionalPrinterColumns[i], fld.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(v.SelectableFields) > 0 {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			errs = append(errs, field.Invalid(fld.Child("selectableFields"), "", "may only be set when `version.schema.openAPIV3Schema` is not included"))
		} else {
			errs = append(errs, p.selectableFields(v.SelectableFields, v.Schema.OpenAPIV3Schema, v.Name, fld)...)
		}
	}
	return errs
}

// deprecationWarning returns what is wrong with a version's
// deprecationWarning: set without deprecated, too long, empty, or not
// printable UTF-8.
func deprecationWarning(deprecated bool, warning *string) []string {
	if warning == nil {
		return nil
	}
	if !deprecated {
		return []string{"can only be set for deprecated versions"}
	}
	w := *warning
	var msgs []string
	if len(w) > maxDeprecationWarning {
		msgs = append(msgs, "must be <= 256 characters long")
	}
	if w == "" {
		msgs = append(msgs, "must not be an empty string")
	}
	for i, r := range w {
		if !unicode.IsPrint(r) {
			msgs = append(msgs, fmt.Sprintf("must only contain printable UTF-8 characters; non-printable character found at index %d", i))
			break
		}
		if unicode.IsControl(r) {
			msgs = append(msgs, fmt.Sprintf("must only contain printable UTF-8 characters; control character found at index %d", i))
			break
		}
	}
	if !utf8.ValidString(w) {
		msgs = append(msgs, "must only contain printable UTF-8 characters")
	}
	return msgs
}

// perVersionFields checks how the top-level schema, subresources and
// columns combine with the per-version ones: never both, and the
// per-version ones not all identical (the internal version would have
// moved them to the top level).
func perVersionFields(spec *apiextensions.CustomResourceDefinitionSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	var anySchema, anySubresources, anyColumns bool
	for _, v := range spec.Versions {
		anySchema = anySchema || v.Schema != nil
		anySubresources = anySubresources || v.Subresources != nil
		anyColumns = anyColumns || len(v.AdditionalPrinterColumns) > 0
	}
	if spec.Validation != nil && anySchema {
		errs = append(errs, field.Forbidden(fld.Child("validation"), "top-level and per-version schemas are mutually exclusive"))
	}
	if spec.Subresources != nil && anySubresources {
		errs = append(errs, field.Forbidden(fld.Child("subresources"), "top-level and per-version subresources are mutually exclusive"))
	}
	if len(spec.AdditionalPrinterColumns) > 0 && anyColumns {
		errs = append(errs, field.Forbidden(fld.Child("additionalPrinterColumns"), "top-level and per-version additionalPrinterColumns are mutually exclusive"))
	}

	versionsPath := fld.Child("versions")
	for _, f := range []struct {
		name, topLevel string
		of             func(v *apiextensions.CustomResourceDefinitionVersion) (value any, set bool)
	}{
		{"schemas", "validation", func(v *apiextensions.CustomResourceDefinitionVersion) (any, bool) { return v.Schema, v.Schema != nil }},
		{"subresources", "subresources", func(v *apiextensions.CustomResourceDefinitionVersion) (any, bool) {
			return v.Subresources, v.Subresources != nil
		}},
		{"additionalPrinterColumns", "additionalPrinterColumns", func(v *apiextensions.CustomResourceDefinitionVersion) (any, bool) {
			return v.AdditionalPrinterColumns, len(v.AdditionalPrinterColumns) > 0
		}},
	} {
		if sameInEveryVersion(spec.Versions, f.of) {
			errs = append(errs, field.Invalid(versionsPath, spec.Versions, fmt.Sprintf("per-version %s may not all be set to identical values (top-level %s should be used instead)", f.name, f.topLevel)))
		}
	}
	return errs
}

// sameInEveryVersion reports whether every version sets the field of
// and to the same value.
func sameInEveryVersion(versions []apiextensions.CustomResourceDefinitionVersion, of func(*apiextensions.CustomResourceDefinitionVersion) (any, bool)) bool {
	if len(versions) == 0 {
		return false
	}
	first, _ := of(&versions[0])
	for i := range versions {
		v, set := of(&versions[i])
		if !set || !equality.Semantic.DeepEqual(v, first) {
			return false
		}
	}
	return true
}

// subresourcesOf returns the subresources that apply to the version
// named: the top-level ones unless some version has its own.
func subresourcesOf(spec *apiextensions.CustomResourceDefinitionSpec, name string) *apiextensions.CustomResourceSubresources {
	perVersion := false
	for _, v := range spec.Versions {
		perVersion = perVersion || v.Subresources != nil
	}
	if !perVersion {
		return spec.Subresources
	}
	for _, v := range spec.Versions {
		if v.Name == name {
			return v.Subresources
		}
	}
	return nil
}

// statusEnabled reports whether s turns the status subresource on.
func statusEnabled(s *apiextensions.CustomResourceSubresources) bool {
	return s != nil && s.Status != nil
}

// anyStatus reports whether the status subresource is on at the top level
// or in any version.
func anyStatus(spec *apiextensions.CustomResourceDefinitionSpec) bool {
	if statusEnabled(spec.Subresources) {
		return true
	}
	for _, v := range spec.Versions {
		if statusEnabled(v.Subresources) {
			return true
		}
	}
	return false
}

// group checks spec.group: required, a DNS subdomain with a dot.
func group(g string, fld *field.Path) field.ErrorList {
	if g == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	if msgs := utilvalidation.IsDNS1123Subdomain(g); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(fld, g, strings.Join(msgs, ","))}
	}
	if !strings.Contains(g, ".") {
		return field.ErrorList{field.Invalid(fld, g, "should be a domain with at least one dot")}
	}
	return nil
}

// oneOf checks a required enumerated string.
func oneOf(value string, fld *field.Path, allowed ...string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	for _, a := range allowed {
		if a == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fld, value, allowed)}
}

// names checks the format of spec.names or status.acceptedNames; empty
// names are left to the caller (required in spec, not in status).
func names(n *apiextensions.CustomResourceDefinitionNames, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	label := func(key, value string) {
		if value == "" {
			return
		}
		if msgs := utilvalidation.IsDNS1035Label(value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child(key), value, strings.Join(msgs, ",")))
		}
	}
	// Kinds are CamelCase: checked as labels once lowercased.
	kindLabel := func(key, value string) {
		if value == "" {
			return
		}
		if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(value)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child(key), value, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
	}
	label("plural", n.Plural)
	label("singular", n.Singular)
	kindLabel("kind", n.Kind)
	kindLabel("listKind", n.ListKind)
	for i, s := range n.ShortNames {
		if msgs := utilvalidation.IsDNS1035Label(s); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child("shortNames").Index(i), s, strings.Join(msgs, ",")))
		}
	}
	// A list and its items must be told apart.
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, field.Invalid(fld.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
	}
	for i, c := range n.Categories {
		if msgs := utilvalidation.IsDNS1035Label(c); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child("categories").Index(i), c, strings.Join(msgs, ",")))
		}
	}
	return errs
}

// storedVersions checks status.storedVersions: not empty, holding the
// storage version, and naming only versions still in spec.versions (data
// may remain stored in them).
func storedVersions(stored []string, versions []apiextensions.CustomResourceDefinitionVersion, fld *field.Path) field.ErrorList {
	if len(stored) == 0 {
		return field.ErrorList{field.Invalid(fld, stored, "must have at least one stored version")}
	}
	var errs field.ErrorList
	// Each spec version takes its name off the list; a repeated version
	// name finds it gone.
	unmatched := make(map[string]bool, len(stored))
	for _, s := range stored {
		unmatched[s] = true
	}
	for _, v := range versions {
		if v.Storage && !unmatched[v.Name] {
			errs = append(errs, field.Invalid(fld, stored, "must have the storage version "+v.Name))
		}
		delete(unmatched, v.Name)
	}
	// A name listed twice is reported once, at its last index.
	last := map[string]int{}
	for i, s := range stored {
		last[s] = i
	}
	for i, s := range stored {
		if !unmatched[s] || last[s] != i {
			continue
		}
		errs = append(errs, field.Invalid(fld.Index(i), s, fmt.Sprintf("missing from spec.versions; %[1]s was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in %[1]s and removes %[1]s from status.storedVersions", s)))
	}
	return errs
}

// apiApproval checks the api-approved.kubernetes.io annotation that CRDs
// in the k8s.io and kubernetes.io groups need. An update that keeps the
// approval state as it was passes.
func apiApproval(crd, old *apiextensions.CustomResourceDefinition) field.ErrorList {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return nil
	}
	state, reason := apihelpers.GetAPIApprovalState(crd.Annotations)
	if old != nil {
		if oldState, _ := apihelpers.GetAPIApprovalState(old.Annotations); oldState == state {
			return nil
		}
	}
	fld := field.NewPath("metadata", "annotations").Key(apiextensionsv1.KubeAPIApprovedAnnotation)
	switch state {
	case apihelpers.APIApproved, apihelpers.APIApprovalBypassed:
		return nil
	case apihelpers.APIApprovalMissing:
		return field.ErrorList{field.Required(fld, reason)}
	default:
		return field.ErrorList{field.Invalid(fld, crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation], reason)}
	}
}

// preserveUnknownFieldsTurnedOn refuses spec.preserveUnknownFields: true
// unless the stored CRD already had it.
func preserveUnknownFieldsTurnedOn(crd, old *apiextensions.CustomResourceDefinition) field.ErrorList {
	if old != nil && old.Spec.PreserveUnknownFields != nil && *old.Spec.PreserveUnknownFields {
		return nil
	}
	if crd.Spec.PreserveUnknownFields == nil || !*crd.Spec.PreserveUnknownFields {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "preserveUnknownFields"), crd.Spec.PreserveUnknownFields, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead")}
}
