package rbac

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// Escalation prevention, as kube-apiserver's pkg/registry/rbac
// policybased storages do it on create and update (the caller skips
// updates that change only the fields garbage collection writes:
// finalizers and owner references). Nobody may write a Role or
// ClusterRole granting more than they hold, unless they may "escalate"
// it, nor bind a role whose rules they do not hold, unless they may
// "bind" it. Members of system:masters may do both.

// fullAuthority is what using a ClusterRole aggregationRule requires.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

func privileged(u user.Info) bool {
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// CheckRoleWrite returns nil when u may write a Role (namespace set) or
// ClusterRole named name with rules; aggregation reports that the new or
// the stored ClusterRole has an aggregationRule. Otherwise it returns
// kube-apiserver's 403.
func (a *Authorizer) CheckRoleWrite(ctx context.Context, u user.Info, namespace, name string, rules []rbacv1.PolicyRule, aggregation bool) error {
	resource := "clusterroles"
	if namespace != "" {
		resource = "roles"
	}
	if privileged(u) || a.allows(ctx, authorizer.AttributesRecord{User: u, Verb: "escalate", APIGroup: rbacv1.GroupName, APIVersion: "*",
		Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true}) {
		return nil
	}
	gr := schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}
	if err := a.confirmNoEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregation && a.confirmNoEscalation(u, namespace, fullAuthority) != nil {
		return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
	}
	return nil
}

// CheckBindingWrite returns nil when u may write a RoleBinding (namespace
// set) or ClusterRoleBinding named name that refers to ref. Otherwise it
// returns kube-apiserver's error: 404 when the role does not exist, 403
// when u does not hold its rules.
func (a *Authorizer) CheckBindingWrite(ctx context.Context, u user.Info, namespace, name string, ref rbacv1.RoleRef) error {
	if privileged(u) {
		return nil
	}
	bind := authorizer.AttributesRecord{User: u, Verb: "bind", APIGroup: ref.APIGroup, APIVersion: "*", Namespace: namespace, Name: ref.Name, ResourceRequest: true}
	switch ref.Kind {
	case "ClusterRole":
		bind.Resource = "clusterroles"
	case "Role":
		bind.Resource = "roles"
	}
	if bind.Resource != "" && a.allows(ctx, bind) {
		return nil
	}
	a.mu.RLock()
	rules, missing := a.unsafeRulesOfLocked(&binding{id: bindingID{namespace: namespace}, roleRef: ref})
	a.mu.RUnlock()
	if missing != "" {
		if bind.Resource == "" {
			return errors.New(missing)
		}
		return apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: strings.TrimSuffix(bind.Resource, "s")}, ref.Name)
	}
	resource := "clusterrolebindings"
	if namespace != "" {
		resource = "rolebindings"
	}
	if err := a.confirmNoEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}, name, err)
	}
	return nil
}

func (a *Authorizer) allows(ctx context.Context, attrs authorizer.Attributes) bool {
	d, _, _ := a.Authorize(ctx, attrs)
	return d == authorizer.DecisionAllow
}

// confirmNoEscalation is kube-apiserver's ConfirmNoEscalation: the rules
// u holds in namespace must cover rules; the error lists what they miss,
// compacted and sorted, and the role references that did not resolve.
func (a *Authorizer) confirmNoEscalation(u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	owned, resolutionErrs := a.RulesFor(u, namespace)
	ok, missing := rbacvalidation.Covers(owned, rules)
	if ok {
		return nil
	}
	seen := map[string]bool{}
	var descs []string
	for _, r := range compactRules(missing) {
		if d := compactString(r); !seen[d] {
			seen[d] = true
			descs = append(descs, d)
		}
	}
	sort.Strings(descs)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.GetName(), u.GetGroups(), strings.Join(descs, "\n"))
	if len(resolutionErrs) > 0 {
		// kube-apiserver prints its one resolution error (an aggregate)
		// in a slice.
		msg += fmt.Sprintf("; resolution errors: [%s]", aggregate(resolutionErrs))
	}
	return errors.New(msg)
}

// simpleResource identifies the rules compactRules merges: one group, one
// resource, at most one name, nothing else.
type simpleResource struct {
	group, resource string
	hasName         bool
	name            string
}

// compactRules is kube-apiserver's CompactRules: simple rules of the same
// group, resource and name become one rule with all their verbs.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	merged := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, r := range rules {
		key, ok := simpleKey(&r)
		if !ok {
			out = append(out, r)
			continue
		}
		if m, ok := merged[key]; ok {
			m.Verbs = append(m.Verbs, r.Verbs...)
			continue
		}
		merged[key] = r.DeepCopy()
		order = append(order, key)
	}
	for _, k := range order {
		out = append(out, *merged[k])
	}
	return out
}

func simpleKey(r *rbacv1.PolicyRule) (simpleResource, bool) {
	if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
		return simpleResource{}, false
	}
	plain := &rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames}
	if !reflect.DeepEqual(plain, r) {
		return simpleResource{}, false
	}
	k := simpleResource{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		k.hasName, k.name = true, r.ResourceNames[0]
	}
	return k, true
}

// compactString is kube-apiserver's CompactString of a rule:
// {APIGroups:["x"], Resources:["y"], Verbs:["get"]}, naming only the
// fields that are set.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// AdmitWrite is the escalation check of a create (old nil) or update by u
// of an RBAC object, for the API's write path (httpapi.Config.AdmitWrite);
// other objects pass. As kube-apiserver does, an update that changes only
// what garbage collection writes (finalizers, owner references) is not
// checked, nor is an update of a ClusterRole by the aggregation controller
// (which runs without a user).
func (a *Authorizer) AdmitWrite(ctx context.Context, u user.Info, obj, old runtime.Object) error {
	if old != nil && onlyGCFieldsChange(obj, old) {
		return nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		return a.CheckRoleWrite(ctx, u, o.Namespace, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		aggregation := o.AggregationRule != nil
		if prev, ok := old.(*rbacv1.ClusterRole); ok && prev.AggregationRule != nil {
			aggregation = true
		}
		return a.CheckRoleWrite(ctx, u, "", o.Name, o.Rules, aggregation)
	case *rbacv1.RoleBinding:
		return a.CheckBindingWrite(ctx, u, o.Namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return a.CheckBindingWrite(ctx, u, "", o.Name, o.RoleRef)
	}
	return nil
}

// onlyGCFieldsChange reports whether obj differs from old only in its
// finalizers, owner references, and the metadata the server maintains
// (managedFields, resourceVersion, generation, uid, creation timestamp),
// as kube-apiserver's IsOnlyMutatingGCFields does.
func onlyGCFieldsChange(obj, old runtime.Object) bool {
	om, err := apimeta.Accessor(old)
	if err != nil {
		return false
	}
	cp := obj.DeepCopyObject()
	m, err := apimeta.Accessor(cp)
	if err != nil {
		return false
	}
	m.SetFinalizers(om.GetFinalizers())
	m.SetOwnerReferences(om.GetOwnerReferences())
	m.SetManagedFields(om.GetManagedFields())
	m.SetResourceVersion(om.GetResourceVersion())
	m.SetGeneration(om.GetGeneration())
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	cp.GetObjectKind().SetGroupVersionKind(old.GetObjectKind().GroupVersionKind())
	return equality.Semantic.DeepEqual(cp, old)
}
