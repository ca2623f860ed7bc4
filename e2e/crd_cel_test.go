package e2e

import (
	"strings"
	"testing"
)

// TestCRD_InvalidCELRule applies CRDs whose x-kubernetes-validations rules
// kube-apiserver refuses: one that does not compile, on create, and one
// over the cost limit, on update. kubectl prints kube-apiserver's 422
// message, and nothing is stored or changed.
func TestCRD_InvalidCELRule(t *testing.T) {
	d := StartDaemon(t)
	const name = "crontabs.stable.example.com"
	withRule := func(rule string) string {
		return strings.Replace(cronTabCRDYAML, "          spec:\n            type: object\n",
			"          spec:\n            type: object\n            x-kubernetes-validations:\n            - rule: "+rule+"\n", 1)
	}

	broken := withRule(`"self.replicas >"`)
	res := d.KubectlStdin(broken, "apply", "-f", "-")
	want := `The CustomResourceDefinition "crontabs.stable.example.com" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.replicas \u003e","Message":"","MessageExpression":"","Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}
 | self.replicas >
 | ...............^
`
	if res.ExitCode == 0 || res.Stderr != want {
		t.Errorf("apply of a rule that does not compile: %s\nwant stderr %q", res, want)
	}
	res = d.Kubectl("get", "crd", name)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, `customresourcedefinitions.apiextensions.k8s.io "`+name+`" not found`) {
		t.Errorf("get after a refused create: %s", res)
	}

	// The same rule fixed is accepted.
	wantOutput(t, d.KubectlStdin(withRule(`"self.replicas > 0"`), "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/"+name+" created\n")

	// A rule comparing every pair of items of an unbounded list is far
	// over the cost limit.
	expensive := strings.Replace(withRule(`"self.images.all(x, self.images.all(y, x == y))"`),
		"              image:\n                type: string\n",
		"              image:\n                type: string\n              images:\n                type: array\n                items:\n                  type: string\n", 1)
	res = d.KubectlStdin(expensive, "apply", "-f", "-")
	want = `The CustomResourceDefinition "crontabs.stable.example.com" is invalid: 
* spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)
* spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema
* spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)
`
	if res.ExitCode == 0 || res.Stderr != want {
		t.Errorf("apply of a rule over the cost limit: %s\nwant stderr %q", res, want)
	}
	wantOutput(t, d.MustKubectl("get", "crd", name, "-o", "jsonpath={.metadata.generation} {.spec.versions[0].schema.openAPIV3Schema.properties.spec.x-kubernetes-validations[0].rule}"), "1 self.replicas > 0")
}

// TestCRD_CELCompileBounded creates a CRD whose schema nests 4,000
// objects, each with a rule: compiling each rule declares the type of
// everything below it, which would take kube-apiserver's code minutes.
// edgeapi stops at its compile budget and answers 422 with a cause saying
// so (within the client's 60 s request timeout), and stores nothing.
func TestCRD_CELCompileBounded(t *testing.T) {
	d := StartDaemon(t)
	const depth = 4000
	level := `{"type":"object","x-kubernetes-validations":[{"rule":"true"}],"properties":{"a":`
	schema := strings.Repeat(level, depth) + `{"type":"string"}` + strings.Repeat(`}}`, depth)
	body := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"deeps.stable.example.com"},
		"spec":{"group":"stable.example.com","scope":"Namespaced","names":{"plural":"deeps","singular":"deep","kind":"Deep"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":` + schema + `}}}}]}}`
	res := doRaw(t, d, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", "application/json", []byte(body))
	const cause = `x-kubernetes-validations: Forbidden: the x-kubernetes-validations rules of this CustomResourceDefinition are too many or too large to compile`
	if res.Status != 422 || !strings.Contains(string(res.Body), cause) {
		t.Fatalf("create: %d %.2000s", res.Status, res.Body)
	}
	if res := rawGet(t, d, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/deeps.stable.example.com"); res.Status != 404 {
		t.Errorf("get after a refused create: %d %.500s", res.Status, res.Body)
	}
}
