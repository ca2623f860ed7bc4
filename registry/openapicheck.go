package registry

import (
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// openAPICheck answers whether a custom resource object is valid under
// its version's OpenAPI schema, for the common case and without building
// any error: kube-openapi's validator, which apiextensions-apiserver runs,
// builds a validator for every value it visits on every request (about
// 50 µs for the 20-field schema of a 1 KB object). The check covers the
// keywords CRD schemas mostly use (type, nullable, enum of strings,
// bounds and lengths, pattern, required, properties, items,
// additionalProperties); where the object has a value under a schema
// node with anything else (formats, allOf/anyOf/oneOf/not, multipleOf,
// ...), or a value the check does not type the same way for sure (a
// float64 for an integer, a number beyond 2^53), it does not decide.
// Every answer other than yes sends the caller to kube-openapi, which
// gives kube-apiserver's errors; so the check can only make a valid
// write cheaper, never change an answer.
type openAPICheck struct {
	root *openAPINode
}

// openAPINode is one schema node, as far as the check evaluates it.
type openAPINode struct {
	// opaque: the node has keywords the check does not evaluate; any
	// value here is left to kube-openapi.
	opaque   bool
	typ      string // "" (any), object, array, string, integer, number, boolean, intOrString
	nullable bool

	// enum, when hasEnum, holds the enum's strings: a string is valid
	// iff it is one of them (kube-openapi converts the value to each
	// enum value's type; a string converts to strings only).
	hasEnum bool
	enum    map[string]bool

	maxLength, minLength *int64
	pattern              *regexp.Regexp

	// Bounds, whole numbers within ±2^53 (else the node is opaque).
	max, min         *float64
	exclMax, exclMin bool

	maxItems, minItems *int64
	items              *openAPINode

	maxProps, minProps *int64
	required           []string
	properties         map[string]*openAPINode
	additional         *openAPINode
}

// intOrString is the type of an x-kubernetes-int-or-string node (types
// integer and string).
const intOrString = "int-or-string"

// maxExactInt is the largest magnitude at which float64 and int64
// comparisons of whole numbers agree.
const maxExactInt = 1 << 53

func newOpenAPICheck(s *spec.Schema) *openAPICheck {
	if s == nil {
		return nil
	}
	return &openAPICheck{root: newOpenAPINode(s)}
}

func newOpenAPINode(s *spec.Schema) *openAPINode {
	n := &openAPINode{nullable: s.Nullable}
	if s.Ref.String() != "" || s.Format != "" ||
		len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.Not != nil ||
		len(s.Dependencies) > 0 || len(s.PatternProperties) > 0 ||
		s.MultipleOf != nil || s.UniqueItems || s.AdditionalItems != nil ||
		(s.Items != nil && (len(s.Items.Schemas) > 0 || s.Items.Schema == nil)) ||
		(s.AdditionalProperties != nil && !s.AdditionalProperties.Allows) {
		n.opaque = true
		return n
	}
	if len(s.Type) == 2 && s.Type.Contains("integer") && s.Type.Contains("string") {
		// x-kubernetes-int-or-string.
		n.typ = intOrString
	} else if len(s.Type) == 1 {
		switch n.typ = s.Type[0]; n.typ {
		case "object", "array", "string", "integer", "number", "boolean":
		default:
			n.opaque = true
			return n
		}
	} else if len(s.Type) > 1 {
		n.opaque = true
		return n
	}
	if s.Enum != nil {
		n.hasEnum = true
		n.enum = make(map[string]bool, len(s.Enum))
		for _, e := range s.Enum {
			if str, ok := e.(string); ok {
				n.enum[str] = true
			}
		}
	}
	n.maxLength, n.minLength = s.MaxLength, s.MinLength
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			n.opaque = true
			return n
		}
		n.pattern = re
	}
	if s.Maximum != nil || s.Minimum != nil {
		if (n.typ != "integer" && n.typ != "number") || !exactBound(s.Maximum) || !exactBound(s.Minimum) {
			n.opaque = true
			return n
		}
		n.max, n.exclMax, n.min, n.exclMin = s.Maximum, s.ExclusiveMaximum, s.Minimum, s.ExclusiveMinimum
	}
	n.maxItems, n.minItems = s.MaxItems, s.MinItems
	if s.Items != nil {
		n.items = newOpenAPINode(s.Items.Schema)
	}
	n.maxProps, n.minProps = s.MaxProperties, s.MinProperties
	n.required = s.Required
	if s.Properties != nil {
		n.properties = make(map[string]*openAPINode, len(s.Properties))
		for name, p := range s.Properties {
			n.properties[name] = newOpenAPINode(&p)
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n.additional = newOpenAPINode(s.AdditionalProperties.Schema)
	}
	return n
}

