package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// This file is the one place where errors become metav1.Status responses.

// statusError builds a Status error the way kube-apiserver words its
// generic answers. withDetails adds the empty details object some of them
// carry.
func statusError(code int32, reason metav1.StatusReason, message string, withDetails bool) *apierrors.StatusError {
	st := metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message}
	if withDetails {
		st.Details = &metav1.StatusDetails{}
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// errNotFoundResource is kube-apiserver's answer for an unknown resource or
// version in a known group.
func errNotFoundResource() *apierrors.StatusError {
	return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource", true)
}

func errMethodNotAllowed() *apierrors.StatusError {
	return statusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource", true)
}

func errNotAcceptable() *apierrors.StatusError {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "406: Not Acceptable\n\nAvailable representations: "+supportedMediaTypesList, true)
}

// errNotAcceptableStream is kube-apiserver's 406 for a watch asked for in a
// representation that cannot stream (YAML): NegotiateOutputMediaTypeStream's
// error, which lists every media type the endpoint serves.
func errNotAcceptableStream() *apierrors.StatusError {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: "+supportedMediaTypesList, false)
}

func errUnsupportedMediaType() *apierrors.StatusError {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+supportedMediaTypesList, false)
}

func errUnsupportedPatchType() *apierrors.StatusError {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, "415: Unsupported Media Type", true)
}

func errRequestEntityTooLarge(limit int64) *apierrors.StatusError {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
}

// errRequestTimeout is kube-apiserver's 504 for a request that ran past
// --request-timeout (filters.WithTimeoutForNonLongRunningRequests); here,
// one whose body did not arrive in time.
func errRequestTimeout() *apierrors.StatusError {
	return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
}

// storeError maps a store error about the object name of resource gr to a
// Status error, as kube-apiserver's etcd3 storage does.
func storeError(err error, gr schema.GroupResource, name string) error {
	var se *apierrors.StatusError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, store.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(conflictMessage))
	case errors.Is(err, store.ErrCompacted):
		return apierrors.NewResourceExpired(err.Error())
	case errors.Is(err, store.ErrInvalidObject):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, store.ErrTooLarge):
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	case errors.Is(err, store.ErrClosed):
		return apierrors.NewServiceUnavailable("the server is shutting down")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete", 1)
	}
	return apierrors.NewInternalError(err)
}

// errUIDPrecondition is kube-apiserver's 409 for an update whose body
// names another uid than the stored object's: its storage's precondition
// error, with the etcd key it would have used.
func errUIDPrecondition(k *registry.Kind, gr schema.GroupResource, namespace, name string, want, got types.UID) *apierrors.StatusError {
	key := "/registry/" + k.StorageResource + "/"
	if k.Namespaced {
		key += namespace + "/"
	}
	key += name
	return apierrors.NewConflict(gr, name, fmt.Errorf(
		"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in object meta: %s",
		key, want, got))
}

// maxInvalidCauses bounds the causes a 422 lists. Each costs about 300
// bytes of response: one 1.5 MB object with 300,000 invalid finalizers drew
// an 87 MB Status and took the daemon's RSS to 870 MB. kube-apiserver
// lists every cause; so does edgeapi up to this many.
const maxInvalidCauses = 100

// newInvalid is apierrors.NewInvalid (422 Invalid) with the same causes and
// message, built in time linear in the number of errors (apimachinery
// appends each error's text to a string, which is quadratic: 50,000 invalid
// finalizers took 130 s to refuse) and bounded in size: past
// maxInvalidCauses errors, the rest are counted in one last cause.
func newInvalid(gk schema.GroupKind, name string, errs field.ErrorList) *apierrors.StatusError {
	se := apierrors.NewInvalid(gk, name, nil)
	if len(errs) == 0 {
		return se
	}
	shown := errs
	if len(shown) > maxInvalidCauses {
		shown = shown[:maxInvalidCauses]
	}
	causes := make([]metav1.StatusCause, 0, len(shown)+1)
	seen := make(map[string]bool, len(shown))
	var msg strings.Builder
	add := func(text string) {
		if len(seen) > 0 {
			msg.WriteString(", ")
		}
		seen[text] = true
		msg.WriteString(text)
	}
	for _, e := range shown {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
		if text := e.Error(); !seen[text] {
			add(text)
		}
	}
	if more := len(errs) - len(shown); more > 0 {
		text := fmt.Sprintf("and %d more errors", more)
		causes = append(causes, metav1.StatusCause{Message: text})
		add(text)
	}
	se.ErrStatus.Details.Causes = causes
	if len(seen) == 1 {
		se.ErrStatus.Message = fmt.Sprintf("%s %q is invalid: %s", gk.String(), name, msg.String())
	} else {
		se.ErrStatus.Message = fmt.Sprintf("%s %q is invalid: [%s]", gk.String(), name, msg.String())
	}
	return se
}

// conflictMessage is kube-apiserver's wording for a stale resourceVersion.
const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// statusOf returns the Status to send for err.
func statusOf(err error) *metav1.Status {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		return &st
	}
	st := apierrors.NewInternalError(err).Status()
	return &st
}
