package e2e

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/kube-openapi/pkg/spec3"
)

// TestOpenAPI_KubectlExplain checks that kubectl explain prints the field
// descriptions kube-apiserver publishes (the texts of k8s.io/api's types, as
// the Kubernetes API reference shows them) for built-in kinds of three
// groups.
func TestOpenAPI_KubectlExplain(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{{
		args: []string{"explain", "configmaps"},
		want: []string{"KIND:       ConfigMap", "VERSION:    v1", "ConfigMap holds configuration data for pods to consume.",
			"binaryData\t<map[string]string>", "immutable\t<boolean>", "Immutable, if set to true, ensures that data stored in the ConfigMap cannot"},
	}, {
		args: []string{"explain", "configmap.data"},
		want: []string{"FIELD: data <map[string]string>", "Data contains the configuration data. Each key must consist of alphanumeric"},
	}, {
		args: []string{"explain", "services.spec.ports"},
		want: []string{"KIND:       Service", "FIELD: ports <[]ServicePort>", "The list of ports that are exposed by this service.",
			"ServicePort contains information on service's port.", "port\t<integer> -required-", "The port that will be exposed by this service.",
			"targetPort\t<IntOrString>"},
	}, {
		args: []string{"explain", "crd.spec.versions"},
		want: []string{"GROUP:      apiextensions.k8s.io", "KIND:       CustomResourceDefinition", "FIELD: versions <[]CustomResourceDefinitionVersion>",
			"versions is the list of all API versions of the defined custom resource.", "served\t<boolean> -required-",
			"schema\t<CustomResourceValidation>"},
	}, {
		args: []string{"explain", "leases.spec.holderIdentity"},
		want: []string{"GROUP:      coordination.k8s.io", "FIELD: holderIdentity <string>", "holderIdentity contains the identity of the holder of a current lease."},
	}, {
		args: []string{"explain", "events", "--api-version=events.k8s.io/v1"},
		want: []string{"GROUP:      events.k8s.io", "Event is a report of an event somewhere in the cluster.", "reportingController\t<string>"},
	}} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			res := d.MustKubectl(tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(res.Stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Stdout)
				}
			}
		})
	}
}

// TestOpenAPI_KubectlApplyClientSide checks that client-side kubectl apply
// computes its strategic merge patch from the server's OpenAPI v3 schema:
// it reads /openapi/v3/api/v1, does not fall back to its compiled-in types,
// and the patch of a Service merges the ports list by its merge key
// (x-kubernetes-patch-merge-key) and keeps a port another writer added.
func TestOpenAPI_KubectlApplyClientSide(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "oapi-apply"
	createNamespace(t, d.Clientset(), ns)
	svc := func(ports ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: " + ns + "\nspec:\n  selector:\n    app: web\n  ports:\n")
		for _, p := range ports {
			b.WriteString("  - name: p" + p + "\n    port: " + p + "\n")
		}
		return b.String()
	}
	wantOutput(t, d.KubectlStdin(svc("80", "443"), "apply", "-f", "-"), "service/web created\n")
	wantOutput(t, d.Kubectl("patch", "service", "web", "-n", ns, "--type=json", "-p",
		`[{"op":"add","path":"/spec/ports/-","value":{"name":"other","port":9000}}]`), "service/web patched\n")

	res := d.KubectlStdin(svc("80", "8080"), "apply", "-f", "-", "-v=8")
	if res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	if !strings.Contains(res.Stdout, "service/web configured") {
		t.Errorf("apply printed %q, want service/web configured", res.Stdout)
	}
	log := res.Stderr
	if !regexp.MustCompile(`verb="GET" url="https?://[^"]+/openapi/v3/api/v1\?hash=[0-9A-F]{128}`).MatchString(log) {
		t.Errorf("kubectl did not read /openapi/v3/api/v1 with its hash:\n%s", log)
	}
	for _, bad := range []string{"warning:", "does not exist for OpenAPI V3", "does not support strategic merge patch", "error calculating patch"} {
		if strings.Contains(log, bad) {
			t.Errorf("kubectl fell back from the OpenAPI v3 schema (%q):\n%s", bad, log)
		}
	}
	if !strings.Contains(log, "application/strategic-merge-patch+json") || !strings.Contains(log, `$setElementOrder/ports`) {
		t.Errorf("kubectl sent no strategic merge patch merging ports by key:\n%s", log)
	}

	var got corev1.Service
	if err := json.Unmarshal([]byte(d.MustKubectl("get", "service", "web", "-n", ns, "-o", "json").Stdout), &got); err != nil {
		t.Fatal(err)
	}
	var ports []int32
	for _, p := range got.Spec.Ports {
		ports = append(ports, p.Port)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	if want := []int32{80, 8080, 9000}; !equalInt32s(ports, want) {
		t.Errorf("ports after apply = %v, want %v (443 removed, 8080 added, the other writer's 9000 kept)", ports, want)
	}
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOpenAPI_ClientGoV3 reads the documents with client-go's OpenAPI v3
// clients: the index lists every served group-version, each document
// parses, and the built-in kinds' schemas carry their group-version-kind
// and merge extensions.
func TestOpenAPI_ClientGoV3(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	dc, err := discovery.NewDiscoveryClientForConfig(d.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("Paths: %v", err)
	}
	for _, p := range []string{"api/v1", "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1", "apis/apiextensions.k8s.io/v1"} {
		gv, ok := paths[p]
		if !ok {
			t.Errorf("index lacks %s (has %d paths)", p, len(paths))
			continue
		}
		b, err := gv.Schema("application/json")
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		var doc spec3.OpenAPI
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Errorf("%s does not parse as OpenAPI v3: %v", p, err)
			continue
		}
		if doc.Components == nil || len(doc.Components.Schemas) == 0 || doc.Paths == nil || len(doc.Paths.Paths) == 0 {
			t.Errorf("%s has no schemas or no paths", p)
		}
	}

	root := openapi3.NewRoot(dc.OpenAPIV3())
	doc, err := root.GVSpec(schema.GroupVersion{Version: "v1"})
	if err != nil {
		t.Fatalf("GVSpec v1: %v", err)
	}
	cm := doc.Components.Schemas["io.k8s.api.core.v1.ConfigMap"]
	if cm == nil {
		t.Fatal("no io.k8s.api.core.v1.ConfigMap schema")
	}
	var gvks []map[string]string
	if err := cm.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil || len(gvks) != 1 || gvks[0]["kind"] != "ConfigMap" || gvks[0]["version"] != "v1" {
		t.Errorf("ConfigMap x-kubernetes-group-version-kind = %v (%v)", gvks, err)
	}
	ports := doc.Components.Schemas["io.k8s.api.core.v1.ServiceSpec"].Properties["ports"]
	if got := ports.Extensions["x-kubernetes-patch-merge-key"]; got != "port" {
		t.Errorf("ServiceSpec.ports x-kubernetes-patch-merge-key = %v, want port", got)
	}
	if got := ports.Extensions["x-kubernetes-list-type"]; got != "map" {
		t.Errorf("ServiceSpec.ports x-kubernetes-list-type = %v, want map", got)
	}
	if _, err := root.GVSpec(schema.GroupVersion{Group: "apps", Version: "v1"}); err == nil {
		t.Error("GVSpec apps/v1 succeeded; edgeapi does not serve apps/v1")
	}
}
