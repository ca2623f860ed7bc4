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

// errNotAcceptableTransform is kube-apiserver's 406 for a conversion that
// does not fit the answer (newNotAcceptableError: no details).
func errNotAcceptableTransform(message string) *apierrors.StatusError {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, message, false)
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
// --request-timeout (filters.WithTimeoutForNonLongRunningRequests): one
// whose body did not arrive in time, or whose deadline passed while it was
// served.
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
	case errors.Is(err, store.ErrNoSpace):
		return errNoSpace()
	case errors.Is(err, store.ErrQuotaExceeded):
		return errQuotaExceeded()
	case errors.Is(err, store.ErrUnavailable):
		return errStorageUnavailable(err)
	case errors.Is(err, store.ErrUnknownOutcome):
		return apierrors.NewTimeoutError(err.Error(), 0)
	case errors.Is(err, store.ErrClosed):
		return apierrors.NewServiceUnavailable("the server is shutting down")
	case errors.Is(err, context.DeadlineExceeded):
		return errRequestTimeout() // the request's deadline (--request-timeout, ?timeout=)
	case errors.Is(err, context.Canceled):
		return apierrors.NewTimeoutError("request did not complete", 1)
	}
	return apierrors.NewInternalError(err)
}

// errNoSpace is the answer for a write refused because the file system
// holding the database is full. kube-apiserver has nothing better than 500
// for etcd's "database space exceeded" either; the message says what
// happened and what still works, and Retry-After lets client-go retry
// (it waits and retries any verb on a 5xx with Retry-After).
func errNoSpace() *apierrors.StatusError {
	se := statusError(http.StatusInternalServerError, metav1.StatusReasonInternalError,
		"Internal error occurred: database space exceeded: the file system holding the data directory is full; "+
			"creates and updates are refused until space is freed, deletes are accepted", true)
	se.ErrStatus.Details.RetryAfterSeconds = noSpaceRetryAfter
	return se
}

// errStorageUnavailable is the answer for a request the storage could
// not serve for now without changing anything (etcd lost its leader or
// quorum): 503 ServiceUnavailable, as kube-apiserver answers when its
// storage is not ready, with a Retry-After that makes client-go send
// it again by itself.
func errStorageUnavailable(err error) *apierrors.StatusError {
	se := statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error(), true)
	se.ErrStatus.Details.RetryAfterSeconds = storageRetryAfter
	return se
}

// storageRetryAfter is the Retry-After, in seconds, of
// errStorageUnavailable: about as long as etcd takes to elect a leader.
const storageRetryAfter = 1

// errQuotaExceeded is the answer for a create or update refused because
// the database has reached --quota-backend-bytes. etcd answers
// "etcdserver: mvcc: database space exceeded", which kube-apiserver passes
// on as a 500; but this is no server fault, it is a limit the operator
// set, so edgeapi answers 507 Insufficient Storage (the server cannot
// store what the request asks it to), with the etcd words in the message
// so that searches for them find it. It has no Retry-After: waiting does
// not help until objects are deleted, and client-go would retry a 5xx
// with Retry-After by itself. kubectl prints it as
// "Error from server (InsufficientStorage): ...".
func errQuotaExceeded() *apierrors.StatusError {
	return statusError(http.StatusInsufficientStorage, reasonInsufficientStorage,
		"database space exceeded: the database has reached its quota (--quota-backend-bytes); "+
			"creates and updates are refused until deletes and compaction free space, deletes are accepted", true)
}

// reasonInsufficientStorage is the Status reason of errQuotaExceeded;
// metav1 has none for 507.
const reasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

// noSpaceRetryAfter is the Retry-After, in seconds, of errNoSpace: about
// how often the store checks whether space came back.
const noSpaceRetryAfter = 1

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

// newInvalid is apierrors.NewInvalid with the same causes and message, in
// time and memory linear in the errors. apimachinery builds the message by
// appending each distinct error to a string (utilerrors.aggregate.Error),
// which is quadratic: 300,000 invalid finalizers took minutes and hundreds
// of MiB. The message is kube-apiserver's: `Kind "name" is invalid: ` and
// the distinct errors in order, joined by ", " and bracketed when there is
// more than one.
//
// Unlike kube-apiserver, it reports at most maxInvalidErrors errors, and
// those that fit in maxInvalidBytes of text, and says how many more there
// were: one error per item of a 3 MiB list made a 90 MB answer (300,000
// invalid finalizers), 60 times the request, and a thousand errors that
// each print a large invalid value took 127 MB to render.
// maxInvalidErrors is the most errors an Invalid (422) answer lists.
// Validation may put stand-ins past it (registry.MaxReportedErrors).
const maxInvalidErrors = registry.MaxReportedErrors

// maxInvalidBytes bounds the text of the errors an Invalid answer lists
// (each is in a cause and in the message); the first error is always
// listed.
const maxInvalidBytes = 1 << 20

func newInvalid(gk schema.GroupKind, name string, errs field.ErrorList) *apierrors.StatusError {
	more := 0
	if len(errs) > maxInvalidErrors {
		more = len(errs) - maxInvalidErrors
		errs = errs[:maxInvalidErrors]
	}
	causes := make([]metav1.StatusCause, 0, len(errs))
	texts := make([]string, 0, len(errs)) // each error as Error() words it
	size := 0
	for i, e := range errs {
		body := e.ErrorBody()
		text := e.Field + ": " + body
		if size += len(body) + len(text); size > maxInvalidBytes && i > 0 {
			more += len(errs) - i
			errs = errs[:i]
			break
		}
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: body, Field: e.Field})
		texts = append(texts, text)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q is invalid", gk.String(), name)
	if len(errs) > 0 {
		b.WriteString(": ")
		seen := make(map[string]struct{}, len(errs))
		msgs := make([]string, 0, len(errs))
		for _, msg := range texts {
			if _, dup := seen[msg]; dup {
				continue
			}
			seen[msg] = struct{}{}
			msgs = append(msgs, msg)
		}
		if more > 0 {
			msgs = append(msgs, fmt.Sprintf("and %d more errors", more))
		}
		if len(msgs) > 1 {
			b.WriteByte('[')
		}
		for i, msg := range msgs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(msg)
		}
		if len(msgs) > 1 {
			b.WriteByte(']')
		}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: b.String(),
		Details: &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes},
	}}
}
