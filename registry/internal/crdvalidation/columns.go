package crdvalidation

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxSelectableFields is the most selectableFields a version may have.
const maxSelectableFields = 8

// Printer column types and formats, sorted, as the messages list them.
var (
	columnTypes   = []string{"boolean", "date", "integer", "number", "string"}
	columnFormats = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
)

// subresources checks the scale subresource's paths: the replica paths
// are required and under .spec and .status, the label selector path (if
// set) under either.
func subresources(s *apiextensions.CustomResourceSubresources, fld *field.Path) field.ErrorList {
	if s == nil || s.Scale == nil {
		return nil
	}
	var errs field.ErrorList
	scalePath := func(name, value string, required bool, under ...string) {
		p := fld.Child("scale." + name)
		switch {
		case value == "" && required:
			errs = append(errs, field.Required(p, ""))
		case value == "":
		case value[0] != '.':
			errs = append(errs, field.Invalid(p, value, "must be a simple json path starting with ."))
		case !hasAnyPrefix(value, under):
			var v any = value
			msg := "should be a json path under " + under[0]
			if len(under) > 1 {
				// kube-apiserver reports the pointer, not the string.
				v, msg = s.Scale.LabelSelectorPath, "should be a json path under either .spec or .status"
			}
			errs = append(errs, field.Invalid(p, v, msg))
		}
	}
	scalePath("specReplicasPath", s.Scale.SpecReplicasPath, true, ".spec")
	scalePath("statusReplicasPath", s.Scale.StatusReplicasPath, true, ".status")
	if s.Scale.LabelSelectorPath != nil {
		scalePath("labelSelectorPath", *s.Scale.LabelSelectorPath, false, ".spec", ".status")
	}
	return errs
}

// hasAnyPrefix reports whether path is a field under one of the roots.
func hasAnyPrefix(path string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(path, r+".") {
			return true
		}
	}
	return false
}

// printerColumn checks one additionalPrinterColumns entry.
func printerColumn(c *apiextensions.CustomResourceColumnDefinition, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	typeMsg := "must be one of " + strings.Join(columnTypes, ",")
	switch {
	case c.Type == "":
		errs = append(errs, field.Required(fld.Child("type"), typeMsg))
	case !contains(columnTypes, c.Type):
		errs = append(errs, field.Invalid(fld.Child("type"), c.Type, typeMsg))
	}
	if c.Format != "" && !contains(columnFormats, c.Format) {
		errs = append(errs, field.Invalid(fld.Child("format"), c.Format, "must be one of "+strings.Join(columnFormats, ",")))
	}
	// The JSON name of the field is jsonPath; kube-apiserver's path says
	// JSONPath.
	switch p := fld.Child("JSONPath"); {
	case c.JSONPath == "":
		errs = append(errs, field.Required(p, ""))
	case c.JSONPath[0] != '.':
		errs = append(errs, field.Invalid(p, c.JSONPath, "must be a simple json path starting with ."))
	}
	return errs
}

