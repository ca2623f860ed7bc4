package registry

import (
	"fmt"
	"reflect"
	"testing"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ownerRefs(n, controllers int) []metav1.OwnerReference {
	refs := make([]metav1.OwnerReference, n)
	for i := range refs {
		refs[i] = metav1.OwnerReference{APIVersion: "v1", Kind: "K", Name: fmt.Sprint("n", i), UID: types.UID(fmt.Sprint("u", i))}
		if i < controllers {
			refs[i].Controller = new(bool)
			*refs[i].Controller = true
		}
	}
	refs[0].Name = "" // one per-reference error
	return refs
}

// TestValidateObjectMeta_OwnerReferences checks that owner references
// with up to two controllers get apimachinery's errors, and that many
// controllers get the same per-reference errors and one controller error.
func TestValidateObjectMeta_OwnerReferences(t *testing.T) {
	for _, ctl := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(ctl, " controllers"), func(t *testing.T) {
			m := &metav1.ObjectMeta{Name: "x", Namespace: "ns", OwnerReferences: ownerRefs(4, ctl)}
			got := validateObjectMeta(m, true, apimachineryvalidation.NameIsDNSSubdomain)
			want := apimachineryvalidation.ValidateObjectMeta(m, true, apimachineryvalidation.NameIsDNSSubdomain, metadataPath)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("5000 controllers", func(t *testing.T) {
		m := &metav1.ObjectMeta{Name: "x", Namespace: "ns", OwnerReferences: ownerRefs(5000, 5000)}
		got := validateObjectMeta(m, true, apimachineryvalidation.NameIsDNSSubdomain)
		want := apimachineryvalidation.ValidateObjectMeta(m, true, apimachineryvalidation.NameIsDNSSubdomain, metadataPath)[:2]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %d errors %.300v, want the first two of apimachinery's: %.300v", len(got), got, want)
		}
	})
}
