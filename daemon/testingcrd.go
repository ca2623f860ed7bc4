package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/edgeapi/edgeapi/registry"
)

// addTestingCRDs registers the custom resource kinds of every
// CustomResourceDefinition in the YAML file at path
// (--unsafe-testing-crd-file). Test-only: until CRDs can be created
// through the API, this is how tests get custom resources served; a CRD
// controller will register kinds instead.
func addTestingCRDs(reg *registry.Registry, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read crd file: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		err := dec.Decode(&crd)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("decode crd file %s: %w", path, err)
		}
		if crd.Kind == "" {
			continue // an empty document
		}
		if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return fmt.Errorf("crd file %s: %s %s is not an apiextensions.k8s.io/v1 CustomResourceDefinition", path, crd.APIVersion, crd.Kind)
		}
		kinds, err := registry.CustomResourceKinds(&crd)
		if err != nil {
			return fmt.Errorf("crd file %s: %w", path, err)
		}
		for _, k := range kinds {
			reg.Add(k)
		}
	}
}
