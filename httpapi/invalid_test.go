package httpapi

import (
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestNewInvalid_SameAsApimachinery checks that the linear newInvalid
// answers exactly what apierrors.NewInvalid answers.
func TestNewInvalid_SameAsApimachinery(t *testing.T) {
	p := field.NewPath("metadata", "finalizers")
	gk := schema.GroupKind{Kind: "ConfigMap"}
	tests := []struct {
		name string
		errs field.ErrorList
	}{
		{"none", nil},
		{"one", field.ErrorList{field.Invalid(p.Index(0), "f", "bad")}},
		{"two", field.ErrorList{field.Invalid(p.Index(0), "f", "bad"), field.Required(field.NewPath("metadata", "name"), "")}},
		{"duplicates", field.ErrorList{field.Invalid(p, "f", "bad"), field.Invalid(p, "f", "bad")}},
		{"duplicates and one more", field.ErrorList{field.Invalid(p, "f", "bad"), field.Invalid(p, "f", "bad"), field.Invalid(p, []string{"a", "b"}, "worse")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newInvalid(gk, "cm", tt.errs).ErrStatus
			want := apierrors.NewInvalid(gk, "cm", tt.errs).ErrStatus
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %#v\nwant %#v", got, want)
			}
		})
	}
}

// TestNewInvalid_Bounded checks that an Invalid answer lists at most
// maxInvalidErrors errors and counts the rest.
func TestNewInvalid_Bounded(t *testing.T) {
	p := field.NewPath("metadata", "finalizers")
	errs := make(field.ErrorList, 0, maxInvalidErrors+5)
	for i := 0; i < maxInvalidErrors+5; i++ {
		errs = append(errs, field.Invalid(p.Index(i), "f", "bad"))
	}
	st := newInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", errs).ErrStatus
	if got, want := len(st.Details.Causes), maxInvalidErrors; got != want {
		t.Errorf("got %d causes, want %d", got, want)
	}
	if got, want := st.Message[len(st.Message)-len(", and 5 more errors]"):], ", and 5 more errors]"; got != want {
		t.Errorf("got message ending %q, want %q", got, want)
	}
}
