package crdvalidation

import (
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
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
