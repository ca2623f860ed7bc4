package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/edgeapi/edgeapi/registry"
)

// TestCreateManagers_UpdateCreate: a create whose shape the field manager
// has seen gets the managedFields the field manager itself gives, time
// aside; objects it reads more of (managedFields, the last-applied
// annotation in the body) always go to the field manager.
func TestCreateManagers_UpdateCreate(t *testing.T) {
	gadgets, err := registry.CustomResourceKinds(gadgetCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	cronTab := testCRKind(t)
	tests := []struct {
		name string
		kind *registry.Kind
		body string
		// seen: an earlier case has the same shape; cached: the shape is
		// cached after the first create.
		seen, cached bool
	}{
		{"bench body", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default"},"spec":{"notes":"xx","field00":"a","field01":8080,"field02":["a","b"],"field03":{"enabled":true,"mode":"auto","limit":3}}}`, false, true},
		{"same shape, other values", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"bb","namespace":"default"},"spec":{"notes":"","field00":"zz","field01":1,"field02":["a","b"],"field03":{"enabled":false,"mode":"off","limit":9}}}`, true, true},
		{"other list", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default"},"spec":{"field02":["c"]}}`, false, true},
		{"metadata and status", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default","labels":{"app":"x","tier":"y"},"annotations":{"a.example.com/b":"c"},"finalizers":["example.com/f"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u1","controller":true}]},"spec":{},"status":{"phase":"x","n":[1,2]}}`, false, true},
		{"wrong type", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default"},"spec":{"field01":"x"}}`, false, true},
		{"float", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default"},"spec":{"field01":1.5}}`, false, true},
		{"null", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default"},"spec":{"field00":null}}`, false, true},
		{"other kind", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gizmo","metadata":{"name":"a","namespace":"default"},"spec":{}}`, false, true},
		{"map list and set", cronTab, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","namespace":"default"},"spec":{"image":"i","ports":[{"name":"a","port":1},{"name":"b"}]}}`, false, true},
		{"map list, other keys", cronTab, `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"a","namespace":"default"},"spec":{"image":"i","ports":[{"name":"c","port":1},{"name":"b"}]}}`, false, true},
		{"managedFields in the body", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default","managedFields":[{"manager":"x","operation":"Update","apiVersion":"bench.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{}}`, false, false},
		{"last-applied annotation", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","metadata":{"name":"a","namespace":"default","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":{}}`, false, false},
		{"no metadata", gadgets[0], `{"apiVersion":"bench.example.com/v1","kind":"Gadget","spec":{"field00":"a"}}`, false, true},
	}
	fms := newFieldManagers(nil, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm, err := fms.get(tt.kind, "")
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]interface{}
			if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(tt.body), &m); err != nil {
				t.Fatal(err)
			}
			live := tt.kind.New()
			want := fm.UpdateNoErrors(live, &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}, "m").(*unstructured.Unstructured)
			for i, wantCached := range []bool{tt.seen, tt.cached} {
				fms.creates.mu.Lock()
				_, cached := fms.creates.entries[createManagedKey{fm, shapeOf(t, m)}]
				fms.creates.mu.Unlock()
				if cached != wantCached {
					t.Errorf("create %d: shape cached before it = %v, want %v", i+1, cached, wantCached)
				}
				got := fms.creates.updateCreate(fm, tt.kind.New(), &unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)}, "m").(*unstructured.Unstructured)
				if g, w := withoutTimes(got.Object), withoutTimes(want.Object); !reflect.DeepEqual(g, w) {
					t.Errorf("create %d:\n%v\nwant the field manager's\n%v", i+1, g, w)
				}
			}
		})
	}
}

func shapeOf(t *testing.T, m map[string]interface{}) string {
	key, _ := createShape(nil, &unstructured.Unstructured{Object: m}, "m")
	return string(key)
}

// withoutTimes returns a copy of obj with its managedFields times blanked,
// checking that each is set.
func withoutTimes(obj map[string]interface{}) map[string]interface{} {
	obj = runtime.DeepCopyJSON(obj)
	mf, _, _ := unstructured.NestedSlice(obj, "metadata", "managedFields")
	for _, e := range mf {
		m := e.(map[string]interface{})
		if _, ok := m["time"].(string); ok {
			m["time"] = "T"
		}
	}
	if mf != nil {
		_ = unstructured.SetNestedSlice(obj, mf, "metadata", "managedFields")
	}
	return obj
}

