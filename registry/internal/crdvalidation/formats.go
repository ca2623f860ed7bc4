package crdvalidation

import (
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// stringFormats are the string formats kube-apiserver 1.36 validates,
// with dashes removed as go-openapi compares them. Any other format is
// accepted, ignored, and warned about.
var stringFormats = map[string]bool{
	"bsonobjectid": true, "uri": true, "email": true, "hostname": true,
	"ipv4": true, "ipv6": true, "cidr": true, "mac": true,
	"uuid": true, "uuid3": true, "uuid4": true, "uuid5": true,
	"isbn": true, "isbn10": true, "isbn13": true, "creditcard": true,
	"ssn": true, "hexcolor": true, "rgbcolor": true, "byte": true,
	"password": true, "date": true, "duration": true, "datetime": true,
	"k8sshortname": true, "k8slongname": true,
}

// UnrecognizedFormats lists, in schema order, the formats of spec's
// schemas that kube-apiserver does not know for the node's type:
// kube-apiserver warns about each when a CRD is written.
func UnrecognizedFormats(spec *apiextensions.CustomResourceDefinitionSpec) []string {
	var out []string
	for _, r := range roots(spec) {
		anyNode(r, func(s *apiextensions.JSONSchemaProps) bool {
			if s.Format != "" && !formatKnown(s.Type, s.Format) {
				out = append(out, s.Format)
			}
			return false
		})
	}
	return out
}

// HasUnrecognizedFormat reports whether UnrecognizedFormats would list a
// format for the internal version of spec. It walks the v1 schemas as
// they are: most CRDs have no such format, and then the warnings cost no
// conversion.
func HasUnrecognizedFormat(spec *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	for i := range spec.Versions {
		if v := spec.Versions[i].Schema; v != nil && unrecognizedFormatBelow(v.OpenAPIV3Schema) {
			return true
		}
	}
	return false
}

// unrecognizedFormatBelow reports whether s or a schema below it has a
// format that is not known for its type.
func unrecognizedFormatBelow(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if s.Format != "" && !formatKnown(s.Type, s.Format) {
		return true
	}
	inMap := func(m map[string]apiextensionsv1.JSONSchemaProps) bool {
		for k := range m {
			sub := m[k]
			if unrecognizedFormatBelow(&sub) {
				return true
			}
		}
		return false
	}
	inList := func(l []apiextensionsv1.JSONSchemaProps) bool {
		for i := range l {
			if unrecognizedFormatBelow(&l[i]) {
				return true
			}
		}
		return false
	}
	if s.Items != nil && (unrecognizedFormatBelow(s.Items.Schema) || inList(s.Items.JSONSchemas)) {
		return true
	}
	if inList(s.AllOf) || inList(s.AnyOf) || inList(s.OneOf) || unrecognizedFormatBelow(s.Not) {
		return true
	}
	if inMap(s.Properties) || inMap(s.PatternProperties) || inMap(s.Definitions) {
		return true
	}
	if s.AdditionalProperties != nil && unrecognizedFormatBelow(s.AdditionalProperties.Schema) {
		return true
	}
	if s.AdditionalItems != nil && unrecognizedFormatBelow(s.AdditionalItems.Schema) {
		return true
	}
	for k := range s.Dependencies {
		if unrecognizedFormatBelow(s.Dependencies[k].Schema) {
			return true
		}
	}
	return false
}

// formatKnown reports whether format means something for type t.
func formatKnown(t, format string) bool {
	switch t {
	case "", "string":
		return stringFormats[strings.ReplaceAll(format, "-", "")]
	case "integer":
		return format == "int32" || format == "int64"
	case "number":
		return format == "float" || format == "double"
	default:
		return false
	}
}
