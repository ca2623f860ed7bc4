package httpapi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/registry"
)

// TestNegotiateOutputFor: custom resources skip a clause asking for the
// object in Protobuf, and take the next acceptable one; conversions to
// meta.k8s.io types stay acceptable in Protobuf; built-ins keep Protobuf.
func TestNegotiateOutputFor(t *testing.T) {
	tests := []struct {
		accept       string
		unstructured bool
		wantOK       bool
		want         representation
	}{
		{"application/vnd.kubernetes.protobuf", false, true, representation{enc: encProtobuf}},
		{"application/vnd.kubernetes.protobuf", true, false, representation{}},
		{"application/vnd.kubernetes.protobuf, application/json", true, true, representation{enc: encJSON}},
		{"application/vnd.kubernetes.protobuf;q=1, application/yaml;q=0.5", true, true, representation{enc: encYAML}},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, true,
			representation{enc: encProtobuf, as: asPartialObjectMetadata, metaVersion: "v1"}},
		{"", true, true, representation{}},
	}
	for _, tt := range tests {
		got, ok := negotiateOutputFor(tt.accept, tt.unstructured)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("negotiateOutputFor(%q, %v) = %+v, %v; want %+v, %v", tt.accept, tt.unstructured, got, ok, tt.want, tt.wantOK)
		}
	}
}

// testCRKind returns the v1 CronTab kind of e2e/testdata/crds.yaml.
func testCRKind(t testing.TB) *registry.Kind {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "e2e", "testdata", "crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(b), "\n---\n")
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(doc), &crd); err != nil {
		t.Fatal(err)
	}
	kinds, err := registry.CustomResourceKinds(&crd)
	if err != nil {
		t.Fatal(err)
	}
	return kinds[0]
}

// TestObjectJSON_ServedCache: a custom resource read through FromStorage
// (pruning and defaults on read) that AppendServedJSON cannot serve (its
// stored bytes are not spelled as encoding spells them: white space) is
// served from the cache the second time, with the same bytes; another
// stored value is not confused with it.
func TestObjectJSON_ServedCache(t *testing.T) {
	k := testCRKind(t)
	if k.FromStorage == nil {
		t.Fatal("the CronTab kind has no FromStorage; the test needs one")
	}
	value := []byte(`{"metadata":{"name":"a","resourceVersion":"5"}, "spec":{"gone":1,"image":"i"}}`)
	first, err := objectJSON(k, value)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","resourceVersion":"5"},"spec":{"image":"i","minReplicas":0,"mode":"Slow","replicas":1}}`
	if string(first) != want {
		t.Errorf("objectJSON = %s, want %s (defaults applied on read)", first, want)
	}
	if cached := served.get(servedKeyOf(k, value)); string(cached) != want {
		t.Errorf("cache holds %q, want the served JSON", cached)
	}
	second, _ := objectJSON(k, value)
	if &second[0] != &first[0] {
		t.Errorf("second objectJSON did not come from the cache")
	}
	other, _ := objectJSON(k, []byte(`{"metadata":{"name":"a","resourceVersion":"6"}, "spec":{"gone":1,"image":"i"}}`))
	if string(other) == want {
		t.Errorf("another stored value was served as the first")
	}
}

// TestObjectJSON_DecodeFree: a custom resource that AppendServedJSON
// serves (it lacks defaults and holds a field the schema drops) is answered with the bytes
// decoding gives, by GET and as a list item, and is not kept in the
// cache.
func TestObjectJSON_DecodeFree(t *testing.T) {
	k := testCRKind(t)
	value := []byte(`{"metadata":{"name":"b","resourceVersion":"7"},"spec":{"gone":1,"image":"i"}}`)
	obj, err := k.DecodeStored(value)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := objectJSON(k, value)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("objectJSON = %s, %v; want %s", got, err, want)
	}
	item, err := appendItemJSON([]byte(`[`), k, value)
	if err != nil || string(item) != "["+string(want) {
		t.Errorf("appendItemJSON = %s, %v; want [%s", item, err, want)
	}
	if cached := served.get(servedKeyOf(k, value)); cached != nil {
		t.Errorf("cache holds %s; want nothing for an object served from its bytes", cached)
	}
}

func TestServedCache_Bound(t *testing.T) {
	// A bound smaller than the default, as a small --memory-limit sets.
	c := &servedCache{entries: map[servedKey][]byte{}}
	c.setMaxBytes(DefaultServedCacheBytes / 4)
	big := make([]byte, servedCacheMaxObject)
	n := 0
	for c.bytes+len(big)+servedEntryBytes <= DefaultServedCacheBytes/4 {
		c.put(servedKey{n: n}, big)
		n++
	}
	if c.get(servedKey{n: 0}) == nil {
		t.Fatal("an entry is missing before the cache is full")
	}
	c.put(servedKey{n: n}, big)
	if c.get(servedKey{n: 0}) != nil || c.get(servedKey{n: n}) == nil || c.bytes != len(big)+servedEntryBytes {
		t.Errorf("over the bound: cache not emptied before the new entry (bytes %d)", c.bytes)
	}
	c.put(servedKey{n: -1}, make([]byte, servedCacheMaxObject+1))
	if c.get(servedKey{n: -1}) != nil {
		t.Errorf("an object over servedCacheMaxObject was cached")
	}
}

