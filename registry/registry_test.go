package registry

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRegistry_Snapshot(t *testing.T) {
	r := Builtin()
	before := r.Snapshot()
	changed := r.Changed()
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	r.Add(&Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Resource: "widgets"})

	select {
	case <-changed:
	default:
		t.Fatal("Changed() channel not closed by Add")
	}
	if got := before.Lookup(gvr); got != nil {
		t.Errorf("snapshot taken before Add: Lookup(%v) = %v, want nil", gvr, got)
	}
	if before.HasGroup("example.com") {
		t.Error("snapshot taken before Add has the new group")
	}
	after := r.Snapshot()
	if got := after.Lookup(gvr); got == nil || got.GVK.Kind != "Widget" {
		t.Errorf("snapshot after Add: Lookup(%v) = %v, want Widget", gvr, got)
	}
	if got, want := len(after.Kinds()), len(before.Kinds())+1; got != want {
		t.Errorf("len(Kinds()) after Add = %d, want %d", got, want)
	}
	if after.Generation() <= before.Generation() {
		t.Errorf("Generation() after Add = %d, not above %d", after.Generation(), before.Generation())
	}

	r.Remove(gvr)
	if got := r.Snapshot().Lookup(gvr); got != nil {
		t.Errorf("after Remove: Lookup(%v) = %v, want nil", gvr, got)
	}
	if got := after.Lookup(gvr); got == nil {
		t.Error("snapshot taken before Remove lost the kind")
	}
	kinds := r.Snapshot().Kinds()
	for i := 1; i < len(kinds); i++ {
		a, b := kinds[i-1].GVK, kinds[i].GVK
		if a.Group > b.Group || (a.Group == b.Group && a.Version > b.Version) {
			t.Errorf("Kinds() not sorted: %v before %v", a, b)
		}
	}
}

// TestRegistry_Replace swaps kinds in one change.
func TestRegistry_Replace(t *testing.T) {
	r := Builtin()
	widget := func(v string) *Kind {
		return &Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: v, Kind: "Widget"}, Resource: "widgets"}
	}
	r.Replace(nil, []*Kind{widget("v1"), widget("v2")})
	before := r.Snapshot()
	v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	v2 := v1.GroupVersion().WithResource("widgets")
	v2.Version = "v2"
	r.Replace([]schema.GroupVersionResource{v1, v2}, []*Kind{widget("v3")})
	after := r.Snapshot()
	if got, want := after.Generation(), before.Generation()+1; got != want {
		t.Errorf("Generation() after one Replace = %d, want %d", got, want)
	}
	for _, tc := range []struct {
		version string
		want    bool
	}{{"v1", false}, {"v2", false}, {"v3", true}} {
		gvr := schema.GroupVersionResource{Group: "example.com", Version: tc.version, Resource: "widgets"}
		if got := after.Lookup(gvr) != nil; got != tc.want {
			t.Errorf("after Replace: Lookup(%v) found = %v, want %v", gvr, got, tc.want)
		}
		if got, want := before.Lookup(gvr) != nil, tc.version != "v3"; got != want {
			t.Errorf("snapshot before Replace: Lookup(%v) found = %v, want %v", gvr, got, want)
		}
	}
}

// TestSnapshot_Indexes checks the snapshot's lookups by group,
// group-version, kind and storage resource: a kind served in another
// version than its storage version never stands for its storage resource.
func TestSnapshot_Indexes(t *testing.T) {
	r := New()
	stored := &Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Resource: "widgets", StorageResource: "widgets.example.com"}
	converted := &Kind{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1beta1", Kind: "Widget"}, Resource: "widgets", StorageResource: "widgets.example.com",
		StorageGVK: stored.GVK, FromStorage: func(obj runtime.Object) (runtime.Object, error) { return obj, nil }}
	other := &Kind{GVK: schema.GroupVersionKind{Group: "", Version: "v1", Kind: "ConfigMap"}, Resource: "configmaps", StorageResource: "configmaps"}
	r.Replace(nil, []*Kind{converted, stored, other})
	s := r.Snapshot()
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"HasGroup example.com", s.HasGroup("example.com"), true},
		{"HasGroup core", s.HasGroup(""), true},
		{"HasGroup other.com", s.HasGroup("other.com"), false},
		{"HasGroupVersion example.com/v1beta1", s.HasGroupVersion(schema.GroupVersion{Group: "example.com", Version: "v1beta1"}), true},
		{"HasGroupVersion example.com/v2", s.HasGroupVersion(schema.GroupVersion{Group: "example.com", Version: "v2"}), false},
		{"ByGVK v1beta1 Widget", s.ByGVK(converted.GVK) == converted, true},
		{"ByGVK v1 Gadget", s.ByGVK(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}) == nil, true},
		{"ByStorage widgets", s.ByStorage()["widgets.example.com"] == stored, true},
		{"ByStorage configmaps", s.ByStorage()["configmaps"] == other, true},
		{"ByStorage size", len(s.ByStorage()) == 2, true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	r.Remove(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	if got := r.Snapshot().ByStorage()["widgets.example.com"]; got != nil {
		t.Errorf("ByStorage after the storage version's kind went = %v, want nil (v1beta1 is served from another version)", got.GVK)
	}
	if !s.HasGroupVersion(schema.GroupVersion{Group: "example.com", Version: "v1"}) {
		t.Error("the snapshot taken before Remove lost example.com/v1")
	}
}
