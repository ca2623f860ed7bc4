package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
)

// updateStep is one update of a sequence: manager sends body; with
// liveManaged the body carries the live object's managedFields, as a
// patched object does.
type updateStep struct {
	manager     string
	body        string
	liveManaged bool
}

// TestUpdateManagers_Update: a sequence of updates by several managers
// (taking fields from others, removing and adding fields, no-op updates,
// a body with the live managedFields, one resetting them, the status
// subresource) gives, replayed with the cache, objects byte for byte the
// field manager's own, and the replays take the cache.
func TestUpdateManagers_Update(t *testing.T) {
	reg := registry.Builtin()
	configMaps := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	services := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "services"})
	cmLive := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default","uid":"u1","resourceVersion":"5","creationTimestamp":"2020-01-01T00:00:00Z","managedFields":[` +
		`{"manager":"a","operation":"Update","apiVersion":"v1","time":"2020-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:x":{},"f:y":{}}}},` +
		`{"manager":"b","operation":"Update","apiVersion":"v1","time":"2021-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:z":{}}}},` +
		`{"manager":"s","operation":"Apply","apiVersion":"v1","time":"2019-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:l":{}}}}}]},` +
		`"data":{"x":"1","y":"2","z":"3"}}`
	cm := func(meta, data string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"` + meta + `},"data":{` + data + `}}`
	}
	svcLive := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default","uid":"u2","resourceVersion":"7","creationTimestamp":"2020-01-01T00:00:00Z","managedFields":[` +
		`{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2020-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}}},"f:selector":{}}}}]},` +
		`"spec":{"ports":[{"port":80,"protocol":"TCP"}],"selector":{"app":"a"},"clusterIP":"10.0.0.1","type":"ClusterIP"}}`
	svc := func(port, app, status string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"default"},"spec":{"ports":[{"port":` + port +
			`,"protocol":"TCP"}],"selector":{"app":"` + app + `"},"clusterIP":"10.0.0.1","type":"ClusterIP"}` + status + `}`
	}
	tests := []struct {
		name        string
		kind        *registry.Kind
		subresource string
		live        string
		steps       []updateStep
	}{
		{"config map", configMaps, "", cmLive, []updateStep{
			{manager: "c", body: cm(``, `"x":"9","y":"2","z":"3"`)},
			{manager: "a", body: cm(`,"resourceVersion":"5"`, `"x":"9","y":"8","z":"3"`)},
			{manager: "b", body: cm(``, `"x":"9","y":"8","z":"3"`)},
			{manager: "c", body: cm(``, `"x":"9","y":"8"`)},
			{manager: "a", body: cm(`,"labels":{"l":"v","m":"w"}`, `"x":"9","y":"8","w":"1"`)},
			{manager: "b", body: cm(`,"labels":{"l":"v","m":"w"}`, `"x":"7","y":"8","w":"1"`), liveManaged: true},
			{manager: "b", body: cm(`,"labels":{"l":"v","m":"w"}`, `"x":"7","y":"8","w":"1"`), liveManaged: true},
			{manager: "c", body: cm(``, `"x":"6"`)},
			{manager: "c", body: cm(``, `"x":"5"`)},
			{manager: "c", body: cm(``, `"x":"5"`)},
			{manager: "b", body: cm(``, `"x":"5","y":"1"`)},
			{manager: "e", body: cm(`,"managedFields":[]`, `"x":"7"`)},
		}},
		{"service", services, "", svcLive, []updateStep{
			{manager: "kubectl", body: svc("81", "a", "")},
			{manager: "other", body: svc("81", "b", "")},
			{manager: "kubectl", body: svc("81", "c", "")},
			{manager: "kubectl", body: svc("81", "c", "")},
		}},
		{"service status", services, "status", svcLive, []updateStep{
			{manager: "controller", body: svc("80", "a", `,"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}`)},
			{manager: "controller", body: svc("80", "a", `,"status":{"conditions":[{"type":"T","status":"True","reason":"R","message":"m","lastTransitionTime":"2020-01-01T00:00:00Z"}],"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}`)},
			{manager: "other", body: svc("99", "z", `,"status":{"loadBalancer":{}}`)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fms := newFieldManagers(nil, 0)
			fm, err := fms.get(tt.kind, tt.subresource)
			if err != nil {
				t.Fatal(err)
			}
			for round := range 3 {
				refLive := decodeStoredOrFatal(t, tt.kind, tt.live)
				live := decodeStoredOrFatal(t, tt.kind, tt.live)
				for i, step := range tt.steps {
					var want, got string
					for attempt := 0; ; attempt++ {
						start := time.Now().Unix()
						refObj := stepObject(t, tt.kind, step, refLive)
						obj := stepObject(t, tt.kind, step, live)
						want = stored(t, tt.kind, fm.UpdateNoErrors(refLive.DeepCopyObject(), refObj, step.manager))
						got = stored(t, tt.kind, fms.updates.update(fm, tt.kind.GVK, live.DeepCopyObject(), obj, step.manager))
						if time.Now().Unix() == start || attempt == 3 {
							break
						}
						// A second passed: the two may have different times.
					}
					if got != want {
						t.Fatalf("round %d, update %d by %s:\n%s\nwant the field manager's\n%s", round, i+1, step.manager, got, want)
					}
					refLive = asStored(decodeStoredOrFatal(t, tt.kind, want), refLive, round)
					live = asStored(decodeStoredOrFatal(t, tt.kind, got), live, round)
				}
			}
			fms.updates.mu.Lock()
			hits := fms.updates.hits
			fms.updates.mu.Unlock()
			if hits == 0 {
				t.Errorf("no update took the cache")
			}
			t.Logf("%d of %d updates took the cache", hits, 3*len(tt.steps))
		})
	}
}

