package registry

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// Builtin returns a registry of the built-in kinds: core/v1 namespaces,
// configmaps, secrets, serviceaccounts, services and events, events.k8s.io/v1 events
// (stored with the core events), coordination.k8s.io/v1 leases,
// apiextensions.k8s.io/v1 customresourcedefinitions, the four
// rbac.authorization.k8s.io/v1 kinds, and the reviews (never stored):
// authorization.k8s.io/v1 selfsubjectaccessreviews,
// subjectaccessreviews, localsubjectaccessreviews and
// selfsubjectrulesreviews, and authentication.k8s.io/v1
// selfsubjectreviews. Each
// call returns fresh Kind values, so callers may add to the registry.
//
// opts (at most one; none means kube-apiserver's defaults) set the
// Service allocators' ranges; it panics on ranges that do not parse, which
// callers check first with ParseServiceClusterIPRange and ParsePortRange.
// The parameter is variadic so that callers without Services need not
// change.
func Builtin(opts ...BuiltinOptions) *Registry {
	var o BuiltinOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	alloc, err := newServiceAllocator(o)
	if err != nil {
		panic(fmt.Sprintf("registry: %v", err))
	}
	r := New()
	r.Add(serviceKind(alloc))
	r.Add(namespaceKind())
	r.Add(configMapKind())
	r.Add(secretKind())
	r.Add(serviceAccountKind())
	r.Add(coreEventKind())
	r.Add(eventsV1EventKind())
	r.Add(leaseKind())
	r.Add(crdKind())
	r.Add(roleKind())
	r.Add(clusterRoleKind())
	r.Add(roleBindingKind())
	r.Add(clusterRoleBindingKind())
	r.Add(selfSubjectAccessReviewKind())
	r.Add(subjectAccessReviewKind())
	r.Add(localSubjectAccessReviewKind())
	r.Add(selfSubjectRulesReviewKind())
	r.Add(selfSubjectReviewKind())
	return r
}

// Verb sets as kube-apiserver's discovery lists them (sorted).
var (
	verbsAll = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	// verbsNoDeleteCollection are the verbs of Namespaces, which answer
	// DELETE on the collection with 405.
	verbsNoDeleteCollection = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// objectMetaFieldSet is apiserver's generic.ObjectMetaFieldsSet: the
// field-selector attributes every kind has.
func objectMetaFieldSet(m *metav1.ObjectMeta, namespaced bool) fields.Set {
	if !namespaced {
		return fields.Set{"metadata.name": m.Name}
	}
	return fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace}
}

// fieldLabelNotSupported is the error of kube-apiserver's field-label
// conversion functions for core/v1 Secrets, Namespaces and Events and
// events.k8s.io/v1 Events.
func fieldLabelNotSupported(label string) error {
	return fmt.Errorf("field label not supported: %s", label)
}

// sortedKeys returns m's keys in order, so that errors about several keys
// come out in a stable order (kube-apiserver's follow Go's map order).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