// exactBound reports whether a bound is unset or a whole number that
// kube-openapi compares the same way as an int64 and as a float64.
func exactBound(b *float64) bool {
	if b == nil {
		return true
	}
	if *b != math.Trunc(*b) || math.Abs(*b) > maxExactInt {
		return false
	}
	// kube-openapi checks an integer bound by parsing its decimal form.
	_, err := strconv.ParseInt(strconv.FormatFloat(*b, 'f', -1, 64), 10, 64)
	return err == nil
}

// passes reports whether obj is valid; false means "ask kube-openapi".
func (c *openAPICheck) passes(obj interface{}) bool {
	return c != nil && c.root.passes(obj)
}

func (n *openAPINode) passes(v interface{}) bool {
	if n.opaque {
		return false
	}
	if v == nil {
		return !n.hasEnum && (n.typ == "" || n.nullable)
	}
	switch v := v.(type) {
	case string:
		if n.typ != "" && n.typ != "string" && n.typ != intOrString {
			return false
		}
		if n.hasEnum && !n.enum[v] {
			return false
		}
		if n.maxLength != nil || n.minLength != nil {
			runes := int64(utf8.RuneCountInString(v))
			if (n.maxLength != nil && runes > *n.maxLength) || (n.minLength != nil && runes < *n.minLength) {
				return false
			}
		}
		return n.pattern == nil || n.pattern.MatchString(v)
	case bool:
		return !n.hasEnum && (n.typ == "" || n.typ == "boolean")
	case int64:
		if n.hasEnum || (n.typ != "" && n.typ != "integer" && n.typ != "number" && n.typ != intOrString) || v > maxExactInt || v < -maxExactInt {
			return false
		}
		return n.inBounds(float64(v))
	case float64:
		// Whole floats for integers, and the integer-range checks on
		// them, are kube-openapi's to judge.
		if n.hasEnum || (n.typ != "" && n.typ != "number") || n.max != nil || n.min != nil {
			return false
		}
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case []interface{}:
		if n.hasEnum || (n.typ != "" && n.typ != "array") {
			return false
		}
		if (n.maxItems != nil && int64(len(v)) > *n.maxItems) || (n.minItems != nil && int64(len(v)) < *n.minItems) {
			return false
		}
		if n.items != nil {
			for _, e := range v {
				if !n.items.passes(e) {
					return false
				}
			}
		}
		return true
	case map[string]interface{}:
		if n.hasEnum || (n.typ != "" && n.typ != "object") {
			return false
		}
		if (n.maxProps != nil && int64(len(v)) > *n.maxProps) || (n.minProps != nil && int64(len(v)) < *n.minProps) {
			return false
		}
		for _, r := range n.required {
			if _, ok := v[r]; !ok {
				return false
			}
		}
		for k, e := range v {
			if p, ok := n.properties[k]; ok {
				if !p.passes(e) {
					return false
				}
			} else if n.additional != nil && !n.additional.passes(e) {
				return false
			}
		}
		return true
	}
	return false
}

// inBounds checks a whole number against the node's bounds (all whole
// and within ±2^53, so integer and float comparisons agree).
func (n *openAPINode) inBounds(f float64) bool {
	if n.max != nil && (f > *n.max || (n.exclMax && f == *n.max)) {
		return false
	}
	if n.min != nil && (f < *n.min || (n.exclMin && f == *n.min)) {
		return false
	}
	return true
}