// asStored is obj, the update of old, as the store keeps it: with old's
// uid, creation time and resourceVersion, and its managedFields entries
// given distinct times, in the past in their order in round 0, the other
// way round in round 1, in the future in round 2: an update that changes
// nothing then keeps a time that is not the current one, and the order of
// the entries differs between rounds.
func asStored(obj, old runtime.Object, round int) runtime.Object {
	m, om := registry.Accessor(obj), registry.Accessor(old)
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetResourceVersion(om.GetResourceVersion())
	entries := m.GetManagedFields()
	for i := range entries {
		at := time.Date(2022, 1, 1, 0, i, 0, 0, time.UTC)
		switch round {
		case 1:
			at = time.Date(2022, 1, 1, 0, len(entries)-i, 0, 0, time.UTC)
		case 2:
			at = time.Date(2099, 1, 1, 0, i, 0, 0, time.UTC)
		}
		entries[i].Time = &metav1.Time{Time: at}
	}
	m.SetManagedFields(entries)
	return obj
}

// TestUpdateManagers_Update_LeftToFieldManager: updates whose answer
// depends on more than the key are not cached, and still get the field
// manager's answer.
func TestUpdateManagers_Update_LeftToFieldManager(t *testing.T) {
	configMaps := registry.Builtin().Lookup(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	entry := func(apiVersion string) string {
		return `{"manager":"a","operation":"Update","apiVersion":"` + apiVersion + `","time":"2020-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:x":{}}}}`
	}
	live := func(uid, entries, annotations, x string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default","uid":"` + uid + `"` + annotations + `,"managedFields":[` + entries + `]},"data":{"x":` + x + `}}`
	}
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"x":"2"}}`
	many := strings.TrimSuffix(strings.Repeat(entry("v1")+",", 9), ",")
	for i := range 9 {
		many = strings.Replace(many, `"manager":"a"`, `"manager":"m`+string(rune('0'+i))+`"`, 1)
	}
	same := func(obj runtime.Object) runtime.Object { return obj }
	tests := []struct {
		name, live, body string
		// obj changes the decoded body.
		obj func(runtime.Object) runtime.Object
	}{
		{"other apiVersion", live("u", entry("v1beta1"), "", `"1"`), body, same},
		{"no uid", live("", entry("v1"), "", `"1"`), body, same},
		{"no managedFields", live("u", "", "", `"1"`), body, same},
		{"nine entries", live("u", many, "", `"1"`), body, same},
		{"last-applied annotation", live("u", entry("v1"), `,"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}`, `"1"`), body, same},
		{"other managedFields in the body", live("u", entry("v1"), "", `"1"`), strings.Replace(body, `"namespace":"default"`, `"namespace":"default","managedFields":[`+strings.Replace(entry("v1"), `"a"`, `"b"`, 1)+`]`, 1), same},
		{"body without kind", live("u", entry("v1"), "", `"1"`), body, func(obj runtime.Object) runtime.Object {
			obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			return obj
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fms := newFieldManagers(nil, 0)
			fm, err := fms.get(configMaps, "")
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				wantObj := tt.obj(decodeStoredOrFatal(t, configMaps, tt.body))
				want := stored(t, configMaps, fm.UpdateNoErrors(decodeStoredOrFatal(t, configMaps, tt.live), wantObj, "m"))
				if wantObj.GetObjectKind().GroupVersionKind() != configMaps.GVK {
					t.Errorf("the field manager left the kind %v", wantObj.GetObjectKind().GroupVersionKind())
				}
				got := stored(t, configMaps, fms.updates.update(fm, configMaps.GVK, decodeStoredOrFatal(t, configMaps, tt.live), tt.obj(decodeStoredOrFatal(t, configMaps, tt.body)), "m"))
				if withoutJSONTimes(got) != withoutJSONTimes(want) {
					t.Errorf("update %d:\n%s\nwant the field manager's\n%s", i+1, got, want)
				}
			}
			fms.updates.mu.Lock()
			defer fms.updates.mu.Unlock()
			if n := len(fms.updates.entries); n != 0 {
				t.Errorf("%d keys cached, want none", n)
			}
		})
	}
}

