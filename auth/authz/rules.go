package authz

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// PolicyRules lists the RBAC rules that apply to a user in a namespace
// (cluster-wide ones only when namespace is empty), and the messages of
// the role references that did not resolve: (*rbac.Authorizer).RulesFor.
type PolicyRules interface {
	RulesFor(u user.Info, namespace string) ([]rbacv1.PolicyRule, []string)
}

// NewRuleResolver returns the rule resolver of modes, for
// SelfSubjectRulesReview, as kube-apiserver builds it beside the
// authorizer: the rules of each mode in order, their errors aggregated,
// incomplete when one is. RBAC lists the rules bound to the user,
// AlwaysAllow one rule for everything, AlwaysDeny none. The members of
// system:masters get no rules of their own: they see what RBAC binds to
// them (the cluster-admin binding). rbac is used when modes has ModeRBAC.
func NewRuleResolver(modes []string, rbac PolicyRules) (authorizer.RuleResolver, error) {
	var u unionRules
	for _, m := range modes {
		switch m {
		case ModeRBAC:
			if rbac == nil {
				return nil, fmt.Errorf("authorization mode %s: no RBAC rules", m)
			}
			u = append(u, rbacRules{rbac})
		case ModeAlwaysAllow:
			u = append(u, AlwaysAllowRules{})
		case ModeAlwaysDeny:
			u = append(u, alwaysDenyRules{})
		default:
			return nil, fmt.Errorf("unknown authorization mode %q", m)
		}
	}
	return u, nil
}

// unionRules concatenates the rules of its resolvers, as kube-apiserver's
// union of rule resolvers does.
type unionRules []authorizer.RuleResolver

// RulesFor implements authorizer.RuleResolver.
func (u unionRules) RulesFor(ctx context.Context, usr user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var (
		resourceRules    []authorizer.ResourceRuleInfo
		nonResourceRules []authorizer.NonResourceRuleInfo
		incomplete       bool
		errs             []error
	)
	for _, r := range u {
		rr, nr, inc, err := r.RulesFor(ctx, usr, namespace)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
		resourceRules = append(resourceRules, rr...)
		nonResourceRules = append(nonResourceRules, nr...)
	}
	return resourceRules, nonResourceRules, incomplete, utilerrors.NewAggregate(errs)
}

// rbacRules turns RBAC policy rules into rule infos as kube-apiserver's
// RBAC authorizer does: a rule with resources gives a resource rule, one
// with non-resource URLs a non-resource rule, and one with neither
// nothing. It is never incomplete.
type rbacRules struct{ rbac PolicyRules }

// RulesFor implements authorizer.RuleResolver.
func (r rbacRules) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, msgs := r.rbac.RulesFor(u, namespace)
	var (
		resourceRules    []authorizer.ResourceRuleInfo
		nonResourceRules []authorizer.NonResourceRuleInfo
	)
	for _, p := range rules {
		if len(p.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: p.Verbs, APIGroups: p.APIGroups, Resources: p.Resources, ResourceNames: p.ResourceNames,
			})
		}
		if len(p.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: p.Verbs, NonResourceURLs: p.NonResourceURLs,
			})
		}
	}
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		errs[i] = errors.New(m)
	}
	return resourceRules, nonResourceRules, false, utilerrors.NewAggregate(errs)
}

// AlwaysAllowRules is the rule resolver of AlwaysAllow: one rule for
// every resource and one for every non-resource URL.
type AlwaysAllowRules struct{}

// RulesFor implements authorizer.RuleResolver.
func (AlwaysAllowRules) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		false, nil
}

// alwaysDenyRules is AlwaysDeny's: no rules.
type alwaysDenyRules struct{}

// RulesFor implements authorizer.RuleResolver.
func (alwaysDenyRules) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}
