package crdvalidation

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// openAPITypes are the types a schema may name, sorted.
var openAPITypes = []string{"array", "boolean", "integer", "number", "object", "string"}

// rootFieldsWithStatus are the JSONSchemaProps fields (Go names) a root
// schema may set when the status subresource is on: those that keep
// their meaning once properties[status] is taken out as the status
// schema. The message lists them in this order.
var rootFieldsWithStatus = []string{"Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum", "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems", "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example", "XPreserveUnknownFields", "XValidations"}

// resourceMetaFields are the properties of a resource (the root, or an
// x-kubernetes-embedded-resource) that hold its TypeMeta and ObjectMeta.
var resourceMetaFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

// validationReasons are the reasons an x-kubernetes-validations rule may
// give, sorted.
var validationReasons = []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}

// lineBreak matches what CEL counts as a line break.
var lineBreak = regexp.MustCompile(`[\n\r]+`)

// schema checks a version's (or the top-level) openAPIV3Schema, in
// kube-apiserver's order: the root restrictions, the structural rules and
// defaults, then every node's keywords, then the compiled rules of a
// structural schema (see compileRules) and their total cost. The errors
// of converting a non-structural schema repeat those of the keyword
// checks, so they are reported only when nothing else is. version names
// the version the schema is for (the first one for the top-level
// schema).
func (p policy) schema(v *apiextensions.CustomResourceValidation, status bool, version string, fld *field.Path) field.ErrorList {
	if v == nil || v.OpenAPIV3Schema == nil {
		return nil
	}
	root := v.OpenAPIV3Schema
	rootPath := fld.Child("openAPIV3Schema")
	var errs field.ErrorList
	if status {
		errs = append(errs, rootWithStatus(root, fld)...)
	}
	if root.Nullable {
		errs = append(errs, field.Forbidden(fld.Child("openAPIV3Schema.nullable"), "nullable cannot be true at the root"))
	}
	var conversionErrs field.ErrorList
	// Rules are compiled only in a structural schema with good defaults:
	// others may have no CEL type.
	var scope *celScope
	if p.structural {
		s, err := structuralschema.NewStructural(root)
		if err != nil {
			conversionErrs = field.ErrorList{field.Invalid(rootPath, "", err.Error())}
		} else if serrs := structuralschema.ValidateStructural(rootPath, s); len(serrs) > 0 {
			errs = append(errs, serrs...)
		} else if derrs := defaults(s, rootPath, p.prunedDefaults, p.compile); len(derrs) > 0 {
			errs = append(errs, derrs...)
		} else {
			scope = rootCELScope(root)
		}
	}
	w := &walker{policy: p, oldCosts: p.unchangedSchemas[version]}
	nodeErrs, _, _ := w.node(root, rootPath, nodeContext{root: true}, scope)
	errs = append(errs, nodeErrs...)
	errs = append(errs, w.ruleErrs...)
	if len(errs) == 0 {
		errs = conversionErrs
	}
	if scope != nil {
		errs = append(errs, scope.cost.overLimit(rootPath)...)
	}
	return errs
}

// rootWithStatus checks the root schema of a CRD with the status
// subresource: type object, and only the fields that stay meaningful.
// Like kube-apiserver, it reports the first offending field only, in the
// order of the Go struct.
func rootWithStatus(root *apiextensions.JSONSchemaProps, fld *field.Path) field.ErrorList {
	v := reflect.ValueOf(root).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			continue
		}
		name := v.Type().Field(i).Name
		if name == "Type" {
			if root.Type == "object" {
				continue
			}
			return field.ErrorList{field.Invalid(fld.Child("openAPIV3Schema.type"), root.Type, `only "object" is allowed as the type at the root of the schema if the status subresource is enabled`)}
		}
		if !contains(rootFieldsWithStatus, name) {
			return field.ErrorList{field.Invalid(fld.Child("openAPIV3Schema"), *root, fmt.Sprintf("only %v fields are allowed at the root of the schema if the status subresource is enabled", rootFieldsWithStatus))}
		}
	}
	return nil
}

