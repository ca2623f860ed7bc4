package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/auth/serviceaccount"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// The "token" subresource of ServiceAccounts: POST of an
// authentication.k8s.io/v1 TokenRequest answered with a signed token, as
// kube-apiserver's TokenREST does, with its defaults, validation and
// errors. Nothing is stored. A token may be bound to a Secret of the
// ServiceAccount's namespace; edgeapi serves no Pods or Nodes, so a
// binding to one is answered as kube-apiserver answers a missing one
// (404). The TokenRequest answered carries no managedFields.

// TokenIssuer signs the tokens of the token subresource
// (*serviceaccount.Issuer).
type TokenIssuer interface {
	// IssueAt signs a token for r issued at now.
	IssueAt(r serviceaccount.Request, now time.Time) (serviceaccount.Issued, error)
	// APIAudiences are the audiences of a request that names none.
	APIAudiences() []string
	// MaxExpirationSeconds caps a token's lifetime; 0 is no cap.
	MaxExpirationSeconds() int64
}

// tokenRequestKind describes the TokenRequest body for decoding.
var tokenRequestKind = &registry.Kind{
	GVK:             authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
	InternalPackage: "authentication",
	New:             func() runtime.Object { return &authenticationv1.TokenRequest{} },
}

// tokenRequestGK is the group and kind kube-apiserver's TokenRequest
// errors name.
var tokenRequestGK = tokenRequestKind.GVK.GroupKind()

// handleToken serves POST <serviceaccounts>/<name>/token.
func (s *Server) handleToken(r *request) error {
	c := r.c
	if r.ri.Verb != "create" {
		return s.writeError(c, errMethodNotAllowed())
	}
	obj, _, err := s.decodeWrite(&request{c: c, ri: r.ri, kind: tokenRequestKind, rep: r.rep, kinds: r.kinds}, "CreateOptions")
	if err != nil {
		return s.writeError(c, err)
	}
	req := obj.(*authenticationv1.TokenRequest)
	if err := checkNamespace(r.kind, req, r.ri.Namespace); err != nil {
		return s.writeError(c, err)
	}
	out, warnings, err := s.issueToken(r, req)
	addWarnings(c, warnings)
	if err != nil {
		return s.writeError(c, err)
	}
	return s.writeTyped(c, http.StatusCreated, r.rep, out)
}

// issueToken is kube-apiserver's TokenREST.Create for req, whose namespace
// is the request's.
func (s *Server) issueToken(r *request, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, []string, error) {
	ctx := r.c.Request().Context()
	ns, name := r.ri.Namespace, r.ri.Name
	if req.Name != "" && req.Name != name {
		return nil, nil, newInvalid(tokenRequestGK, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	cur, err := s.cfg.Store.Get(ctx, s.key(r.kind, ns, name))
	if err != nil {
		return nil, nil, storeError(err, r.gr(), name)
	}
	saObj, err := r.kind.DecodeStored(cur.Value)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	sa, ok := saObj.(*corev1.ServiceAccount)
	if !ok {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("token: stored %T, want a ServiceAccount", saObj))
	}
	if req.UID != "" && req.UID != sa.UID {
		return nil, nil, apierrors.NewConflict(schema.GroupResource{Group: tokenRequestGK.Group, Resource: tokenRequestGK.Kind}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}

	// Defaults: kube-apiserver's v1 defaulting of expirationSeconds, then
	// TokenREST's of audiences and metadata.
	if req.Spec.ExpirationSeconds == nil {
		exp := int64(serviceaccount.DefaultExpirationSeconds)
		req.Spec.ExpirationSeconds = &exp
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = append([]string(nil), s.cfg.Tokens.APIAudiences()...)
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	now := time.Now()
	req.CreationTimestamp = metav1.NewTime(now).Rfc3339Copy()
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return nil, nil, newInvalid(tokenRequestGK, "", errs)
	}

	issue := serviceaccount.Request{
		ServiceAccount: serviceaccount.ServiceAccount{Namespace: sa.Namespace, Name: sa.Name, UID: string(sa.UID)},
		Audiences:      req.Spec.Audiences,
	}
	if ref := req.Spec.BoundObjectRef; ref != nil {
		bound, err := s.boundObject(r, ref)
		if err != nil {
			return nil, nil, err
		}
		issue.Secret = bound
	}

	var warnings []string
	if max := s.cfg.Tokens.MaxExpirationSeconds(); max > 0 && *req.Spec.ExpirationSeconds > max {
		warnings = append(warnings, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max))
		*req.Spec.ExpirationSeconds = max
	}
	issue.ExpirationSeconds = *req.Spec.ExpirationSeconds
	tok, err := s.cfg.Tokens.IssueAt(issue, now)
	if err != nil {
		return nil, warnings, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %v", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{
		Token:               tok.Token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second)).Rfc3339Copy(),
	}
	req.SetGroupVersionKind(tokenRequestKind.GVK)
	return req, warnings, nil
}

// boundObject looks up the object a TokenRequest binds its token to, as
// kube-apiserver does: a core Secret, Pod or Node, 404 when it is missing
// (always, for Pods and Nodes, which edgeapi does not serve), 400 for other
// kinds, 409 when the reference names another uid.
func (s *Server) boundObject(r *request, ref *authenticationv1.BoundObjectReference) (*serviceaccount.Ref, error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var resource string
	switch {
	case gvk.Group == "" && gvk.Kind == "Secret":
		resource = "secrets"
	case gvk.Group == "" && gvk.Kind == "Pod":
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, ref.Name)
	case gvk.Group == "" && gvk.Kind == "Node":
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, ref.Name)
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	k := r.kinds.Lookup(corev1.SchemeGroupVersion.WithResource(resource))
	if k == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, ref.Name)
	}
	obj, err := s.cfg.Store.Get(r.c.Request().Context(), s.key(k, r.ri.Namespace, ref.Name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, ref.Name)
	}
	if err != nil {
		return nil, storeError(err, schema.GroupResource{Resource: resource}, ref.Name)
	}
	if ref.UID != "" && string(ref.UID) != obj.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return &serviceaccount.Ref{Name: ref.Name, UID: obj.UID}, nil
}

// validateTokenRequest is kube-apiserver's ValidateTokenRequest.
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "expirationSeconds")
	exp := *tr.Spec.ExpirationSeconds
	if exp < serviceaccount.MinExpirationSeconds {
		errs = append(errs, field.Invalid(p, exp, "may not specify a duration less than 10 minutes"))
	}
	if exp > serviceaccount.MaxExpirationSeconds {
		errs = append(errs, field.Invalid(p, exp, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}
