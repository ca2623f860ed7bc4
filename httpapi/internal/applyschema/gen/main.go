// Command gen writes schema.yaml: the type definitions, from the schema of
// client-go's applyconfigurations, that the kinds of registry.Builtin()
// reach. Run it with `go generate ./httpapi/internal/applyschema` after
// changing the registry's kinds or upgrading client-go.
package main

import (
	"fmt"
	"os"

	"github.com/edgeapi/edgeapi/httpapi/internal/applyschema/extract"
	"github.com/edgeapi/edgeapi/registry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	full, err := extract.Schema()
	if err != nil {
		return err
	}
	roots, err := extract.Roots(registry.Builtin())
	if err != nil {
		return err
	}
	out, err := extract.Subset(full, roots)
	if err != nil {
		return err
	}
	return os.WriteFile("schema.yaml", out, 0o644)
}