// nodeContext is where a schema node sits.
type nodeContext struct {
	// root: the node is the root schema.
	root bool
	// inResourceMeta: the node describes apiVersion, kind or metadata of
	// the root or of an embedded resource, or lies below them.
	inResourceMeta bool
	// noDefaults: default is forbidden here, for noDefaultsReason
	// (which ends the message; may be empty).
	noDefaults       bool
	noDefaultsReason string
	// uncorrelated is the outermost list or map above the node whose
	// items an update cannot match with the old ones, so that rules may
	// not use oldSelf (nil: none).
	uncorrelated *field.Path
}

// walker checks the keywords of every node of a schema, and compiles its
// rules.
type walker struct {
	policy
	// oldCosts: the schema is unchanged by the update, and its rules are
	// not held to the per-rule cost limit.
	oldCosts bool
	// ruleErrs are the causes of compiled rules. They follow all the
	// other causes of the schema.
	ruleErrs field.ErrorList
}

// node checks s and everything below it: first its own keywords, then
// its sub-schemas, then its Kubernetes extensions and validation rules.
// When nothing at or below s is wrong and scope is not nil, it compiles
// the rules of s (into w.ruleErrs). It also reports whether s converts
// to a structural schema (see convertsAlone), found on the way so that
// rules need not convert each subtree again, and, when scope is not nil,
// how many nodes the CEL type of s declares (s and the properties, items
// and additionalProperties below it), which compiling its rules costs.
func (w *walker) node(s *apiextensions.JSONSchemaProps, fld *field.Path, at nodeContext, scope *celScope) (field.ErrorList, bool, int) {
	if s == nil {
		return nil, true, 0
	}
	errs := w.keywords(s, fld, at)
	if s.UniqueItems {
		errs = append(errs, field.Forbidden(fld.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	childErrs, converts, below := w.children(s, fld, at, scope)
	errs = append(errs, childErrs...)
	converts = converts && convertsAlone(s)
	errs = append(errs, w.extensions(s, fld)...)
	errs = append(errs, validationRules(s, fld, converts)...)
	if len(errs) == 0 && scope != nil && len(s.XValidations) > 0 {
		w.ruleErrs = append(w.ruleErrs, w.compileRules(s, fld, at, scope, 1+below)...)
	}
	return errs, converts, 1 + below
}

// convertsAlone reports whether s, its sub-schemas aside, converts to a
// structural schema: none of the keywords structural schemas leave out,
// items a single schema, and x-kubernetes-preserve-unknown-fields not
// false.
func convertsAlone(s *apiextensions.JSONSchemaProps) bool {
	unsupported := s.ID != "" || s.Schema != "" || (s.Ref != nil && *s.Ref != "") || len(s.PatternProperties) > 0 ||
		len(s.Dependencies) > 0 || s.AdditionalItems != nil || len(s.Definitions) > 0
	itemsArray := s.Items != nil && len(s.Items.JSONSchemas) > 0
	preserveFalse := s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields
	return !unsupported && !itemsArray && !preserveFalse
}

// keywords rejects what a Kubernetes schema may not use: unknown types,
// type null, defaults where they are forbidden, id, $ref, definitions,
// dependencies, patternProperties, additionalItems, an array of items
// schemas, and embedded resources inside resource metadata.
func (w *walker) keywords(s *apiextensions.JSONSchemaProps, fld *field.Path, at nodeContext) field.ErrorList {
	var errs field.ErrorList
	if w.knownTypes && s.Type != "" && !contains(openAPITypes, s.Type) {
		errs = append(errs, field.NotSupported(fld.Child("type"), s.Type, openAPITypes))
	}
	if s.Default != nil && at.noDefaults {
		msg := "must not be set"
		if at.noDefaultsReason != "" {
			msg += " " + at.noDefaultsReason
		}
		errs = append(errs, field.Forbidden(fld.Child("default"), msg))
	}
	forbid := func(set bool, key, msg string) {
		if set {
			errs = append(errs, field.Forbidden(fld.Child(key), msg))
		}
	}
	forbid(s.ID != "", "id", "id is not supported")
	forbid(s.AdditionalItems != nil, "additionalItems", "additionalItems is not supported")
	forbid(len(s.PatternProperties) > 0, "patternProperties", "patternProperties is not supported")
	forbid(len(s.Definitions) > 0, "definitions", "definitions is not supported")
	forbid(s.Dependencies != nil, "dependencies", "dependencies is not supported")
	forbid(s.Ref != nil, "$ref", "$ref is not supported")
	forbid(s.Type == "null", "type", "type cannot be set to null, use nullable as an alternative")
	forbid(s.Items != nil && len(s.Items.JSONSchemas) > 0, "items", "items must be a schema object and not an array")
	forbid(at.inResourceMeta && s.XEmbeddedResource, "x-kubernetes-embedded-resource", "must not be used inside of resource meta")
	return errs
}

// children checks the sub-schemas of s: additionalProperties, properties
// (by name), not, allOf, oneOf, anyOf, definitions, items and
// dependencies. It reports whether all of them convert to structural
// schemas, and how many nodes below s its CEL type declares (see node).
// Rules are compiled in properties, items and additionalProperties only:
// the others describe no value of their own and have no scope.
func (w *walker) children(s *apiextensions.JSONSchemaProps, fld *field.Path, at nodeContext, scope *celScope) (field.ErrorList, bool, int) {
	var errs field.ErrorList
	converts := true
	declared := 0
	visit := func(sub *apiextensions.JSONSchemaProps, p *field.Path, c nodeContext, subScope *celScope) {
		subErrs, ok, n := w.node(sub, p, c, subScope)
		errs = append(errs, subErrs...)
		converts = converts && ok
		if subScope != nil {
			declared += n
		}
	}
	// Below the root, a node is never the root again.
	below := at
	below.root = false

	if ap := s.AdditionalProperties; ap != nil {
		// properties describe a struct, additionalProperties a map: not
		// both (additionalProperties: true is harmless).
		if len(s.Properties) > 0 && (!ap.Allows || ap.Schema != nil) {
			errs = append(errs, field.Forbidden(fld.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
		}
		sub := below
		if at.inResourceMeta {
			// Pruning a map entry's default needs a value to prune.
			sub.noDefaults, sub.noDefaultsReason = true, "inside additionalProperties applying to object metadata"
		}
		visit(ap.Schema, fld.Child("additionalProperties"), sub, scope.additionalProperties(ap.Schema))
	}

	for _, name := range sortedKeys(s.Properties) {
		prop := s.Properties[name]
		sub := below
		// The fields of an object of unknown map type are not matched
		// with the old ones.
		if !correlatableMapType(s.XMapType) && sub.uncorrelated == nil {
			sub.uncorrelated = fld
		}
		if (at.root || s.XEmbeddedResource) && resourceMetaFields[name] {
			sub.inResourceMeta = true
			if at.root {
				sub.noDefaults, sub.noDefaultsReason = true, "in top-level "+name
			}
		}
		visit(&prop, fld.Child("properties").Key(name), sub, scope.property(&prop, name))
	}

	visit(s.Not, fld.Child("not"), below, nil)
	for _, list := range []struct {
		key     string
		schemas []apiextensions.JSONSchemaProps
	}{{"allOf", s.AllOf}, {"oneOf", s.OneOf}, {"anyOf", s.AnyOf}} {
		for i := range list.schemas {
			visit(&list.schemas[i], fld.Child(list.key).Index(i), below, nil)
		}
	}
	for _, name := range sortedKeys(s.Definitions) {
		def := s.Definitions[name]
		visit(&def, fld.Child("definitions").Key(name), below, nil)
	}
	if s.Items != nil {
		// Only the items of a map list are matched with the old ones (a
		// set's are not, for rules).
		items := below
		if (s.XListType == nil || *s.XListType != "map") && items.uncorrelated == nil {
			items.uncorrelated = fld
		}
		visit(s.Items.Schema, fld.Child("items"), items, scope.items(s.Items.Schema))
		for i := range s.Items.JSONSchemas {
			visit(&s.Items.JSONSchemas[i], fld.Child("items").Index(i), items, scope.items(&s.Items.JSONSchemas[i]))
		}
	}
	for _, name := range sortedKeys(s.Dependencies) {
		visit(s.Dependencies[name].Schema, fld.Child("dependencies").Key(name), below, nil)
	}
	return errs, converts, declared
}

// extensions checks the x-kubernetes-* keywords of s: preserve-unknown-
// fields, map-type, list-type and list-map-keys.
func (w *walker) extensions(s *apiextensions.JSONSchemaProps, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields {
		errs = append(errs, field.Invalid(fld.Child("x-kubernetes-preserve-unknown-fields"), false, "must be true or undefined"))
	}

	if s.XMapType != nil {
		if s.Type != "object" {
			errs = append(errs, typeFor(s, "object", "x-kubernetes-map-type", fld)...)
		}
		if mt := *s.XMapType; mt != "atomic" && mt != "granular" {
			errs = append(errs, field.NotSupported(fld.Child("x-kubernetes-map-type"), mt, []string{"atomic", "granular"}))
		}
	}

	var listType string
	if s.XListType != nil {
		listType = *s.XListType
	}
	switch {
	case s.XListType != nil && s.Type != "array":
		errs = append(errs, typeFor(s, "array", "x-kubernetes-list-type", fld)...)
	case w.atomicSetItems && listType == "set" && s.Items != nil && s.Items.Schema != nil:
		errs = append(errs, setItemsAtomic(s.Items.Schema, fld.Child("items"))...)
	}
	if s.XListType != nil && listType != "atomic" && listType != "set" && listType != "map" {
		errs = append(errs, field.NotSupported(fld.Child("x-kubernetes-list-type"), listType, []string{"atomic", "set", "map"}))
	}
	if len(s.XListMapKeys) > 0 {
		const msg = "must be map if x-kubernetes-list-map-keys is non-empty"
		switch {
		case s.XListType == nil:
			errs = append(errs, field.Required(fld.Child("x-kubernetes-list-type"), msg))
		case listType != "map":
			errs = append(errs, field.Invalid(fld.Child("x-kubernetes-list-type"), listType, msg))
		}
	}
	if listType == "map" {
		errs = append(errs, mapListShape(s, fld)...)
	}
	if w.listKeyRules {
		errs = append(errs, listKeyRules(s, fld)...)
	}
	return errs
}

// typeFor requires s to have type want because of the extension named.
func typeFor(s *apiextensions.JSONSchemaProps, want, extension string, fld *field.Path) field.ErrorList {
	msg := "must be " + want + " if " + extension + " is specified"
	if s.Type == "" {
		return field.ErrorList{field.Required(fld.Child("type"), msg)}
	}
	return field.ErrorList{field.Invalid(fld.Child("type"), s.Type, msg)}
}

// setItemsAtomic requires the items of a set list to be atomic: a
// nested list must not be set or map, an object must say
// x-kubernetes-map-type: atomic.
func setItemsAtomic(items *apiextensions.JSONSchemaProps, fld *field.Path) field.ErrorList {
	const msg = "must be atomic as item of a list with x-kubernetes-list-type=set"
	switch items.Type {
	case "array":
		if items.XListType != nil && *items.XListType != "atomic" {
			return field.ErrorList{field.Invalid(fld.Child("x-kubernetes-list-type"), items.XListType, msg)}
		}
	case "object":
		if items.XMapType == nil || *items.XMapType != "atomic" {
			// kube-apiserver reports the list type as the value.
			return field.ErrorList{field.Invalid(fld.Child("x-kubernetes-map-type"), items.XListType, msg)}
		}
	}
	return nil
}

// mapListShape checks a list with x-kubernetes-list-type: map: keys
// named, one object items schema, and keys that are distinct scalar
// properties of the items.
func mapListShape(s *apiextensions.JSONSchemaProps, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.XListMapKeys) == 0 {
		errs = append(errs, field.Required(fld.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
	}
	if s.Items == nil {
		return append(errs, field.Required(fld.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
	}
	items := s.Items.Schema
	if items == nil {
		return append(errs, field.Invalid(fld.Child("items"), s.Items, "must only have a single schema if x-kubernetes-list-type is map"))
	}
	if items.Type != "object" {
		return append(errs, field.Invalid(fld.Child("items").Child("type"), items.Type, "must be object if parent array's x-kubernetes-list-type is map"))
	}
	seen := map[string]bool{}
	for _, k := range s.XListMapKeys {
		if prop, ok := items.Properties[k]; !ok {
			errs = append(errs, field.Invalid(fld.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "entries must all be names of item properties"))
		} else if prop.Type == "array" || prop.Type == "object" {
			// kube-apiserver reports the items' type as the value.
			errs = append(errs, field.Invalid(fld.Child("items").Child("properties").Key(k).Child("type"), items.Type, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
		}
		if seen[k] {
			errs = append(errs, field.Invalid(fld.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "must not contain duplicate entries"))
		}
		seen[k] = true
	}
	return errs
}

// listKeyRules checks what server-side apply needs of set and map lists:
// items that are not nullable, and map keys that are always present
// (required or defaulted) and not nullable.
func listKeyRules(s *apiextensions.JSONSchemaProps, fld *field.Path) field.ErrorList {
	if s.Items == nil || s.Items.Schema == nil || s.XListType == nil {
		return nil
	}
	listType := *s.XListType
	if listType != "set" && listType != "map" {
		return nil
	}
	items := s.Items.Schema
	var errs field.ErrorList
	if items.Nullable {
		errs = append(errs, field.Forbidden(fld.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+listType))
	}
	if listType != "map" {
		return errs
	}
	for _, k := range s.XListMapKeys {
		prop, ok := items.Properties[k]
		if !ok {
			continue // reported by mapListShape
		}
		keyPath := fld.Child("items").Child("properties").Key(k)
		if prop.Default == nil && !contains(items.Required, k) {
			errs = append(errs, field.Required(keyPath.Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
		}
		if prop.Nullable {
			errs = append(errs, field.Forbidden(keyPath.Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
		}
	}
	return errs
}

// correlatableMapType reports whether the fields of an object with
// x-kubernetes-map-type t are matched with the old ones on update:
// granular (the default) and atomic.
func correlatableMapType(t *string) bool {
	return t == nil || *t == "granular" || *t == "atomic"
}

// validationRules checks the static parts of x-kubernetes-validations:
// a rule is given, message and fieldPath are single non-blank lines, a
// multi-line rule has a message, reason is known and fieldPath names a
// field of s (converts: s is structural; if not, any fieldPath passes,
// as in kube-apiserver). compileRules compiles them.
func validationRules(s *apiextensions.JSONSchemaProps, fld *field.Path, converts bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range s.XValidations {
		p := fld.Child("x-kubernetes-validations").Index(i)
		rule, msg := strings.TrimSpace(r.Rule), strings.TrimSpace(r.Message)
		switch {
		case rule == "":
			errs = append(errs, field.Required(p.Child("rule"), "rule is not specified"))
		case r.Message != "" && msg == "":
			errs = append(errs, field.Invalid(p.Child("message"), r.Message, "must be non-empty if specified"))
		case lineBreak.MatchString(msg):
			errs = append(errs, field.Invalid(p.Child("message"), r.Message, "must not contain line breaks"))
		case lineBreak.MatchString(rule) && msg == "":
			errs = append(errs, field.Required(p.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if r.MessageExpression != "" && strings.TrimSpace(r.MessageExpression) == "" {
			errs = append(errs, field.Required(p.Child("messageExpression"), "messageExpression must be non-empty if specified"))
		}
		if r.Reason != nil && !contains(validationReasons, string(*r.Reason)) {
			errs = append(errs, field.NotSupported(p.Child("reason"), *r.Reason, validationReasons))
		}
		if r.FieldPath != "" && strings.TrimSpace(r.FieldPath) == "" {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), r.FieldPath, "must be non-empty if specified"))
		}
		if lineBreak.MatchString(r.FieldPath) {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), r.FieldPath, "must not contain line breaks"))
		}
		if r.FieldPath != "" && converts && walkFieldPath(r.FieldPath, true, propertyStep(s)) != nil {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), r.FieldPath, "must be a valid path"))
		}
	}
	return errs
}

// propertyStep returns a walkFieldPath step that follows names from s
// through properties and additionalProperties, as resolveFieldPath does
// through the structural schema that s converts to.
func propertyStep(s *apiextensions.JSONSchemaProps) func(string) error {
	return func(name string) error {
		switch {
		case s != nil && len(s.Properties) > 0:
			sub, ok := s.Properties[name]
			if !ok {
				return errNoSuchField
			}
			s = &sub
		case s != nil && s.AdditionalProperties != nil:
			s = s.AdditionalProperties.Schema
		default:
			return errNoSuchField
		}
		return nil
	}
}

// sortedKeys returns m's keys in order: nodes are visited by name, so
// that the causes come in the same order every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
