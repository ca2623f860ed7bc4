package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestCustomResource_ReadPrunesRemovedField: a kind without defaults and
// with one version, whose CRD drops a field from its schema, reads stored
// objects pruned to the new schema, as kube-apiserver's storage decoder
// prunes them: GET, LIST and a watch's initial events no longer show the
// field, while a field still in the schema stays.
func TestCustomResource_ReadPrunesRemovedField(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	crd := func(props string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"plains.prune.example.org"},
"spec":{"group":"prune.example.org","scope":"Namespaced","names":{"plural":"plains","kind":"Plain"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{` + props + `}}}}}}]}}`
	}
	res := doRaw(t, d, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", "", []byte(crd(`"keep":{"type":"string"},"gone":{"type":"string"}`)))
	if res.Status != http.StatusCreated {
		t.Fatalf("create CRD: %d %s", res.Status, res.Body)
	}
	waitCRD(t, d, "plains.prune.example.org", established)
	createNamespace(t, d.Clientset(), "prune")
	base := "/apis/prune.example.org/v1/namespaces/prune/plains"
	res = doRaw(t, d, http.MethodPost, base, "application/json", "", []byte(`{"apiVersion":"prune.example.org/v1","kind":"Plain","metadata":{"name":"p"},"spec":{"keep":"k","gone":"g"}}`))
	if res.Status != http.StatusCreated || !strings.Contains(string(res.Body), `"gone":"g"`) {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}

	// Replace the CRD's schema without "gone".
	replaceCRDSpec(t, d, "plains.prune.example.org", []byte(crd(`"keep":{"type":"string"}`)))
	// The kinds are rebuilt by the CRD controller: wait until a read prunes.
	waitFor(t, "reads pruned to the new schema", func() bool {
		return !strings.Contains(string(rawGet(t, d, base+"/p").Body), `"gone"`)
	})
	for _, path := range []string{base + "/p", base, base + "?watch=1&timeoutSeconds=1"} {
		got := string(rawGet(t, d, path).Body)
		if strings.Contains(got, `"gone"`) || !strings.Contains(got, `"keep":"k"`) {
			t.Errorf("GET %s = %s, want spec.keep and no spec.gone", path, got)
		}
	}
}