// withoutJSONTimes is js with the current year's times replaced.
func withoutJSONTimes(js string) string {
	year := time.Now().UTC().Format("2006")
	for {
		i := strings.Index(js, `"time":"`+year)
		if i < 0 {
			return js
		}
		js = js[:i] + `"time":"T"` + js[i+len(`"time":"2006-01-02T15:04:05Z"`):]
	}
}

// stepObject decodes step's body for kind, with live's managedFields if
// the step says so.
func stepObject(t *testing.T, kind *registry.Kind, step updateStep, live runtime.Object) runtime.Object {
	t.Helper()
	obj := decodeStoredOrFatal(t, kind, step.body)
	if step.liveManaged {
		registry.Accessor(obj).SetManagedFields(registry.Accessor(live.DeepCopyObject()).GetManagedFields())
	}
	return obj
}

func decodeStoredOrFatal(t *testing.T, kind *registry.Kind, body string) runtime.Object {
	t.Helper()
	obj, err := kind.DecodeStored([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// stored is obj as encoding/json writes it.
func stored(t *testing.T, kind *registry.Kind, obj runtime.Object) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpdateKey: the key tells apart what the field manager's answer
// depends on and leaves out what it does not.
func TestUpdateKey(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{{Manager: "a", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
		Time: &metav1.Time{Time: time.Unix(1, 0)}, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}}
	later := []metav1.ManagedFieldsEntry{*entries[0].DeepCopy()}
	later[0].Time = &metav1.Time{Time: time.Unix(100, 0)}
	other := []metav1.ManagedFieldsEntry{*entries[0].DeepCopy()}
	other[0].FieldsV1.Raw = []byte(`{"f:data":{"f:x":{}}}`)
	live := `{"metadata":{"name":"c","resourceVersion":"5","managedFields":[{"manager":"a"}]},"data":{"x":"1","y":"2"}}`
	key := func(live, obj string, entries []metav1.ManagedFieldsEntry, manager string) string {
		k, ok := updateKey(nil, []byte(live), []byte(obj), entries, manager)
		if !ok {
			t.Fatalf("updateKey(%s, %s) not taken", live, obj)
		}
		return string(k)
	}
	base := key(live, `{"metadata":{"name":"c"},"data":{"x":"3","y":"2"}}`, entries, "m")
	tests := []struct {
		name string
		key  string
		same bool
	}{
		{"other values changed the same", key(live, `{"metadata":{"name":"c"},"data":{"x":"4","y":"2"}}`, entries, "m"), true},
		{"other live entry times", key(live, `{"metadata":{"name":"c"},"data":{"x":"3","y":"2"}}`, later, "m"), true},
		{"other live values", key(strings.Replace(live, `"5"`, `"6"`, 1), `{"metadata":{"name":"c"},"data":{"x":"3","y":"2"}}`, entries, "m"), true},
		{"other live managedFields in the object", key(strings.Replace(live, `{"manager":"a"}`, `{"manager":"z"}`, 1), `{"metadata":{"name":"c"},"data":{"x":"3","y":"2"}}`, entries, "m"), true},
		{"other changed scalar", key(live, `{"metadata":{"name":"c"},"data":{"x":"1","y":"3"}}`, entries, "m"), false},
		{"nothing changed", key(live, `{"metadata":{"name":"c"},"data":{"x":"1","y":"2"}}`, entries, "m"), false},
		{"field removed", key(live, `{"metadata":{"name":"c"},"data":{"x":"3"}}`, entries, "m"), false},
		{"other type", key(live, `{"metadata":{"name":"c"},"data":{"x":3,"y":"2"}}`, entries, "m"), false},
		{"other manager", key(live, `{"metadata":{"name":"c"},"data":{"x":"3","y":"2"}}`, entries, "n"), false},
		{"other live fields", key(live, `{"metadata":{"name":"c"},"data":{"x":"3","y":"2"}}`, other, "m"), false},
		{"other list", key(live, `{"metadata":{"name":"c","finalizers":["f"]},"data":{"x":"3","y":"2"}}`, entries, "m"), false},
	}
	for _, tt := range tests {
		if got := tt.key == base; got != tt.same {
			t.Errorf("%s: same key = %v, want %v (%s vs %s)", tt.name, got, tt.same, tt.key, base)
		}
	}
	for _, obj := range []string{`{"data":{"x":1.5}}`, `{"data":{"x":1e3}}`, `{"data":{"x":-0}}`} {
		if _, ok := updateKey(nil, []byte(live), []byte(obj), entries, "m"); ok {
			t.Errorf("updateKey(%s) taken, want left to the field manager", obj)
		}
	}
}
