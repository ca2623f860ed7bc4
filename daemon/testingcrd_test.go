package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
)

func TestAddTestingCRDs(t *testing.T) {
	reg := registry.New()
	if err := addTestingCRDs(reg, filepath.Join("..", "e2e", "testdata", "crds.yaml")); err != nil {
		t.Fatalf("addTestingCRDs: %v", err)
	}
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "stable.example.com", Version: "v1", Resource: "crontabs"},
		{Group: "stable.example.com", Version: "v1beta1", Resource: "crontabs"},
		{Group: "things.example.org", Version: "v1alpha1", Resource: "widgets"},
	} {
		if reg.Lookup(gvr) == nil {
			t.Errorf("%v not registered", gvr)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := addTestingCRDs(registry.New(), bad)
	if err == nil || !strings.Contains(err.Error(), "v1 ConfigMap is not an apiextensions.k8s.io/v1 CustomResourceDefinition") {
		t.Errorf("a ConfigMap in the file: error %v", err)
	}
}
