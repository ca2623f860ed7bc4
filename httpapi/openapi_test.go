package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"

	"github.com/edgeapi/edgeapi/registry"
)

// newOpenAPITestServer serves reg over real SQLite.
func newOpenAPITestServer(t *testing.T, reg *registry.Registry) *httptest.Server {
	t.Helper()
	db := openTestStore(t)
	s, err := New(Config{Store: db, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close(context.Background())
		_ = db.Close()
	})
	return ts
}

// widgetKind is a namespaced kind of group example.com that supplies its
// own schema, as a custom resource does.
func widgetKind(version, kind, resource string) *registry.Kind {
	k := *registry.Builtin().Lookup(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	k.GVK = schema.GroupVersionKind{Group: "example.com", Version: version, Kind: kind}
	k.Resource, k.Singular, k.ListKind = resource, strings.ToLower(kind), kind+"List"
	k.ShortNames = nil
	k.StatusSubresource = true
	k.OpenAPISchema = func() ([]byte, error) {
		return []byte(`{"type":"object","description":"A ` + kind + ` is a test kind.","properties":{"spec":{"type":"object","description":"spec of the ` + kind + `.","properties":{"size":{"type":"integer","format":"int64","description":"size in widgets."},"tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"}}}}}`), nil
	}
	return &k
}

func getJSON(t *testing.T, url string, v any) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

type openAPIIndex struct {
	Paths map[string]struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	} `json:"paths"`
}

// TestServer_OpenAPIV3FollowsRegistry: adding a kind to the registry adds
// its group-version to the /openapi/v3 index, and adding another kind to
// that group-version changes the document's hash (and only that one); the
// old hash URL redirects to the new one.
func TestServer_OpenAPIV3FollowsRegistry(t *testing.T) {
	reg := registry.Builtin()
	ts := newOpenAPITestServer(t, reg)

	var before openAPIIndex
	getJSON(t, ts.URL+"/openapi/v3", &before)
	if _, ok := before.Paths["apis/example.com/v1"]; ok {
		t.Fatal("index lists apis/example.com/v1 before any kind is there")
	}
	if resp, err := http.Get(ts.URL + "/openapi/v3/apis/example.com/v1"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /openapi/v3/apis/example.com/v1 before = %v %v, want 404", resp.StatusCode, err)
	}

	reg.Add(widgetKind("v1", "Widget", "widgets"))
	var one openAPIIndex
	getJSON(t, ts.URL+"/openapi/v3", &one)
	first := one.Paths["apis/example.com/v1"].ServerRelativeURL
	if !strings.HasPrefix(first, "/openapi/v3/apis/example.com/v1?hash=") {
		t.Fatalf("index entry of apis/example.com/v1 = %q", first)
	}
	if got, want := one.Paths["api/v1"], before.Paths["api/v1"]; got != want {
		t.Errorf("api/v1 entry changed to %q from %q when a kind was added to example.com/v1", got.ServerRelativeURL, want.ServerRelativeURL)
	}
	var doc map[string]any
	resp := getJSON(t, ts.URL+first, &doc)
	if got := resp.Header.Get("Cache-Control"); got != "public, immutable" {
		t.Errorf("Cache-Control with the current hash = %q, want public, immutable", got)
	}

	reg.Add(widgetKind("v1", "Gadget", "gadgets"))
	var two openAPIIndex
	getJSON(t, ts.URL+"/openapi/v3", &two)
	second := two.Paths["apis/example.com/v1"].ServerRelativeURL
	if second == first {
		t.Fatalf("hash of apis/example.com/v1 unchanged (%s) after adding a kind", first)
	}
	getJSON(t, ts.URL+second, &doc)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"com.example.v1.Widget", "com.example.v1.WidgetList", "com.example.v1.Gadget", "com.example.v1.GadgetList"} {
		if schemas[name] == nil {
			t.Errorf("document lacks schema %s", name)
		}
	}

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(ts.URL + first)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != second {
		t.Errorf("GET the old hash URL = %d Location %q, want 301 to %q", resp.StatusCode, resp.Header.Get("Location"), second)
	}

	reg.Remove(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	reg.Remove(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"})
	var after openAPIIndex
	getJSON(t, ts.URL+"/openapi/v3", &after)
	if _, ok := after.Paths["apis/example.com/v1"]; ok {
		t.Error("index still lists apis/example.com/v1 after its kinds were removed")
	}
}

// TestServer_OpenAPIV3CustomKind reads a kind's own schema with
// client-go's openapi3 client as kube-apiserver publishes a CRD version:
// apiVersion, kind and metadata added, the group-version-kind extension,
// the list schema, and path items without strategic merge patch.
func TestServer_OpenAPIV3CustomKind(t *testing.T) {
	reg := registry.Builtin()
	reg.Add(widgetKind("v1", "Widget", "widgets"))
	ts := newOpenAPITestServer(t, reg)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewRoot(dc.OpenAPIV3()).GVSpec(schema.GroupVersion{Group: "example.com", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	w := doc.Components.Schemas["com.example.v1.Widget"]
	if w == nil {
		t.Fatal("no com.example.v1.Widget schema")
	}
	if got := w.Description; got != "A Widget is a test kind." {
		t.Errorf("description = %q", got)
	}
	if got := w.Properties["spec"].Properties["size"].Description; got != "size in widgets." {
		t.Errorf("spec.size description = %q", got)
	}
	if got := w.Properties["spec"].Properties["tags"].Extensions["x-kubernetes-list-type"]; got != "set" {
		t.Errorf("spec.tags x-kubernetes-list-type = %v, want set", got)
	}
	if m := w.Properties["metadata"]; len(m.AllOf) != 1 || m.AllOf[0].Ref.String() != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
		t.Errorf("metadata = %+v, want allOf a $ref to ObjectMeta", m)
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if p := w.Properties[f]; len(p.Type) != 1 || p.Type[0] != "string" || p.Description == "" {
			t.Errorf("%s = %+v, want a described string", f, p)
		}
	}
	var gvks []map[string]string
	if err := w.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil || len(gvks) != 1 || gvks[0]["kind"] != "Widget" || gvks[0]["group"] != "example.com" {
		t.Errorf("x-kubernetes-group-version-kind = %v (%v)", gvks, err)
	}
	if doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"] == nil || doc.Components.Schemas["com.example.v1.WidgetList"] == nil {
		t.Error("ObjectMeta or WidgetList missing")
	}
	item := doc.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
	if item == nil || item.Patch == nil || item.Patch.RequestBody == nil {
		t.Fatalf("no PATCH of a widget in %d paths", len(doc.Paths.Paths))
	}
	if _, ok := item.Patch.RequestBody.Content["application/strategic-merge-patch+json"]; ok {
		t.Error("a custom kind's PATCH accepts strategic merge patches")
	}
	if _, ok := item.Patch.RequestBody.Content["application/merge-patch+json"]; !ok {
		t.Error("a custom kind's PATCH does not accept merge patches")
	}
	if doc.Paths.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"] == nil {
		t.Error("no status path for a kind with a status subresource")
	}

	var v2 struct {
		Definitions map[string]map[string]any `json:"definitions"`
		Paths       map[string]any            `json:"paths"`
	}
	getJSON(t, ts.URL+"/openapi/v2", &v2)
	for _, name := range []string{"com.example.v1.Widget", "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.coordination.v1.Lease"} {
		if v2.Definitions[name] == nil {
			t.Errorf("v2 lacks definition %s", name)
		}
	}
	if v2.Paths["/apis/example.com/v1/namespaces/{namespace}/widgets"] == nil || v2.Paths["/api/v1/namespaces/{namespace}/configmaps"] == nil {
		t.Error("v2 lacks the widgets or configmaps paths")
	}
	if v2.Paths["/api/v1/namespaces/{namespace}/services/{name}/proxy"] != nil {
		t.Error("v2 lists services/proxy, which edgeapi does not serve")
	}
}

