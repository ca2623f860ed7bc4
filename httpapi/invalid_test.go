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

// TestNewInvalid_BoundedBytes checks that errors whose values are large
// are listed only up to maxInvalidBytes of text, the first always.
func TestNewInvalid_BoundedBytes(t *testing.T) {
	p := field.NewPath("metadata", "labels")
	big := strings.Repeat("v", 100<<10)
	errs := make(field.ErrorList, 0, 100)
	for i := 0; i < 100; i++ {
		errs = append(errs, field.Invalid(p.Key(fmt.Sprint(i)), big, "bad"))
	}
	st := newInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", errs).ErrStatus
	n := len(st.Details.Causes)
	if n == 0 || n >= 10 {
		t.Errorf("got %d causes of 100 KiB values, want between 1 and 9 (1 MiB of text)", n)
	}
	if want := fmt.Sprintf(", and %d more errors]", 100-n); !strings.HasSuffix(st.Message, want) {
		t.Errorf("message ends %q, want %q", st.Message[len(st.Message)-40:], want)
	}
	if len(st.Message) > 2*maxInvalidBytes {
		t.Errorf("message is %d bytes", len(st.Message))
	}
	// One error larger than the bound is still listed.
	one := newInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", field.ErrorList{field.Invalid(p, strings.Repeat("v", 2<<20), "bad")}).ErrStatus
	if len(one.Details.Causes) != 1 {
		t.Errorf("a single large error: %d causes, want 1", len(one.Details.Causes))
	}
}
