// Command gen writes data.bin.gz: kube-apiserver's OpenAPI path items and
// schemas for the kinds of registry.Builtin(), extracted from the
// api/openapi-spec documents of the Kubernetes release named in
// extract.KubernetesModule. Run it with `go generate
// ./httpapi/internal/openapispec` after changing the registry's kinds or
// the Kubernetes version.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec/extract"
	"github.com/edgeapi/edgeapi/registry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := extract.Download()
	if err != nil {
		return err
	}
	out, err := extract.Build(dir, registry.Builtin())
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(out); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile("data.bin.gz", buf.Bytes(), 0o644)
}