// TestServer_OpenAPIConditional: the index and the documents answer 304
// to If-None-Match with their ETag.
func TestServer_OpenAPIConditional(t *testing.T) {
	ts := newOpenAPITestServer(t, registry.Builtin())
	for _, path := range []string{"/openapi/v3", "/openapi/v3/api/v1", "/openapi/v2"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		etag := resp.Header.Get("Etag")
		if resp.StatusCode != http.StatusOK || etag == "" {
			t.Fatalf("GET %s = %d, ETag %q", path, resp.StatusCode, etag)
		}
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Header.Set("If-None-Match", etag)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s If-None-Match its ETag = %d, want 304", path, resp.StatusCode)
		}
	}
}

// TestServer_OpenAPINegotiation: JSON is served to */* and application/json;
// a client that accepts only protobuf gets 406.
func TestServer_OpenAPINegotiation(t *testing.T) {
	ts := newOpenAPITestServer(t, registry.Builtin())
	for _, tc := range []struct {
		path, accept string
		want         int
	}{
		{"/openapi/v2", "", http.StatusOK},
		{"/openapi/v2", "application/json", http.StatusOK},
		{"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", http.StatusNotAcceptable},
		{"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json", http.StatusOK},
		{"/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", http.StatusNotAcceptable},
		{"/openapi/v3/api/v1", "*/*", http.StatusOK},
		{"/openapi/v3/apis/apps/v1", "", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+tc.path, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s Accept %q = %d, want %d", tc.path, tc.accept, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusOK && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s Accept %q: Content-Type %q", tc.path, tc.accept, resp.Header.Get("Content-Type"))
		}
	}
}

// BenchmarkServer_OpenAPIAfterRegistryChange measures what a client pays
// for the OpenAPI documents after a kind is added to a registry of 500
// kinds that supply their own schema (each in its own group): the v3 index,
// the new group-version's document and the v2 document.
func BenchmarkServer_OpenAPIAfterRegistryChange(b *testing.B) {
	b.Run("v3", func(b *testing.B) { benchOpenAPIAfterRegistryChange(b, false) })
	b.Run("v3+v2", func(b *testing.B) { benchOpenAPIAfterRegistryChange(b, true) })
}

func benchOpenAPIAfterRegistryChange(b *testing.B, withV2 bool) {
	reg := registry.Builtin()
	add := func(i int) {
		k := widgetKind("v1", "Widget", "widgets")
		k.GVK.Group = fmt.Sprintf("g%d.example.com", i)
		reg.Add(k)
	}
	for i := 0; i < 500; i++ {
		add(i)
	}
	t := &testing.T{}
	ts := newOpenAPITestServer(t, reg)
	get := func(path string) int64 {
		resp, err := http.Get(ts.URL + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %v %v", path, resp, err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return n
	}
	get("/openapi/v3")
	var v2Bytes int64
	if withV2 {
		v2Bytes = get("/openapi/v2")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		add(1000 + i)
		get("/openapi/v3")
		get(fmt.Sprintf("/openapi/v3/apis/g%d.example.com/v1", 1000+i))
		if withV2 {
			v2Bytes = get("/openapi/v2")
		}
	}
	if withV2 {
		b.ReportMetric(float64(v2Bytes), "v2-bytes")
	}
}
