package crdvalidation

import (
	"reflect"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
)

// Questions asked of a CRD's schemas: to pick the rules of an update
// (which do not tighten on data the stored CRD already has) and to turn
// the structural rules on.

// roots returns the openAPIV3Schemas of spec: the top-level one and each
// version's.
func roots(spec *apiextensions.CustomResourceDefinitionSpec) []*apiextensions.JSONSchemaProps {
	var out []*apiextensions.JSONSchemaProps
	if spec.Validation != nil && spec.Validation.OpenAPIV3Schema != nil {
		out = append(out, spec.Validation.OpenAPIV3Schema)
	}
	for _, v := range spec.Versions {
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			out = append(out, v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

// anySchemaIs reports whether pred holds for one of spec's root schemas.
func anySchemaIs(spec *apiextensions.CustomResourceDefinitionSpec, pred func(*apiextensions.JSONSchemaProps) bool) bool {
	for _, r := range roots(spec) {
		if pred(r) {
			return true
		}
	}
	return false
}

// anySchema reports whether pred holds for a node of one of spec's
// schemas.
func anySchema(spec *apiextensions.CustomResourceDefinitionSpec, pred func(*apiextensions.JSONSchemaProps) bool) bool {
	return anySchemaIs(spec, func(r *apiextensions.JSONSchemaProps) bool { return anyNode(r, pred) })
}

// anyNode reports whether pred holds for s or a schema anywhere below it.
func anyNode(s *apiextensions.JSONSchemaProps, pred func(*apiextensions.JSONSchemaProps) bool) bool {
	if s == nil {
		return false
	}
	if pred(s) {
		return true
	}
	inMap := func(m map[string]apiextensions.JSONSchemaProps) bool {
		for _, k := range sortedKeys(m) {
			sub := m[k]
			if anyNode(&sub, pred) {
				return true
			}
		}
		return false
	}
	inList := func(l []apiextensions.JSONSchemaProps) bool {
		for i := range l {
			if anyNode(&l[i], pred) {
				return true
			}
		}
		return false
	}
	if s.Items != nil && (anyNode(s.Items.Schema, pred) || inList(s.Items.JSONSchemas)) {
		return true
	}
	if inList(s.AllOf) || inList(s.AnyOf) || inList(s.OneOf) || anyNode(s.Not, pred) {
		return true
	}
	if inMap(s.Properties) || inMap(s.PatternProperties) || inMap(s.Definitions) {
		return true
	}
	if s.AdditionalProperties != nil && anyNode(s.AdditionalProperties.Schema, pred) {
		return true
	}
	if s.AdditionalItems != nil && anyNode(s.AdditionalItems.Schema, pred) {
		return true
	}
	for _, k := range sortedKeys(s.Dependencies) {
		if anyNode(s.Dependencies[k].Schema, pred) {
			return true
		}
	}
	return false
}

// everyVersionHasSchema reports whether each version has a schema, or
// there is a top-level one.
func everyVersionHasSchema(spec *apiextensions.CustomResourceDefinitionSpec) bool {
	if spec.Validation != nil && spec.Validation.OpenAPIV3Schema != nil {
		return true
	}
	for _, v := range spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return false
		}
	}
	return true
}

func hasDefault(s *apiextensions.JSONSchemaProps) bool { return s.Default != nil }

// usesKubernetesExtensions reports whether s has an x-kubernetes-*
// keyword, which only structural schemas may use.
func usesKubernetesExtensions(s *apiextensions.JSONSchemaProps) bool {
	return s.XEmbeddedResource || s.XPreserveUnknownFields != nil || s.XIntOrString ||
		len(s.XListMapKeys) > 0 || s.XListType != nil || len(s.XValidations) > 0
}

func hasUnknownType(s *apiextensions.JSONSchemaProps) bool {
	return s.Type != "" && !contains(openAPITypes, s.Type)
}

// isNonStructural reports whether the root schema s is not structural.
func isNonStructural(s *apiextensions.JSONSchemaProps) bool {
	ss, err := structuralschema.NewStructural(s)
	return err != nil || len(structuralschema.ValidateStructural(nil, ss)) > 0
}

// hasNonAtomicSetItems reports whether s is a set list whose items are
// not atomic.
func hasNonAtomicSetItems(s *apiextensions.JSONSchemaProps) bool {
	if s.XListType == nil || *s.XListType != "set" || s.Items == nil || s.Items.Schema == nil {
		return false
	}
	return len(setItemsAtomic(s.Items.Schema, nil)) > 0
}

func breaksListKeyRules(s *apiextensions.JSONSchemaProps) bool { return len(listKeyRules(s, nil)) > 0 }

// hasUnprunedDefaults reports whether the structural root schema s has a
// default that pruning would change. Defaults inside resource metadata
// are pruned as part of a whole object by kube-apiserver; here they are
// taken as pruned, which at worst keeps the pruning rule on for an update.
func hasUnprunedDefaults(s *apiextensions.JSONSchemaProps) bool {
	if !anyNode(s, hasDefault) {
		return false
	}
	ss, err := structuralschema.NewStructural(s)
	if err != nil || len(structuralschema.ValidateStructural(nil, ss)) > 0 {
		return false
	}
	root := *ss
	root.XEmbeddedResource = true
	return unprunedBelow(&root, false)
}

func unprunedBelow(s *structuralschema.Structural, inMeta bool) bool {
	if s == nil {
		return false
	}
	if s.XEmbeddedResource {
		inMeta = false
	}
	if s.Default.Object != nil && !inMeta {
		pruned := runtime.DeepCopyJSONValue(s.Default.Object)
		pruning.Prune(pruned, s, s.XEmbeddedResource)
		if !reflect.DeepEqual(pruned, s.Default.Object) {
			return true
		}
	}
	if unprunedBelow(s.Items, inMeta) {
		return true
	}
	for _, k := range sortedKeys(s.Properties) {
		sub := s.Properties[k]
		if unprunedBelow(&sub, inMeta || (s.XEmbeddedResource && resourceMetaFields[k])) {
			return true
		}
	}
	return false
}
