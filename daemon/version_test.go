package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrintVersion_variant: the first line names the etcd backend in the
// edgeapi-ha build (-tags etcd) and nothing more in the default build, so
// that `edgeapi version` tells which package is installed.
func TestPrintVersion_variant(t *testing.T) {
	var out bytes.Buffer
	printVersion(&out)
	first, _, _ := strings.Cut(out.String(), "\n")
	want := "edgeapi " + version
	if openEtcd != nil {
		want += " (etcd backend)"
	}
	if first != want {
		t.Errorf("first line of printVersion: got %q, want %q", first, want)
	}
}
