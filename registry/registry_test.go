package registry

import (
	"testing"

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
