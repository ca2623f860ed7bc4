package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

func TestCRDController_NamesAndConditions(t *testing.T) {
	names := func(plural, kind string, short ...string) apiextensionsv1.CustomResourceDefinitionNames {
		return apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List", ShortNames: short}
	}
	crd := func(name, group string, spec, accepted apiextensionsv1.CustomResourceDefinitionNames, conds ...apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Names: spec},
			Status:     apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: accepted, Conditions: conds},
		}
	}
	none := apiextensionsv1.CustomResourceDefinitionNames{}
	established := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	other := crd("widgets.example.com", "example.com", names("widgets", "Widget", "wd", "w"), names("widgets", "Widget", "wd", "w"))

	tests := []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		others     []*apiextensionsv1.CustomResourceDefinition
		wantNames  apiextensionsv1.CustomResourceDefinitionNames
		wantReason string
		wantMsg    string
		wantEst    string // Established reason
	}{
		{"fresh", crd("gadgets.example.com", "example.com", names("gadgets", "Gadget", "gd"), none), []*apiextensionsv1.CustomResourceDefinition{other},
			names("gadgets", "Gadget", "gd"), "NoConflicts", "no conflicts found", "Installing"},
		{"plural taken", crd("widgets.example.com", "example.com", names("widgets", "Gadget"), none), []*apiextensionsv1.CustomResourceDefinition{other},
			apiextensionsv1.CustomResourceDefinitionNames{Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"}, "PluralConflict", `"widgets" is already in use`, "NotAccepted"},
		{"kind taken", crd("gizmos.example.com", "example.com", names("gizmos", "Widget"), none), []*apiextensionsv1.CustomResourceDefinition{other},
			apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos"}, "ListKindConflict", `"WidgetList" is already in use`, "NotAccepted"},
		{"two short names taken", crd("gizmos.example.com", "example.com", names("gizmos", "Gizmo", "wd", "w", "gz"), none), []*apiextensionsv1.CustomResourceDefinition{other},
			apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"}, "ShortNamesConflict", `["wd" is already in use, "w" is already in use]`, "NotAccepted"},
		{"other group", crd("widgets.other.io", "other.io", names("widgets", "Widget", "wd"), none), []*apiextensionsv1.CustomResourceDefinition{other},
			names("widgets", "Widget", "wd"), "NoConflicts", "no conflicts found", "Installing"},
		{"a built-in kind of the group", crd("leases.coordination.k8s.io", "coordination.k8s.io", names("leases", "Lease"), none), nil,
			apiextensionsv1.CustomResourceDefinitionNames{}, "ListKindConflict", `"LeaseList" is already in use`, "NotAccepted"},
		{"new short name that is its own plural", crd("gadgets.example.com", "example.com", names("gadgets", "Gadget", "gadgets"), names("gadgets", "Gadget"), established), nil,
			names("gadgets", "Gadget", "gadgets"), "NoConflicts", "no conflicts found", "InitialNamesAccepted"},
		{"established keeps its names on a conflicting change", crd("gadgets.example.com", "example.com", names("gadgets", "Gadget", "w"), names("gadgets", "Gadget"), established), []*apiextensionsv1.CustomResourceDefinition{other},
			names("gadgets", "Gadget"), "ShortNamesConflict", `"w" is already in use`, "InitialNamesAccepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &crdController{m: New(Config{Registry: registry.Builtin()}), served: map[string]*servedCRD{}}
			all := []*crdState{{crd: tt.crd}}
			for _, o := range tt.others {
				all = append(all, &crdState{crd: o})
			}
			r := &crdRound{c: c, all: all}
			gotNames, cond, est := namesAndConditions(tt.crd, r.groupNames(tt.crd.Spec.Group))
			if gotNames.Plural != tt.wantNames.Plural || gotNames.Singular != tt.wantNames.Singular || gotNames.Kind != tt.wantNames.Kind || gotNames.ListKind != tt.wantNames.ListKind ||
				len(gotNames.ShortNames) != len(tt.wantNames.ShortNames) {
				t.Errorf("names = %+v, want %+v", gotNames, tt.wantNames)
			}
			if cond.Reason != tt.wantReason || cond.Message != tt.wantMsg {
				t.Errorf("NamesAccepted = %s %q, want %s %q", cond.Reason, cond.Message, tt.wantReason, tt.wantMsg)
			}
			if est.Reason != tt.wantEst {
				t.Errorf("Established reason = %s, want %s", est.Reason, tt.wantEst)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "A"})
	first := crd.Status.Conditions[0].LastTransitionTime
	if first.IsZero() {
		t.Fatal("new condition has no lastTransitionTime")
	}
	crd.Status.Conditions[0].LastTransitionTime.Time = first.Add(-3600e9)
	setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "B"})
	if got := crd.Status.Conditions[0]; got.Reason != "B" || !got.LastTransitionTime.Equal(&metav1.Time{Time: first.Add(-3600e9)}) {
		t.Errorf("same status: got %+v, want reason B and the old lastTransitionTime", got)
	}
	setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse, Reason: "C"})
	if got := crd.Status.Conditions[0]; got.Status != apiextensionsv1.ConditionFalse || got.LastTransitionTime.Time.Before(first.Time) {
		t.Errorf("status change: got %+v, want False with a new lastTransitionTime", got)
	}
	if len(crd.Status.Conditions) != 1 {
		t.Errorf("got %d conditions, want 1", len(crd.Status.Conditions))
	}
}

