package rbac

import (
	"sync"
	"sync/atomic"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Allowed decisions, remembered.
//
// A client sends the same few requests as the same user again and again
// (a controller's gets of its objects), and each decision walks the rules
// of every role bound to the user and to its groups (system:authenticated
// brings the bootstrap discovery roles), about 1.5 µs of a GET. So
// AuthorizeQuiet remembers the requests it allowed, by everything the
// decision reads: the user's name and groups and the request's
// attributes. Every change to the index (Apply, Delete) starts a new,
// empty cache under the index's write lock, so no decision outlives the
// RBAC objects it was made from: a request is never allowed from the
// cache that the index would refuse. Refusals are not cached (they take
// Authorize's path for their reason). The cache starts over when it holds
// decisionCacheMax decisions.

// decisionCacheMax bounds the decisions remembered.
const decisionCacheMax = 4096

// decisionGroups is how many groups a cached decision's user may have; a
// user with more is decided every time.
const decisionGroups = 4

// decisionKey is what an RBAC decision depends on.
type decisionKey struct {
	user    string
	groups  [decisionGroups]string
	ngroups int

	resourceRequest                                               bool
	verb, apiGroup, resource, subresource, namespace, name, path string
}

// decisionCache is one generation of remembered decisions.
type decisionCache struct {
	allowed sync.Map // decisionKey -> struct{}
	n       atomic.Int64
}

// decisionKeyOf returns the key of attrs made by u; ok is false when the
// decision is not to be cached (a user with too many groups).
func decisionKeyOf(u user.Info, attrs authorizer.Attributes) (decisionKey, bool) {
	groups := u.GetGroups()
	if len(groups) > decisionGroups {
		return decisionKey{}, false
	}
	k := decisionKey{
		user:            u.GetName(),
		ngroups:         len(groups),
		resourceRequest: attrs.IsResourceRequest(),
		verb:            attrs.GetVerb(),
	}
	copy(k.groups[:], groups)
	if k.resourceRequest {
		k.apiGroup, k.resource, k.subresource = attrs.GetAPIGroup(), attrs.GetResource(), attrs.GetSubresource()
		k.namespace, k.name = attrs.GetNamespace(), attrs.GetName()
	} else {
		// A non-resource rule reads only the verb and the path
		// (RuleAllows), and ClusterRoleBindings only.
		k.path = attrs.GetPath()
	}
	return k, true
}

// cachedAllow reports whether the current cache remembers key as allowed.
// The caller holds mu for reading.
func (a *Authorizer) cachedAllow(key decisionKey) bool {
	_, ok := a.decisions.Load().allowed.Load(key)
	return ok
}

// rememberAllow remembers key as allowed; the caller holds mu for reading
// and decided key under that lock.
func (a *Authorizer) rememberAllow(key decisionKey) {
	c := a.decisions.Load()
	if c.n.Add(1) > decisionCacheMax {
		a.decisions.CompareAndSwap(c, &decisionCache{})
		return
	}
	c.allowed.Store(key, struct{}{})
}

// unsafeForgetDecisionsLocked drops every remembered decision; the caller
// holds mu for writing, having changed the index.
func (a *Authorizer) unsafeForgetDecisionsLocked() {
	a.decisions.Store(&decisionCache{})
}