// selectableFields checks the selectableFields of a version (name "" for
// the top level) whose schema is schema; fld is the path of the version
// or spec.
func (p policy) selectableFields(fields []apiextensions.SelectableField, schema *apiextensions.JSONSchemaProps, version string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	root, err := structuralschema.NewStructural(schema)
	if err != nil {
		errs = append(errs, field.Invalid(fld.Child("schema.openAPIV3Schema"), "", err.Error()))
	}
	listPath := fld.Child("selectableFields")
	seen := map[string]bool{}
	for i, f := range fields {
		p := listPath.Index(i).Child("jsonPath")
		if f.JSONPath == "" {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		path, leaf, err := resolveFieldPath(f.JSONPath, root, false)
		if err != nil {
			errs = append(errs, field.Invalid(p, f.JSONPath, fmt.Sprintf("is an invalid path: %v", err)))
			continue
		}
		if path.Root().String() == "metadata" {
			errs = append(errs, field.Invalid(p, f.JSONPath, "must not point to fields in metadata"))
		}
		if leaf == nil || (leaf.Type != "string" && leaf.Type != "boolean" && leaf.Type != "integer") {
			errs = append(errs, field.Invalid(p, f.JSONPath, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))
		}
		if key := path.String(); seen[key] {
			errs = append(errs, field.Duplicate(p, f.JSONPath))
		} else {
			seen[key] = true
		}
	}
	if len(seen) > maxSelectableFields && !p.manySelectableFields[version] {
		errs = append(errs, field.TooMany(listPath, len(seen), maxSelectableFields))
	}
	return errs
}

// keptSelectableFields names the versions of crd ("" for the top level)
// that had more than maxSelectableFields in old and did not change them.
func keptSelectableFields(crd, old *apiextensions.CustomResourceDefinition) map[string]bool {
	kept := map[string]bool{}
	same := func(a, b []apiextensions.SelectableField) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if len(old.Spec.SelectableFields) > maxSelectableFields && same(crd.Spec.SelectableFields, old.Spec.SelectableFields) {
		kept[""] = true
	}
	for _, v := range crd.Spec.Versions {
		for _, o := range old.Spec.Versions {
			if o.Name == v.Name && len(o.SelectableFields) > maxSelectableFields && same(v.SelectableFields, o.SelectableFields) {
				kept[v.Name] = true
			}
		}
	}
	return kept
}

// resolveFieldPath follows a field path such as .spec.a['b.c'] through
// s, and returns it as a field.Path with the schema it ends at. Names
// after '.' or inside ['...'] are properties, or map keys where the
// schema has additionalProperties. allowBrackets permits the ['...']
// form. The errors are kube-apiserver's words.
func resolveFieldPath(jsonPath string, s *structuralschema.Structural, allowBrackets bool) (*field.Path, *structuralschema.Structural, error) {
	var path *field.Path
	err := walkFieldPath(jsonPath, allowBrackets, func(name string) error {
		switch {
		case s != nil && s.Properties != nil:
			sub, ok := s.Properties[name]
			if !ok {
				return errNoSuchField
			}
			path, s = path.Child(name), &sub
		case s != nil && s.AdditionalProperties != nil:
			path, s = path.Key(name), s.AdditionalProperties.Structural
		default:
			return errNoSuchField
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return path, s, nil
}

// errNoSuchField is the error of a field path that leaves the schema.
var errNoSuchField = errors.New("does not refer to a valid field")

// walkFieldPath parses a field path and calls step with each name in it,
// in order, stopping at the first error.
func walkFieldPath(jsonPath string, allowBrackets bool, step func(name string) error) error {
	toks := fieldPathTokens(jsonPath)
	next := func() (string, bool) {
		if len(toks) == 0 {
			return "", false
		}
		t := toks[0]
		toks = toks[1:]
		return t, true
	}
	for {
		tok, ok := next()
		if !ok {
			return nil
		}
		switch tok {
		case ".":
			name, ok := next()
			if !ok {
				return fmt.Errorf("unexpected end of JSON path")
			}
			if err := step(name); err != nil {
				return err
			}
		case "[":
			if !allowBrackets {
				return fmt.Errorf("array notation is not allowed")
			}
			quoted, ok := next()
			if !ok {
				return fmt.Errorf("unexpected end of JSON path")
			}
			if len(quoted) < 2 || quoted[0] != '\'' || quoted[len(quoted)-1] != '\'' {
				return fmt.Errorf("expected single quoted string but got %s", quoted)
			}
			name, err := unquote(quoted[1 : len(quoted)-1])
			if err != nil {
				return fmt.Errorf("invalid string literal: %w", err)
			}
			if err := step(name); err != nil {
				return err
			}
			closing, ok := next()
			if !ok {
				return fmt.Errorf("unexpected end of JSON path")
			}
			if closing != "]" {
				return fmt.Errorf("expected ] but got %s", closing)
			}
		default:
			return fmt.Errorf("expected [ or . but got: %s", tok)
		}
	}
}

// fieldPathTokens splits a field path into '.', '[' and ']', the text
// between them, and single-quoted strings (which run to the next quote
// not preceded by a backslash, or to the end).
func fieldPathTokens(s string) []string {
	var toks []string
	for len(s) > 0 {
		n := 0
		switch {
		case s[0] == '\'':
			n = len(s)
			for i := 1; i < len(s); i++ {
				if s[i] == '\'' && s[i-1] != '\\' {
					n = i + 1
					break
				}
			}
		case s[0] == '.' || s[0] == '[' || s[0] == ']':
			n = 1
		default:
			n = strings.IndexAny(s, ".[]")
			if n < 0 {
				n = len(s)
			}
		}
		toks = append(toks, s[:n])
		s = s[n:]
	}
	return toks
}

// unquote resolves the backslash escapes of a single-quoted field path
// name: \a \b \f \n \r \t \v \' and \\. Any other escape is an error
// (the last one is reported); a backslash before a newline, or at the
// end, stays as it is.
func unquote(s string) (string, error) {
	var b strings.Builder
	var err error
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 == len(s) || s[i+1] == '\n' {
			b.WriteByte(s[i])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i+1:])
		switch r {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\'':
			b.WriteByte('\'')
		case '\\':
			b.WriteByte('\\')
		default:
			err = fmt.Errorf("invalid escape char %s", s[i:i+1+size])
		}
		i += 1 + size
	}
	return b.String(), err
}
