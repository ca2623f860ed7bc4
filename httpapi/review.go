package httpapi

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/auth/authn"
	"github.com/edgeapi/edgeapi/registry"
)

// handleReview answers the create of a review kind (registry.Kind.Review)
// as kube-apiserver's create handler does for a storage that only
// creates: the options and the body are read and checked as for any
// create, the system metadata the client may not set is wiped, the
// namespace comes from the URL, managedFields record the manager, and
// then the kind's ReviewFunc validates and answers, 201 with its object.
// Nothing is stored, and dryRun changes nothing, as kube-apiserver's
// review storage ignores it.
func (s *Server) handleReview(r *request) error {
	c := r.c
	k := r.kind
	ctx := c.Request().Context()
	obj, opts, err := s.decodeWrite(r, "CreateOptions")
	if err != nil {
		return s.writeError(c, err)
	}
	m := registry.Accessor(obj)
	m.SetCreationTimestamp(metav1.Time{})
	m.SetUID("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	if err := checkNamespace(k, m, r.ri.Namespace); err != nil {
		return s.writeError(c, err)
	}
	if manager := managerName(opts.fieldManager, c.Request().UserAgent()); manager != "" {
		fm, err := s.fieldManagers.get(k, "")
		if err != nil {
			return s.writeError(c, apierrors.NewInternalError(err))
		}
		live := k.New()
		live.GetObjectKind().SetGroupVersionKind(k.GVK)
		obj = s.fieldManagers.creates.updateCreate(fm, live, obj, manager)
	}
	if err := s.admitWrite(ctx, obj, nil); err != nil {
		return s.writeError(c, err)
	}
	a := registry.ReviewAccess{Authorizer: s.cfg.Authorizer, Rules: s.cfg.RuleResolver}
	if u, ok := authn.UserFrom(ctx); ok {
		a.User = u
	}
	out, err := k.Review(ctx, a, obj)
	if err != nil {
		return s.writeError(c, err)
	}
	return s.writeNew(c, http.StatusCreated, r.rep, k, out)
}
