package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/store"
)

// This file is the one place where errors become metav1.Status responses.

// errNotFoundResource is kube-apiserver's answer for an unknown resource or
// version in a known group.
func errNotFoundResource() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{},
		Message: "the server could not find the requested resource",
	}}
}

func errMethodNotAllowed() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Details: &metav1.StatusDetails{},
		Message: "the server does not allow this method on the requested resource",
	}}
}

func errNotAcceptable() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Details: &metav1.StatusDetails{},
		Message: "406: Not Acceptable\n\nAvailable representations: " + supportedMediaTypesList,
	}}
}

func errUnsupportedMediaType(contentType string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + supportedMediaTypesList,
	}}
}

func errUnsupportedPatchType() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Details: &metav1.StatusDetails{},
		Message: "415: Unsupported Media Type",
	}}
}

func errRequestEntityTooLarge(limit int64) *apierrors.StatusError {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
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
