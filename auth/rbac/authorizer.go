package rbac

import (
	"context"
	"fmt"
	"hash/maphash"
	"sort"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer is an authorizer.Authorizer over an index of RBAC objects.
// Safe for concurrent use: Authorize takes a read lock, the feeding
// methods a write lock.
type Authorizer struct {
	// mu guards every field below.
	mu sync.RWMutex
	// roles holds each Role's rules by namespace and name; clusterRoles
	// each ClusterRole's rules by name.
	roles        map[string]map[string][]rbacv1.PolicyRule
	clusterRoles map[string][]rbacv1.PolicyRule
	// clusterBindings indexes ClusterRoleBindings by subject;
	// bindings indexes RoleBindings by namespace, then subject.
	clusterBindings subjectIndex
	bindings        map[string]subjectIndex
	// subjectsOf remembers the subject keys each binding was indexed
	// under, so that an update or delete can unindex it.
	subjectsOf map[bindingID][]subjectKey
	// decisions remembers allowed requests until the index changes
	// (decisions.go); read and filled under mu's read lock.
	decisions *decisionCache
	// gen counts the changes to the index; a remembered decision
	// answers only at the generation it was made.
	gen uint64
}

// subjectKey is "u:<user name>" or "g:<group name>".
type subjectKey string

func userKey(name string) subjectKey  { return subjectKey("u:" + name) }
func groupKey(name string) subjectKey { return subjectKey("g:" + name) }

// bindingID names a binding: namespace "" for ClusterRoleBindings.
type bindingID struct{ namespace, name string }

// binding is what authorization needs of a binding.
type binding struct {
	id       bindingID
	roleRef  rbacv1.RoleRef
	subjects []rbacv1.Subject
}

// subjectIndex maps a subject to the bindings that name it.
type subjectIndex map[subjectKey]map[bindingID]*binding

func (x subjectIndex) add(k subjectKey, b *binding) {
	m := x[k]
	if m == nil {
		m = map[bindingID]*binding{}
		x[k] = m
	}
	m[b.id] = b
}

func (x subjectIndex) remove(k subjectKey, id bindingID) {
	if m := x[k]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(x, k)
		}
	}
}

// New returns an Authorizer with an empty index: it denies everyone but
// system:masters until it is fed.
func New() *Authorizer {
	a := &Authorizer{
		roles:           map[string]map[string][]rbacv1.PolicyRule{},
		clusterRoles:    map[string][]rbacv1.PolicyRule{},
		clusterBindings: subjectIndex{},
		bindings:        map[string]subjectIndex{},
		subjectsOf:      map[bindingID][]subjectKey{},
	}
	a.decisions = &decisionCache{seed: maphash.MakeSeed()}
	return a
}

// Authorize implements authorizer.Authorizer. It allows when one rule of
// a role bound to the user allows the request, with kube-apiserver's
// reason naming the binding, its role and the subject that matched
// (`RBAC: allowed by RoleBinding "b/ns" of Role "r" to User "u"`), and
// otherwise has no opinion, with kube-apiserver's reason: empty, or
// "RBAC: " and the errors met on the way (a binding whose role does not
// exist).
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return authorizer.DecisionAllow, "", nil
		}
	}
	var by *binding
	_, errs := a.visit(u, attrs.GetNamespace(), func(b *binding, rule *rbacv1.PolicyRule) bool {
		if RuleAllows(attrs, rule) {
			by = b
			return true
		}
		return false
	})
	if by != nil {
		return authorizer.DecisionAllow, "RBAC: allowed by " + by.describe(u), nil
	}
	if len(errs) == 0 {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionNoOpinion, "RBAC: " + aggregate(errs), nil
}

// AuthorizeQuiet decides as Authorize does, without the reason of an
// allowed decision: the request path discards it, and building it costs
// more than the decision. When a rule allows it allocates nothing; a
// request no rule allows takes Authorize's path, for its reason.
func (a *Authorizer) AuthorizeQuiet(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return authorizer.DecisionAllow, "", nil
		}
	}
	if a.allowedByAnyRule(attrs, u) {
		return authorizer.DecisionAllow, "", nil
	}
	return a.Authorize(ctx, attrs)
}

// allowedByAnyRule reports whether a rule bound to u allows attrs, in no particular
// order and without collecting errors.
func (a *Authorizer) allowedByAnyRule(attrs authorizer.Attributes, u user.Info) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	key, cacheable := decisionKeyOf(u, attrs)
	if cacheable && a.cachedAllow(&key) {
		return true
	}
	if !a.unsafeAllowedLocked(attrs, u) {
		return false
	}
	if cacheable {
		a.rememberAllow(&key)
	}
	return true
}

// unsafeAllowedLocked is allowedByAnyRule without the cache; the caller
// holds mu.
func (a *Authorizer) unsafeAllowedLocked(attrs authorizer.Attributes, u user.Info) bool {
	if a.anyAllowsLocked(a.clusterBindings, attrs, u) {
		return true
	}
	if ns := attrs.GetNamespace(); ns != "" {
		if x := a.bindings[ns]; x != nil && a.anyAllowsLocked(x, attrs, u) {
			return true
		}
	}
	return false
}