// storeObjects is Objects over a store for the CRD controller's tests:
// UpdateObject stores what fn makes of the stored object. It counts the
// status writes of each CRD and records whether the registry served the
// CRD's kind when a write set Established.
type storeObjects struct {
	db  *store.DB
	reg *registry.Registry

	mu                  sync.Mutex
	writes              map[string]int
	unservedEstablished []string
}

func (o *storeObjects) CreateObject(context.Context, *registry.Kind, runtime.Object, string) error {
	return errors.New("not supported")
}

func (o *storeObjects) DeleteObject(context.Context, *registry.Kind, string, string, *metav1.DeleteOptions) (bool, error) {
	return false, errors.New("not supported")
}

func (o *storeObjects) UpdateObject(ctx context.Context, k *registry.Kind, namespace, name, subresource, manager string, fn func(runtime.Object) (runtime.Object, error)) (bool, error) {
	_, err := o.db.GuaranteedUpdate(ctx, store.Key{Resource: k.StorageResource, Namespace: namespace, Name: name}, func(cur store.Object) ([]byte, error) {
		old, err := k.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		obj, err := fn(old)
		if err != nil {
			return nil, err
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		o.writes[name]++
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Status.AcceptedNames.Plural}
		if isConditionTrue(crd, apiextensionsv1.Established) && o.reg.Lookup(gvr) == nil {
			o.unservedEstablished = append(o.unservedEstablished, name)
		}
		return k.EncodeStorage(obj)
	})
	return false, err
}

// TestCRDController_EstablishesInOneWrite: a new CRD whose names are free
// gets acceptedNames, NamesAccepted and Established in one status write,
// made once its kind is served; one whose kind is taken gets
// NamesAccepted False in one write and is neither served nor
// established.
func TestCRDController_EstablishesInOneWrite(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "test.db"), UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := registry.Builtin()
	objs := &storeObjects{db: db, reg: reg, writes: map[string]int{}}
	m := New(Config{Store: db, Registry: reg, Objects: objs, CustomResourceKinds: registry.CustomResourceKinds})
	m.leadCtx = ctx // this replica writes the statuses
	defer db.Subscribe(m.observe)()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.runCRDController(ctx)
	}()
	defer func() { cancel(); <-done }()

	k := reg.Lookup(CRDResource)
	create := func(plural, kind string) {
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com", UID: types.UID("uid-" + plural)},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
			},
		}
		registry.Scheme.Default(crd)
		k.Strategy.PrepareForCreate(crd)
		value, err := k.EncodeStorage(crd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Create(ctx, store.Key{Resource: k.StorageResource, Name: crd.Name}, string(crd.UID), value); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		create(fmt.Sprintf("widgets%d", i), fmt.Sprintf("Widget%d", i))
	}
	create("gadgets", "Widget0") // the kind of widgets0, created first

	get := func(name string) *apiextensionsv1.CustomResourceDefinition {
		o, err := db.Get(ctx, store.Key{Resource: k.StorageResource, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := k.DecodeStored(o.Value)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*apiextensionsv1.CustomResourceDefinition)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 10; {
		if crd := get(fmt.Sprintf("widgets%d.example.com", i)); isConditionTrue(crd, apiextensionsv1.Established) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("widgets%d not established after 30 s", i)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for time.Now().Before(deadline) && findCondition(get("gadgets.example.com"), apiextensionsv1.NamesAccepted) == nil {
		time.Sleep(10 * time.Millisecond)
	}

	objs.mu.Lock()
	defer objs.mu.Unlock()
	for i := range 10 {
		name := fmt.Sprintf("widgets%d.example.com", i)
		if n := objs.writes[name]; n != 1 {
			t.Errorf("%s: %d status writes, want 1", name, n)
		}
		crd := get(name)
		for _, want := range []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
		} {
			if got := findCondition(crd, want.Type); !sameCondition(got, &want) {
				t.Errorf("%s: %s = %+v, want %+v", name, want.Type, got, want)
			}
		}
		if got := crd.Status.AcceptedNames; got.Plural != crd.Spec.Names.Plural || got.Kind != crd.Spec.Names.Kind || got.ListKind != crd.Spec.Names.Kind+"List" {
			t.Errorf("%s: acceptedNames %+v, want the spec's", name, got)
		}
	}
	if len(objs.unservedEstablished) > 0 {
		t.Errorf("Established written before the kind was served: %v", objs.unservedEstablished)
	}
	gadgets := get("gadgets.example.com")
	if n := objs.writes[gadgets.Name]; n != 1 {
		t.Errorf("gadgets: %d status writes, want 1", n)
	}
	want := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "ListKindConflict", Message: `"Widget0List" is already in use`}
	if got := findCondition(gadgets, apiextensionsv1.NamesAccepted); !sameCondition(got, &want) {
		t.Errorf("gadgets: NamesAccepted = %+v, want %+v", got, want)
	}
	if isConditionTrue(gadgets, apiextensionsv1.Established) || reg.Lookup(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}) != nil {
		t.Error("gadgets is established or served")
	}
}

