// Package extract cuts, out of client-go's structured-merge-diff schema of
// every built-in type, the type definitions that a set of root types
// reach. It serves `go generate` in applyschema and the test that keeps
// the generated file equal to what client-go has.
package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v2"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	openapiextract "github.com/edgeapi/edgeapi/httpapi/internal/openapispec/extract"
	"github.com/edgeapi/edgeapi/registry"
)

// Roots returns the schema names (OpenAPI definition names) of the kinds
// reg serves, sorted, without duplicates.
func Roots(reg *registry.Registry) ([]string, error) {
	seen := map[string]bool{}
	var roots []string
	for _, k := range reg.Kinds() {
		name, err := registry.Scheme.ToOpenAPIDefinitionName(k.GVK)
		if err != nil {
			return nil, fmt.Errorf("schema name of %s: %w", k.GVK, err)
		}
		if !seen[name] {
			seen[name] = true
			roots = append(roots, name)
		}
	}
	sort.Strings(roots)
	return roots, nil
}

// untypedNames are the schema's own helper types; structured-merge-diff
// resolves them by name, so they are always kept.
var untypedNames = []string{"__untyped_atomic_", "__untyped_deduced_"}

// clientGoSchemaPackage holds the generated schemaYAML of client-go's
// applyconfigurations (applyconfigurations.NewTypeConverter parses it).
const clientGoSchemaPackage = "k8s.io/client-go/applyconfigurations/internal"

// ClientGoSchema returns the schema YAML that client-go's
// applyconfigurations.NewTypeConverter parses, read from the source of the
// client-go version this module builds with.
func ClientGoSchema() ([]byte, error) {
	pkg, err := build.Import(clientGoSchemaPackage, ".", build.FindOnly)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", clientGoSchemaPackage, err)
	}
	path := filepath.Join(pkg.Dir, "internal.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var lit *ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "schemaYAML" || len(vs.Values) != 1 {
			return true
		}
		if call, ok := vs.Values[0].(*ast.CallExpr); ok && len(call.Args) == 1 {
			lit, _ = call.Args[0].(*ast.BasicLit)
		}
		return false
	})
	if lit == nil || lit.Kind != token.STRING {
		return nil, fmt.Errorf("%s: no schemaYAML string literal", path)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: schemaYAML: %w", path, err)
	}
	return []byte(s), nil
}

