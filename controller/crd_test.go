package controller

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/registry"
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
