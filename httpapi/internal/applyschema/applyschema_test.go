package applyschema_test

import (
	"bytes"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/edgeapi/edgeapi/httpapi/internal/applyschema"
	"github.com/edgeapi/edgeapi/httpapi/internal/applyschema/extract"
	"github.com/edgeapi/edgeapi/registry"
)

// TestSchemaYAML_MatchesClientGo re-extracts the served kinds' types from
// the schema of the client-go version in go.mod: schema.yaml must equal it
// byte for byte, so it cannot drift from what
// applyconfigurations.NewTypeConverter would use.
func TestSchemaYAML_MatchesClientGo(t *testing.T) {
	full, err := extract.Schema()
	if err != nil {
		t.Fatal(err)
	}
	roots, err := extract.Roots(registry.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	want, err := extract.Subset(full, roots)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(applyschema.SchemaYAML, want) {
		t.Fatalf("schema.yaml (%d bytes) differs from a fresh extraction (%d bytes): run go generate ./httpapi/internal/applyschema",
			len(applyschema.SchemaYAML), len(want))
	}
	if got, all := len(applyschema.SchemaYAML), len(full); got*8 > all {
		t.Errorf("schema.yaml is %d bytes, more than an eighth of client-go's %d", got, all)
	}
}

// TestParser_TypesEqualClientGo checks every type of the subset against the
// same type parsed from client-go's full schema, and that each served kind
// resolves.
func TestParser_TypesEqualClientGo(t *testing.T) {
	fullYAML, err := extract.Schema()
	if err != nil {
		t.Fatal(err)
	}
	full := mustParser(t, fullYAML)
	sub := applyschema.Parser()
	fullTypes := map[string]schema.TypeDef{}
	for _, td := range full.Schema.Types {
		fullTypes[td.Name] = td
	}
	for _, td := range sub.Schema.Types {
		want, ok := fullTypes[td.Name]
		if !ok {
			t.Errorf("type %s not in client-go's schema", td.Name)
			continue
		}
		if !td.Atom.Equals(&want.Atom) {
			t.Errorf("type %s differs from client-go's", td.Name)
		}
	}
	roots, err := extract.Roots(registry.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range roots {
		if _, ok := sub.Schema.FindNamedType(name); !ok {
			t.Errorf("served kind's type %s missing", name)
		}
	}
}

func mustParser(t *testing.T, y []byte) *typed.Parser {
	t.Helper()
	p, err := typed.NewParser(typed.YAMLObject(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
