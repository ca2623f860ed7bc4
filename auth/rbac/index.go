package rbac

import (
	"encoding/json"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/store"
)

// The storage resources of the RBAC kinds (registry.Kind.StorageResource).
const (
	ResourceRoles               = "roles.rbac.authorization.k8s.io"
	ResourceClusterRoles        = "clusterroles.rbac.authorization.k8s.io"
	ResourceRoleBindings        = "rolebindings.rbac.authorization.k8s.io"
	ResourceClusterRoleBindings = "clusterrolebindings.rbac.authorization.k8s.io"
)

// Resources are the storage resources the index follows.
var Resources = []string{ResourceRoles, ResourceClusterRoles, ResourceRoleBindings, ResourceClusterRoleBindings}

// HandleEvent applies one committed change, as the watch cache delivers
// it: the object's JSON is decoded by its storage resource; events of
// other resources are ignored. Feed it every event of Resources after a
// list at revision R with the events after R, in revision order.
func (a *Authorizer) HandleEvent(ev store.Event) error {
	obj, err := decode(ev.Object.Key.Resource, ev.Object.Value)
	if err != nil || obj == nil {
		return err
	}
	if ev.Type == store.Deleted {
		a.Delete(obj)
		return nil
	}
	a.Apply(obj)
	return nil
}

// Load applies stored objects of Resources (the result of a list).
func (a *Authorizer) Load(objs []store.Object) error {
	for _, o := range objs {
		obj, err := decode(o.Key.Resource, o.Value)
		if err != nil {
			return err
		}
		if obj != nil {
			a.Apply(obj)
		}
	}
	return nil
}

func decode(resource string, value []byte) (runtime.Object, error) {
	var obj runtime.Object
	switch resource {
	case ResourceRoles:
		obj = &rbacv1.Role{}
	case ResourceClusterRoles:
		obj = &rbacv1.ClusterRole{}
	case ResourceRoleBindings:
		obj = &rbacv1.RoleBinding{}
	case ResourceClusterRoleBindings:
		obj = &rbacv1.ClusterRoleBinding{}
	default:
		return nil, nil
	}
	if err := json.Unmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("decode %s: %w", resource, err)
	}
	return obj, nil
}

// Apply adds or replaces a Role, ClusterRole, RoleBinding or
// ClusterRoleBinding (typed k8s.io/api/rbac/v1 objects); other objects
// are ignored.
func (a *Authorizer) Apply(obj runtime.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.unsafeForgetDecisionsLocked()
	switch o := obj.(type) {
	case *rbacv1.Role:
		m := a.roles[o.Namespace]
		if m == nil {
			m = map[string][]rbacv1.PolicyRule{}
			a.roles[o.Namespace] = m
		}
		m[o.Name] = o.Rules
	case *rbacv1.ClusterRole:
		a.clusterRoles[o.Name] = o.Rules
	case *rbacv1.RoleBinding:
		a.unsafeBindLocked(bindingID{o.Namespace, o.Name}, o.RoleRef, o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		a.unsafeBindLocked(bindingID{"", o.Name}, o.RoleRef, o.Subjects)
	}
}

// Delete removes what Apply added for obj (only its namespace and name
// are read).
func (a *Authorizer) Delete(obj runtime.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer a.unsafeForgetDecisionsLocked()
	switch o := obj.(type) {
	case *rbacv1.Role:
		if m := a.roles[o.Namespace]; m != nil {
			delete(m, o.Name)
			if len(m) == 0 {
				delete(a.roles, o.Namespace)
			}
		}
	case *rbacv1.ClusterRole:
		delete(a.clusterRoles, o.Name)
	case *rbacv1.RoleBinding:
		a.unsafeUnbindLocked(bindingID{o.Namespace, o.Name})
	case *rbacv1.ClusterRoleBinding:
		a.unsafeUnbindLocked(bindingID{"", o.Name})
	}
}

// unsafeIndexLocked returns the subject index of a binding's namespace, creating it
// when create is set.
func (a *Authorizer) unsafeIndexLocked(namespace string, create bool) subjectIndex {
	if namespace == "" {
		return a.clusterBindings
	}
	x := a.bindings[namespace]
	if x == nil && create {
		x = subjectIndex{}
		a.bindings[namespace] = x
	}
	return x
}

func (a *Authorizer) unsafeBindLocked(id bindingID, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
	a.unsafeUnbindLocked(id)
	b := &binding{id: id, roleRef: ref, subjects: subjects}
	x := a.unsafeIndexLocked(id.namespace, true)
	var keys []subjectKey
	for _, s := range subjects {
		k, ok := keyOf(s, id.namespace)
		if !ok {
			continue
		}
		x.add(k, b)
		keys = append(keys, k)
	}
	a.subjectsOf[id] = keys
}

func (a *Authorizer) unsafeUnbindLocked(id bindingID) {
	keys, ok := a.subjectsOf[id]
	if !ok {
		return
	}
	delete(a.subjectsOf, id)
	x := a.unsafeIndexLocked(id.namespace, false)
	if x == nil {
		return
	}
	for _, k := range keys {
		x.remove(k, id)
	}
	if id.namespace != "" && len(x) == 0 {
		delete(a.bindings, id.namespace)
	}
}

// keyOf is the index key of a subject of a binding in namespace (""
// for ClusterRoleBindings). A ServiceAccount is the user its tokens
// authenticate as; one without a namespace is in the binding's namespace,
// and matches nobody in a ClusterRoleBinding, as in kube-apiserver.
// Subjects of other kinds match nobody.
func keyOf(s rbacv1.Subject, namespace string) (subjectKey, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return userKey(s.Name), true
	case rbacv1.GroupKind:
		return groupKey(s.Name), true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		if ns == "" {
			return "", false
		}
		return userKey("system:serviceaccount:" + ns + ":" + s.Name), true
	}
	return "", false
}
