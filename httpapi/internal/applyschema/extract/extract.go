// Package extract cuts, out of client-go's structured-merge-diff schema of
// every built-in type, the type definitions that a set of root types
// reach. It serves `go generate` in applyschema and the test that keeps
// the generated file equal to what client-go has.
package extract

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

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