// TestServedCache_PutCountsHeldBytes: an encoding appended into a buffer
// with room to spare is kept as a copy of its own size, and the bound
// counts what the cache holds, so that a cache of Protobuf documents
// built by append stays within its share of the memory budget.
func TestServedCache_PutCountsHeldBytes(t *testing.T) {
	c := &servedCache{entries: map[servedKey][]byte{}}
	c.setMaxBytes(1 << 20)
	grown := append(make([]byte, 0, 4096), make([]byte, 1000)...)
	grown[999] = 7
	c.put(servedKey{n: 1}, grown)
	got := c.get(servedKey{n: 1})
	if len(got) != 1000 || got[999] != 7 {
		t.Fatalf("cached %d bytes (last %d), want the 1000 put", len(got), got[len(got)-1])
	}
	if cap(got) > 1000+1000/8 {
		t.Errorf("cached slice has capacity %d for 1000 bytes: the spare room is held too", cap(got))
	}
	if c.bytes != cap(got)+servedEntryBytes {
		t.Errorf("cache counts %d bytes, want %d (capacity held and entry)", c.bytes, cap(got)+servedEntryBytes)
	}
}

// TestNewCRTypeConverter_ReachableTypes: a custom resource kind's type
// converter keeps only the types its schema reaches, and types objects
// (metadata included) as it did with every built-in type.
func TestNewCRTypeConverter_ReachableTypes(t *testing.T) {
	k := testCRKind(t)
	tc, err := newCRTypeConverter(k)
	if err != nil {
		t.Fatal(err)
	}
	name := k.GVK.Group + "." + k.GVK.Version + "." + k.GVK.Kind
	cr, err := schemaconv.ToSchemaFromOpenAPI(map[string]*spec.Schema{name: k.ApplySchema()}, k.PreserveUnknownFields)
	if err != nil {
		t.Fatal(err)
	}
	all := crApplyTypes(cr.Types)
	full := crTypeConverter{pt: (&typed.Parser{Schema: smdschema.Schema{Types: all}}).Type(name)}
	if got := len(reachableTypes(name, all)); got == 0 || got > len(all)/4 {
		t.Errorf("%d of %d types reachable, want a few", got, len(all))
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"apiVersion":"stable.example.com/v1","kind":"CronTab",
		"metadata":{"name":"a","namespace":"n","labels":{"x":"y"},"annotations":{"a":"b"},"finalizers":["f/g"],
			"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u1","controller":true}]},
		"spec":{"cronSpec":"* * * * *","replicas":2,"ports":[{"name":"http","port":80},{"name":"https","port":443}]},
		"status":{"replicas":1}}`), &obj.Object); err != nil {
		t.Fatal(err)
	}
	got, err := tc.ObjectToTyped(obj)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	want, err := full.ObjectToTyped(obj)
	if err != nil {
		t.Fatalf("ObjectToTyped with every type: %v", err)
	}
	gotSet, err := got.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	wantSet, err := want.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	if !gotSet.Equals(wantSet) {
		t.Errorf("field set\n%s\nwant\n%s", gotSet, wantSet)
	}
	if !strings.Contains(gotSet.String(), `.ownerReferences[uid="u1"]`) || !strings.Contains(gotSet.String(), `.ports[name="https"]`) {
		t.Errorf("field set %s: want owner references and ports keyed as map lists", gotSet)
	}
}

// TestFieldManagers_ForgetRemovedKinds: the field managers and type
// converter of a custom resource kind go once the registry stops serving
// it (its CRD changed or was deleted), not with the process.
func TestFieldManagers_ForgetRemovedKinds(t *testing.T) {
	reg := registry.New()
	old := testCRKind(t)
	reg.Add(old)
	f := newFieldManagers(reg, 0)
	for _, sub := range []string{"", "status"} {
		if _, err := f.get(old, sub); err != nil {
			t.Fatal(err)
		}
	}
	next := testCRKind(t) // the CRD changed: a new kind at the same resource
	reg.Replace(nil, []*registry.Kind{next})
	if _, err := f.get(next, ""); err != nil {
		t.Fatal(err)
	}
	for key := range f.byKind {
		if key.kind == old {
			t.Errorf("field manager of the replaced kind (subresource %q) kept", key.subresource)
		}
	}
	if _, ok := f.crTypes[old]; ok || len(f.crTypes) != 1 {
		t.Errorf("type converters: replaced kind kept %v, %d kept, want 1", ok, len(f.crTypes))
	}
}
