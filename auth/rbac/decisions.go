package rbac

import (
	"hash/maphash"
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
// attributes, in a table of decisionSlots entries. Every change to the
// index (Apply, Delete, a relist) starts a new generation under the
// index's write lock, and a remembered decision answers only in the
// generation it was made in, so no decision outlives the RBAC objects it
// was made from: a request is never allowed from the cache that the index
// would refuse. Refusals are not cached (they take
// Authorize's path for their reason).

// decisionSlots is how many decisions are remembered: a direct-mapped
// table, where a decision takes the slot of its key's hash and replaces
// whatever was there.
const decisionSlots = 4096

// decisionGroups is how many groups a cached decision's user may have; a
// user with more is decided every time.
const decisionGroups = 4

// decisionKey is what an RBAC decision depends on.
type decisionKey struct {
	user    string
	groups  [decisionGroups]string
	ngroups int

	resourceRequest                                              bool
	verb, apiGroup, resource, subresource, namespace, name, path string
}

// decisionEntry is a remembered allowed decision, valid while the index
// is at generation gen.
type decisionEntry struct {
	gen uint64
	key decisionKey
}

// decisionCache is the table of remembered decisions.
type decisionCache struct {
	seed  maphash.Seed
	slots [decisionSlots]atomic.Pointer[decisionEntry]
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
		// (RuleAllows).
		k.path = attrs.GetPath()
	}
	return k, true
}

// slot returns the slot of key.
func (c *decisionCache) slot(key *decisionKey) *atomic.Pointer[decisionEntry] {
	var h maphash.Hash
	h.SetSeed(c.seed)
	str := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	str(key.user)
	for _, g := range key.groups[:key.ngroups] {
		str(g)
	}
	h.WriteByte(byte(key.ngroups))
	if key.resourceRequest {
		h.WriteByte(1)
	}
	str(key.verb)
	str(key.apiGroup)
	str(key.resource)
	str(key.subresource)
	str(key.namespace)
	str(key.name)
	str(key.path)
	return &c.slots[h.Sum64()%decisionSlots]
}

// cachedAllow reports whether the cache remembers key as allowed at the
// index's current generation. The caller holds mu for reading.
func (a *Authorizer) cachedAllow(key *decisionKey) bool {
	e := a.decisions.slot(key).Load()
	return e != nil && e.gen == a.gen && e.key == *key
}

// rememberAllow remembers key as allowed; the caller holds mu for reading
// and decided key under that lock.
func (a *Authorizer) rememberAllow(key *decisionKey) {
	a.decisions.slot(key).Store(&decisionEntry{gen: a.gen, key: *key})
}

// unsafeForgetDecisionsLocked makes every remembered decision stale; the
// caller holds mu for writing, having changed the index.
func (a *Authorizer) unsafeForgetDecisionsLocked() {
	a.gen++
}