// TestDecodeHead: the loop's decoding of a stored CRD keeps what the loop
// uses, as head keeps it of a decoded one, and leaves the rest out.
func TestDecodeHead(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", UID: "u1", Generation: 3, DeletionTimestamp: &deleted,
			Finalizers: []string{registry.CRDCleanupFinalizer}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ShortNames: []string{"wd"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			AcceptedNames:  apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Conditions:     []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: deleted}},
			StoredVersions: []string{"v1"},
		},
	}
	value, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeHead(store.Object{Key: store.Key{Name: crd.Name}, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	want := head(crd)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("decodeHead:\n got %+v\nwant %+v", got, want)
	}
	if want.Name != crd.Name || want.UID != crd.UID || want.Generation != 3 || want.DeletionTimestamp == nil || len(want.Finalizers) != 1 ||
		want.Spec.Group != "example.com" || want.Spec.Scope != apiextensionsv1.ClusterScoped || want.Spec.Names.ShortNames[0] != "wd" ||
		!equality.Semantic.DeepEqual(want.Status, crd.Status) {
		t.Errorf("head lost what the loop uses: %+v", want)
	}
	if want.Annotations != nil || want.ManagedFields != nil || want.Spec.Versions != nil {
		t.Errorf("head kept annotations, managedFields or versions: %+v", want)
	}
}

// TestCRDController_FollowerServesOnly: on a replica that does not lead,
// a round writes no status: a new CRD stays unserved until its stored
// status (the leader's write) says its names are accepted, and is served
// then; once this replica leads, a round writes the status itself.
func TestCRDController_FollowerServesOnly(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(t.TempDir(), "test.db"), UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := registry.Builtin()
	objs := &storeObjects{db: db, reg: reg, writes: map[string]int{}}
	m := New(Config{Store: db, Registry: reg, Objects: objs, CustomResourceKinds: registry.CustomResourceKinds})
	defer db.Subscribe(m.observe)()
	k := reg.Lookup(CRDResource)
	c := &crdController{m: m, kind: k, served: map[string]*servedCRD{}, crds: map[string]*crdState{}}

	create := func(plural string) *apiextensionsv1.CustomResourceDefinition {
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com", UID: types.UID("uid-" + plural)},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: "K" + plural},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
			},
		}
		registry.Scheme.Default(crd)
		k.Strategy.PrepareForCreate(crd)
		value, err := k.EncodeStorage(crd)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Create(ctx, store.Key{Resource: k.StorageResource, Name: crd.Name}, string(crd.UID), value); err != nil {
			t.Fatal(err)
		}
		return crd
	}
	served := func(plural string) bool {
		return reg.Lookup(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: plural}) != nil
	}
	writes := func() int {
		objs.mu.Lock()
		defer objs.mu.Unlock()
		n := 0
		for _, w := range objs.writes {
			n += w
		}
		return n
	}

	widgets := create("widgets")
	if _, err := c.sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := writes(); got != 0 || served("widgets") {
		t.Fatalf("follower round on a new CRD: %d status writes, served %v; want 0, false", got, served("widgets"))
	}
	if !m.CRDsServed() {
		t.Error("CRDsServed false after a follower's round")
	}

	// The leader's status write arrives.
	widgets.Status.AcceptedNames = widgets.Spec.Names
	setCondition(widgets, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"})
	setCondition(widgets, establishedCondition(widgets))
	value, err := k.EncodeStorage(widgets)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Update(ctx, store.Key{Resource: k.StorageResource, Name: widgets.Name}, store.Preconditions{}, value); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := writes(); got != 0 || !served("widgets") {
		t.Fatalf("follower round after the leader's status write: %d status writes, served %v; want 0, true", got, served("widgets"))
	}

	// Leading, a round writes a new CRD's status.
	create("gadgets")
	if _, err := c.sync(ctx, ctx); err != nil {
		t.Fatal(err)
	}
	if got := writes(); got != 1 || !served("gadgets") {
		t.Fatalf("leader round on a new CRD: %d status writes, served %v; want 1, true", got, served("gadgets"))
	}
}
