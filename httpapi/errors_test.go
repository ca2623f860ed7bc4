package httpapi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestNewInvalid_MatchesApimachinery checks that newInvalid builds exactly
// the Status apierrors.NewInvalid builds: causes, message, brackets and the
// dropping of repeated messages.
func TestNewInvalid_MatchesApimachinery(t *testing.T) {
	gk := schema.GroupKind{Kind: "ConfigMap"}
	fin := field.NewPath("metadata", "finalizers")
	many := field.ErrorList{}
	for i := 0; i < 50; i++ {
		many = append(many, field.Invalid(fin.Index(i), fmt.Sprintf("f%d", i%7), "bad"))
	}
	tests := []struct {
		name string
		errs field.ErrorList
	}{
		{name: "none", errs: nil},
		{name: "one", errs: field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")}},
		{name: "two", errs: field.ErrorList{field.Invalid(fin.Index(0), "a", "x"), field.Invalid(fin.Index(1), "b", "y")}},
		{name: "same message twice", errs: field.ErrorList{field.Invalid(fin, "a", "x"), field.Invalid(fin, "a", "x")}},
		{name: "many with repeats", errs: many},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newInvalid(gk, "cm", tt.errs).ErrStatus
			want := apierrors.NewInvalid(gk, "cm", tt.errs).ErrStatus
			if !reflect.DeepEqual(got, want) {
				t.Errorf("newInvalid:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestNewInvalid_Bounded checks that past maxInvalidCauses errors the
// Status lists the first ones and counts the rest.
func TestNewInvalid_Bounded(t *testing.T) {
	gk := schema.GroupKind{Kind: "ConfigMap"}
	var errs field.ErrorList
	for i := 0; i < maxInvalidCauses+250; i++ {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "finalizers").Index(i), "a", "bad"))
	}
	st := newInvalid(gk, "cm", errs).ErrStatus
	if got, want := len(st.Details.Causes), maxInvalidCauses+1; got != want {
		t.Fatalf("causes: got %d, want %d", got, want)
	}
	if got, want := st.Details.Causes[maxInvalidCauses].Message, "and 250 more errors"; got != want {
		t.Errorf("last cause: got %q, want %q", got, want)
	}
	wantPrefix := `ConfigMap "cm" is invalid: [metadata.finalizers[0]: Invalid value: "a": bad, `
	wantSuffix := `metadata.finalizers[99]: Invalid value: "a": bad, and 250 more errors]`
	if got := st.Message; !strings.HasPrefix(got, wantPrefix) || !strings.HasSuffix(got, wantSuffix) {
		t.Errorf("message: got %q, want %q...%q", got, wantPrefix, wantSuffix)
	}
	if st.Code != 422 || st.Reason != "Invalid" {
		t.Errorf("got %d %s, want 422 Invalid", st.Code, st.Reason)
	}
}