// TestCreateManagers_Bound: the cache stays within createManagedMaxBytes
// however many shapes it sees.
func TestCreateManagers_Bound(t *testing.T) {
	gadgets, err := registry.CustomResourceKinds(gadgetCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	k := gadgets[0]
	fms := newFieldManagers(nil, 0)
	fm, err := fms.get(k, "")
	if err != nil {
		t.Fatal(err)
	}
	list := make([]interface{}, 300)
	for i := 0; i < 1500; i++ {
		for j := range list {
			list[j] = fmt.Sprintf("v%d-%d", i, j)
		}
		obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "bench.example.com/v1", "kind": "Gadget",
			"metadata": map[string]interface{}{"name": "a"}, "spec": map[string]interface{}{"field02": runtime.DeepCopyJSONValue(list)}}}
		fms.creates.updateCreate(fm, k.New(), obj, "m")
		if fms.creates.bytes > createManagedMaxBytes {
			t.Fatalf("after %d shapes the cache counts %d bytes, over %d", i+1, fms.creates.bytes, createManagedMaxBytes)
		}
	}
	if n := len(fms.creates.entries); n == 0 || n >= 1500 {
		t.Errorf("%d entries after 1500 shapes of about 6 KB: the cache was not emptied when full", n)
	}
}

// TestCreateManagers_UpdateCreateTyped: a create of a built-in kind whose
// shape the field manager has seen gets the managedFields the field
// manager itself gives, time aside, for objects of that shape with other
// values; an object with managedFields or the last-applied annotation in
// the body always goes to the field manager.
func TestCreateManagers_UpdateCreateTyped(t *testing.T) {
	reg := registry.Builtin()
	kind := func(group, version, resource string) *registry.Kind {
		k := reg.Lookup(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
		if k == nil {
			t.Fatalf("no kind %s/%s %s", group, version, resource)
		}
		return k
	}
	configMaps, secrets, services := kind("", "v1", "configmaps"), kind("", "v1", "secrets"), kind("", "v1", "services")
	roles, leases, events := kind("rbac.authorization.k8s.io", "v1", "roles"), kind("coordination.k8s.io", "v1", "leases"), kind("", "v1", "events")
	tests := []struct {
		name string
		kind *registry.Kind
		// bodies are created in turn; added tells for each whether its
		// create adds an entry to the cache (false: a hit, or a body the
		// cache does not take).
		bodies []string
		added  []bool
	}{
		{"configmap, same shape", configMaps, []string{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"k":"x"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bbb","namespace":"other"},"data":{"k":"yyyyyy"}}`,
		}, []bool{true, false}},
		{"configmap, other keys", configMaps, []string{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"j":"x"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","labels":{"app":"x"}},"data":{"j":"x"},"binaryData":{"b":"AAE="},"immutable":true}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","labels":{"app":"y"}},"data":{"j":"z"},"binaryData":{"b":"AAAA"},"immutable":false}`,
		}, []bool{true, true, false}},
		{"configmap, empty data", configMaps, []string{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`,
		}, []bool{true, false}},
		{"secret", secrets, []string{
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a","namespace":"default"},"type":"Opaque","data":{"k":"AAE="},"stringData":{"s":"x"}}`,
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"b","namespace":"default"},"type":"kubernetes.io/tls","data":{"k":"AAEC"},"stringData":{"s":"yy"}}`,
		}, []bool{true, false}},
		{"service ports", services, []string{
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"default"},"spec":{"ports":[{"port":80,"protocol":"TCP"}],"selector":{"app":"a"}}}`,
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"default"},"spec":{"ports":[{"port":81,"protocol":"TCP"}],"selector":{"app":"b"}}}`,
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"b","namespace":"default"},"spec":{"ports":[{"port":81,"protocol":"TCP"}],"selector":{"app":"c"}}}`,
		}, []bool{true, true, false}},
		{"role rules", roles, []string{
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"a","namespace":"default"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"b","namespace":"default"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`,
		}, []bool{true, false}},
		{"lease times", leases, []string{
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"a","namespace":"default"},"spec":{"holderIdentity":"x","leaseDurationSeconds":15,"renewTime":"2024-01-01T00:00:00.000000Z"}}`,
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"b","namespace":"default"},"spec":{"holderIdentity":"yy","leaseDurationSeconds":30,"renewTime":"2025-02-01T00:00:00.123456Z"}}`,
		}, []bool{true, false}},
		{"event", events, []string{
			`{"apiVersion":"v1","kind":"Event","metadata":{"name":"a","namespace":"default"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"R","count":1,"firstTimestamp":"2024-01-01T00:00:00Z"}`,
			`{"apiVersion":"v1","kind":"Event","metadata":{"name":"b","namespace":"default"},"involvedObject":{"kind":"Node","name":"q"},"reason":"S","count":7,"firstTimestamp":"2025-01-01T00:00:00Z"}`,
		}, []bool{true, false}},
		{"managedFields in the body", configMaps, []string{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","managedFields":[{"manager":"x","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},"data":{"q":"x"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","managedFields":[{"manager":"x","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]},"data":{"q":"x"}}`,
		}, []bool{false, false}},
		{"last-applied annotation", configMaps, []string{
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"r":"x"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"r":"x"}}`,
		}, []bool{false, false}},
	}
	fms := newFieldManagers(nil, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm, err := fms.get(tt.kind, "")
			if err != nil {
				t.Fatal(err)
			}
			for i, body := range tt.bodies {
				decode := func() runtime.Object {
					obj := tt.kind.New()
					if err := json.Unmarshal([]byte(body), obj); err != nil {
						t.Fatal(err)
					}
					return obj
				}
				newLive := func() runtime.Object {
					live := tt.kind.New()
					live.GetObjectKind().SetGroupVersionKind(tt.kind.GVK)
					return live
				}
				want := fm.UpdateNoErrors(newLive(), decode(), "m")
				before := len(fms.creates.entries)
				got := fms.creates.updateCreate(fm, newLive(), decode(), "m")
				if added := len(fms.creates.entries) > before; added != tt.added[i] {
					t.Errorf("body %d: added to the cache = %v, want %v", i+1, added, tt.added[i])
				}
				gotJS, wantJS := typedWithoutTimes(t, got), typedWithoutTimes(t, want)
				if gotJS != wantJS {
					t.Errorf("body %d:\n%s\nwant the field manager's\n%s", i+1, gotJS, wantJS)
				}
			}
		})
	}
}

// typedWithoutTimes returns obj's JSON with its managedFields times
// replaced by "T", checking that each is set.
func typedWithoutTimes(t *testing.T, obj runtime.Object) string {
	t.Helper()
	m := registry.Accessor(obj)
	mf := m.GetManagedFields()
	for i := range mf {
		if mf[i].Time == nil {
			t.Errorf("managedFields entry %d has no time", i)
		}
	}
	js, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]interface{}
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(withoutTimes(v))
}

// TestTypedCreateShape: scalars in objects count by their JSON type,
// arrays and the top-level apiVersion and kind whole, keys always.
func TestTypedCreateShape(t *testing.T) {
	shape := func(js string) string {
		t.Helper()
		key, ok := typedCreateShape(nil, []byte(js), "m")
		if !ok {
			t.Fatalf("typedCreateShape(%s) not ok", js)
		}
		return string(key)
	}
	base := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":null,"l":[1,"a"]}`
	for _, tt := range []struct {
		js   string
		same bool
	}{
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bbb","labels":{"x":"2"}},"data":{"k":"w\"}"},"n":-2.5e3,"b":false,"z":null,"l":[1,"a"]}`, true},
		{`{"kind":"Other","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":null,"l":[1,"a"]}`, false},
		{`{"kind":"ConfigMap","apiVersion":"v2","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":null,"l":[1,"a"]}`, false},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"y":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":null,"l":[1,"a"]}`, false},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":"1","b":true,"z":null,"l":[1,"a"]}`, false},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":{},"l":[1,"a"]}`, false},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":null,"l":[2,"a"]}`, false},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"},"n":1,"b":true,"z":null}`, false},
	} {
		if got := shape(tt.js) == shape(base); got != tt.same {
			t.Errorf("shape of %s equals that of %s: %v, want %v", tt.js, base, got, tt.same)
		}
	}
	if _, ok := typedCreateShape(nil, []byte(`{"l":[`+strings.Repeat(`"x",`, createShapeMaxBytes)+`"x"]}`), "m"); ok {
		t.Errorf("a shape over %d bytes was kept", createShapeMaxBytes)
	}
}
