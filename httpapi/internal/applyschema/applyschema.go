// Package applyschema is the structured-merge-diff schema of the kinds
// edgeapi serves, for managedFields and server-side apply.
//
// client-go's applyconfigurations.NewTypeConverter parses the schema of
// every built-in type (about 380 KB of YAML, several MiB once parsed, kept
// for the life of the process); edgeapi serves six kinds. schema.yaml holds
// only the definitions those kinds reach, copied byte for byte from the
// client-go version in go.mod by `go generate` (see gen/), and a test fails
// when it no longer equals a fresh extraction.
package applyschema

import (
	_ "embed" // schema.yaml
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

//go:generate go run ./gen

// SchemaYAML is the generated schema of the served kinds.
//
//go:embed schema.yaml
var SchemaYAML []byte

var (
	parserOnce sync.Once
	parser     *typed.Parser
)

// Parser returns the parsed schema, parsing it on first use. It panics if
// the embedded schema does not parse, as client-go's does: the test parses
// it.
func Parser() *typed.Parser {
	parserOnce.Do(func() {
		var err error
		parser, err = typed.NewParser(typed.YAMLObject(SchemaYAML))
		if err != nil {
			panic(fmt.Sprintf("parse apply schema: %v", err))
		}
	})
	return parser
}

// NewTypeConverter is applyconfigurations.NewTypeConverter over the served
// kinds' schema only: objects of other kinds cannot be converted.
func NewTypeConverter(scheme *runtime.Scheme) managedfields.TypeConverter {
	return managedfields.NewSchemeTypeConverter(scheme, Parser())
}
