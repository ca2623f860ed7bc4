package registry

import (
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Review kinds are created and never stored: kube-apiserver's
// authorization.k8s.io and authentication.k8s.io reviews, whose storage
// is a Create method that answers from the request's user and the
// server's authorizer. reviewKind gives them what every such kind has;
// each kind adds its type and its ReviewFunc.

// verbsCreate are the verbs of a review kind.
var verbsCreate = []string{"create"}

// reviewKind returns a review kind of gvk served as resource.
// internalPackage is the Go package of kube-apiserver's internal type
// ("authorization").
func reviewKind(gvk schema.GroupVersionKind, resource, singular, internalPackage string, namespaced bool, newObj func() runtime.Object, review ReviewFunc) *Kind {
	return &Kind{
		GVK:             gvk,
		Resource:        resource,
		Singular:        singular,
		InternalPackage: internalPackage,
		Namespaced:      namespaced,
		Verbs:           verbsCreate,
		New:             newObj,
		Strategy:        reviewStrategy{},
		Review:          review,
		// A Table of an answer has the columns of kube-apiserver's
		// default table convertor (the name and the creation time);
		// kube-apiserver registers no convertor for these kinds.
		TableColumns: createdAtColumns(),
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			m := Accessor(obj)
			return []interface{}{m.GetName(), m.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)}, nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			m := Accessor(obj)
			if namespaced {
				return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
			}
			return fields.Set{"metadata.name": m.GetName()}
		},
		FieldSelectorKeys: reviewFieldSelectorKeys(namespaced),
	}
}

func reviewFieldSelectorKeys(namespaced bool) []string {
	if namespaced {
		return []string{"metadata.name", "metadata.namespace"}
	}
	return []string{"metadata.name"}
}

// reviewStrategy is the Strategy of a review kind. The HTTP layer never
// asks it (a review is validated by its ReviewFunc and is never updated);
// it exists because a Kind's Strategy is never nil.
type reviewStrategy struct{}

func (reviewStrategy) PrepareForCreate(runtime.Object)                    {}
func (reviewStrategy) PrepareForUpdate(_, _ runtime.Object)               {}
func (reviewStrategy) Validate(runtime.Object) field.ErrorList            { return nil }
func (reviewStrategy) ValidateUpdate(_, _ runtime.Object) field.ErrorList { return nil }
func (reviewStrategy) AllowUnconditionalUpdate() bool                     { return false }
func (reviewStrategy) NameValidator() func(name string, prefix bool) []string {
	return path.ValidatePathSegmentName
}

// invalidReview is kube-apiserver's 422 for a review that fails
// validation. Its storage names the kind from the decoded object's
// TypeMeta, which the conversion into the internal version leaves empty,
// so the message starts with the group alone:
// `.authorization.k8s.io "" is invalid: ...`, and the details name no kind.
func invalidReview(group string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: group}, "", errs)
}

// errNoUser is kube-apiserver's answer to a self review on a request
// without a user.
func errNoUser() error { return apierrors.NewBadRequest("no user present on request") }

// errNotA is kube-apiserver's answer when a review's storage gets an
// object of another type; the HTTP layer's decoding makes it unreachable.
func errNotA(kind string, obj runtime.Object) error {
	return apierrors.NewBadRequest(fmt.Sprintf("not a %s: %#v", kind, obj))
}

// objectMetaIsEmpty reports whether m, managedFields aside, is empty, as
// kube-apiserver's review validation checks it (nil and empty maps and
// slices are equal).
func objectMetaIsEmpty(m metav1.ObjectMeta) bool {
	m.ManagedFields = nil
	return apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, m)
}