// anyAllowsLocked reports whether a binding of x naming u or one of its
// groups has a rule that allows attrs; the caller holds mu.
func (a *Authorizer) anyAllowsLocked(x subjectIndex, attrs authorizer.Attributes, u user.Info) bool {
	var buf [128]byte
	check := func(prefix, name string) bool {
		// m[string(bytes)] does not allocate the key.
		key := append(append(buf[:0], prefix...), name...)
		for _, b := range x[subjectKey(key)] {
			rules, err := a.unsafeRulesOfLocked(b)
			if err != "" {
				continue
			}
			for i := range rules {
				if RuleAllows(attrs, &rules[i]) {
					return true
				}
			}
		}
		return false
	}
	if check("u:", u.GetName()) {
		return true
	}
	for _, g := range u.GetGroups() {
		if check("g:", g) {
			return true
		}
	}
	return false
}

// RulesFor returns the rules that apply to u in namespace (cluster-wide
// rules only when namespace is empty), and the errors met resolving role
// references, as kube-apiserver's rule resolver does for
// SelfSubjectRulesReview and escalation checks.
func (a *Authorizer) RulesFor(u user.Info, namespace string) ([]rbacv1.PolicyRule, []string) {
	var rules []rbacv1.PolicyRule
	_, errs := a.visit(u, namespace, func(_ *binding, rule *rbacv1.PolicyRule) bool {
		rules = append(rules, *rule)
		return false
	})
	return rules, errs
}

// visit calls fn with every rule bound to u, ClusterRoleBindings first,
// then RoleBindings in namespace, each group of bindings in name order,
// until fn returns true. It returns whether fn did, and the messages of
// role references that did not resolve.
func (a *Authorizer) visit(u user.Info, namespace string, fn func(*binding, *rbacv1.PolicyRule) bool) (bool, []string) {
	keys := make([]subjectKey, 0, 1+len(u.GetGroups()))
	keys = append(keys, userKey(u.GetName()))
	for _, g := range u.GetGroups() {
		keys = append(keys, groupKey(g))
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var errs []string
	indexes := []subjectIndex{a.clusterBindings}
	if namespace != "" {
		indexes = append(indexes, a.bindings[namespace])
	}
	for _, x := range indexes {
		for _, b := range matching(x, keys) {
			rules, err := a.unsafeRulesOfLocked(b)
			if err != "" {
				errs = append(errs, err)
				continue
			}
			for i := range rules {
				if fn(b, &rules[i]) {
					return true, errs
				}
			}
		}
	}
	return false, errs
}

// matching returns the bindings of x that name one of keys, once each, in
// name order.
func matching(x subjectIndex, keys []subjectKey) []*binding {
	var out []*binding
	seen := map[bindingID]bool{}
	for _, k := range keys {
		for id, b := range x[k] {
			if !seen[id] {
				seen[id] = true
				out = append(out, b)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id.name < out[j].id.name })
	return out
}

// unsafeRulesOfLocked resolves a binding's role reference; the caller
// holds mu. The error is kube-apiserver's NotFound message.
func (a *Authorizer) unsafeRulesOfLocked(b *binding) ([]rbacv1.PolicyRule, string) {
	switch b.roleRef.Kind {
	case "Role":
		if rules, ok := a.roles[b.id.namespace][b.roleRef.Name]; ok {
			return rules, ""
		}
		return nil, `role.rbac.authorization.k8s.io "` + b.roleRef.Name + `" not found`
	case "ClusterRole":
		if rules, ok := a.clusterRoles[b.roleRef.Name]; ok {
			return rules, ""
		}
		return nil, `clusterrole.rbac.authorization.k8s.io "` + b.roleRef.Name + `" not found`
	}
	return nil, `unsupported role reference kind: "` + b.roleRef.Kind + `"`
}

// aggregate joins messages as apimachinery's error aggregate does:
// duplicates dropped, one message alone, several in brackets.
func aggregate(msgs []string) string {
	if len(msgs) == 1 {
		return msgs[0]
	}
	seen := map[string]bool{}
	var uniq []string
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			uniq = append(uniq, m)
		}
	}
	if len(uniq) == 1 {
		return uniq[0]
	}
	return "[" + strings.Join(uniq, ", ") + "]"
}

// describe is kube-apiserver's description of the binding that allowed a
// request, naming its first subject that applies to u:
// `ClusterRoleBinding "name" of ClusterRole "r" to Group "g"`, or
// `RoleBinding "name/ns" of Role "r" to ServiceAccount "sa/ns"`.
func (b *binding) describe(u user.Info) string {
	subject := ""
	for _, s := range b.subjects {
		if applies(s, b.id.namespace, u) {
			name := s.Name
			if s.Kind == rbacv1.ServiceAccountKind {
				ns := s.Namespace
				if ns == "" {
					ns = b.id.namespace
				}
				name += "/" + ns
			}
			subject = fmt.Sprintf("%s %q", s.Kind, name)
			break
		}
	}
	if b.id.namespace == "" {
		return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.id.name, b.roleRef.Kind, b.roleRef.Name, subject)
	}
	return fmt.Sprintf("RoleBinding %q of %s %q to %s", b.id.name+"/"+b.id.namespace, b.roleRef.Kind, b.roleRef.Name, subject)
}

// applies reports whether subject s of a binding in namespace names u, as
// keyOf indexes it.
func applies(s rbacv1.Subject, namespace string, u user.Info) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return s.Name == u.GetName()
	case rbacv1.GroupKind:
		for _, g := range u.GetGroups() {
			if g == s.Name {
				return true
			}
		}
		return false
	}
	k, ok := keyOf(s, namespace)
	return ok && k == userKey(u.GetName())
}