// Subset returns the part of full (a structured-merge-diff schema YAML in
// client-go's layout: "types:" then one "- name: …" entry per type) that
// defines roots and every type they reach, with each kept definition
// copied byte for byte, in full's order.
func Subset(full []byte, roots []string) ([]byte, error) {
	p, err := typed.NewParser(typed.YAMLObject(full))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	byName := make(map[string]*schema.TypeDef, len(p.Schema.Types))
	for i := range p.Schema.Types {
		byName[p.Schema.Types[i].Name] = &p.Schema.Types[i]
	}
	keep := map[string]bool{}
	var visitRef func(r schema.TypeRef) error
	var visitAtom func(a schema.Atom) error
	visitName := func(name string) error {
		if keep[name] {
			return nil
		}
		td, ok := byName[name]
		if !ok {
			return fmt.Errorf("type %q is not in the schema", name)
		}
		keep[name] = true
		return visitAtom(td.Atom)
	}
	visitRef = func(r schema.TypeRef) error {
		if r.NamedType != nil {
			if err := visitName(*r.NamedType); err != nil {
				return err
			}
		}
		return visitAtom(r.Inlined)
	}
	visitAtom = func(a schema.Atom) error {
		if a.Map != nil {
			for _, f := range a.Map.Fields {
				if err := visitRef(f.Type); err != nil {
					return err
				}
			}
			if err := visitRef(a.Map.ElementType); err != nil {
				return err
			}
		}
		if a.List != nil {
			return visitRef(a.List.ElementType)
		}
		return nil
	}
	for _, name := range append(append([]string(nil), untypedNames...), roots...) {
		if err := visitName(name); err != nil {
			return nil, err
		}
	}

	// Cut full into its entries and keep those named.
	const header, entry, nameKey = "types:\n", "\n- name: ", "- name: "
	if !bytes.HasPrefix(full, []byte(header)) {
		return nil, errors.New("schema does not start with \"types:\"")
	}
	body := full[len(header)-1:] // from the newline before the first entry
	var out bytes.Buffer
	out.WriteString(header)
	kept := map[string]bool{}
	for len(body) > 0 {
		next := bytes.Index(body[1:], []byte(entry))
		var chunk []byte
		if next < 0 {
			chunk, body = body[1:], nil
		} else {
			chunk, body = body[1:next+1], body[next+1:]
		}
		if !bytes.HasPrefix(chunk, []byte(nameKey)) {
			return nil, fmt.Errorf("unexpected schema entry %.40q", chunk)
		}
		line, _, _ := bytes.Cut(chunk[len(nameKey):], []byte("\n"))
		name := string(line)
		if keep[name] {
			out.Write(chunk)
			if chunk[len(chunk)-1] != '\n' {
				out.WriteByte('\n')
			}
			kept[name] = true
		}
	}
	if len(kept) != len(keep) {
		var missing []string
		for n := range keep {
			if !kept[n] {
				missing = append(missing, n)
			}
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("entries not found in the schema text: %v", missing)
	}
	return out.Bytes(), nil
}

// apiextensionsModelPrefix names the OpenAPI models of
// apiextensions.k8s.io/v1, whose types client-go's schema does not hold.
const apiextensionsModelPrefix = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."

// reviewDocs are the OpenAPI v3 documents (in the Kubernetes module's
// api/openapi-spec/v3) of the groups of the review kinds: client-go has
// no apply configurations for create-only types, so its schema holds
// neither them nor some of the meta types they reach
// (FieldSelectorRequirement).
var reviewDocs = []string{
	"apis__authorization.k8s.io__v1_openapi.json",
	"apis__authentication.k8s.io__v1_openapi.json",
}

// reviewModels returns every OpenAPI model of the review kinds' group
// documents, as kube-apiserver publishes them.
func reviewModels() (map[string]*spec.Schema, error) {
	dir, err := openapiextract.Download()
	if err != nil {
		return nil, err
	}
	models := map[string]*spec.Schema{}
	for _, file := range reviewDocs {
		b, err := os.ReadFile(filepath.Join(dir, "api", "openapi-spec", "v3", file))
		if err != nil {
			return nil, err
		}
		var doc struct {
			Components struct {
				Schemas map[string]*spec.Schema `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("decode %s: %w", file, err)
		}
		for name, s := range doc.Components.Schemas {
			models[name] = s
		}
	}
	return models, nil
}

// Schema returns the schema of every type the served kinds may reach:
// client-go's (ClientGoSchema) followed by the apiextensions.k8s.io/v1
// types and the review kinds' types, which kube-apiserver's field manager
// converts from its OpenAPI definitions with
// schemaconv.ToSchemaFromOpenAPI (managedfields.NewTypeConverter), as
// done here: the apiextensions-apiserver's generated definitions, and
// the published documents of the review kinds' groups. Types client-go
// already defines (ObjectMeta, Time, the untyped helpers) are not
// repeated.
func Schema() ([]byte, error) {
	full, err := ClientGoSchema()
	if err != nil {
		return nil, err
	}
	p, err := typed.NewParser(typed.YAMLObject(full))
	if err != nil {
		return nil, fmt.Errorf("parse client-go schema: %w", err)
	}
	have := make(map[string]bool, len(p.Schema.Types))
	for _, td := range p.Schema.Types {
		have[td.Name] = true
	}
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	models := map[string]*spec.Schema{}
	for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if strings.HasPrefix(name, apiextensionsModelPrefix) {
			s := def.Schema
			models[name] = &s
		}
	}
	reviews, err := reviewModels()
	if err != nil {
		return nil, err
	}
	for name, m := range reviews {
		models[name] = m
	}
	ext, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		return nil, fmt.Errorf("convert OpenAPI definitions: %w", err)
	}
	var extra schema.Schema
	for _, td := range ext.Types {
		if !have[td.Name] {
			sortFields(&td.Atom)
			extra.Types = append(extra.Types, td)
		}
	}
	sort.Slice(extra.Types, func(i, j int) bool { return extra.Types[i].Name < extra.Types[j].Name })
	b, err := yaml.Marshal(&extra)
	if err != nil {
		return nil, fmt.Errorf("marshal apiextensions schema: %w", err)
	}
	const header = "types:\n"
	if !bytes.HasPrefix(b, []byte(header)) {
		return nil, errors.New("apiextensions schema does not start with \"types:\"")
	}
	if !bytes.HasSuffix(full, []byte("\n")) {
		full = append(full, '\n')
	}
	return append(full, b[len(header):]...), nil
}

// sortFields orders a's map fields, and those of its inlined types, by
// name: schemaconv emits them in Go's map order, and a generated file must
// not change from one run to the next.
func sortFields(a *schema.Atom) {
	if a.Map != nil {
		sort.Slice(a.Map.Fields, func(i, j int) bool { return a.Map.Fields[i].Name < a.Map.Fields[j].Name })
		for i := range a.Map.Fields {
			sortFields(&a.Map.Fields[i].Type.Inlined)
		}
		sortFields(&a.Map.ElementType.Inlined)
	}
	if a.List != nil {
		sortFields(&a.List.ElementType.Inlined)
	}
}
