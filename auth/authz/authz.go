// Package authz builds the authorizer of kube-apiserver's
// --authorization-mode: the members of system:masters first, then each
// mode in order, the first that allows or denies deciding.
package authz

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Mode names, as kube-apiserver spells them.
const (
	ModeRBAC        = "RBAC"
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// alwaysDenyReason is kube-apiserver's reason for AlwaysDeny.
const alwaysDenyReason = "Everything is forbidden."

// New returns the authorizer for modes. rbac is the RBAC authorizer, used
// when modes has ModeRBAC.
func New(modes []string, rbac authorizer.Authorizer) (authorizer.Authorizer, error) {
	u := Union{PrivilegedGroups{user.SystemPrivilegedGroup}}
	for _, m := range modes {
		switch m {
		case ModeRBAC:
			if rbac == nil {
				return nil, fmt.Errorf("authorization mode %s: no RBAC authorizer", m)
			}
			u = append(u, rbac)
		case ModeAlwaysAllow:
			u = append(u, authorizer.AuthorizerFunc(alwaysAllow))
		case ModeAlwaysDeny:
			u = append(u, authorizer.AuthorizerFunc(alwaysDeny))
		default:
			return nil, fmt.Errorf("unknown authorization mode %q", m)
		}
	}
	return u, nil
}

func alwaysAllow(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// alwaysDeny has no opinion, as kube-apiserver's AlwaysDeny: the request
// is refused unless a later mode allows it.
func alwaysDeny(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, alwaysDenyReason, nil
}

// PrivilegedGroups allows every request of a member of one of its groups
// and has no opinion on the others.
type PrivilegedGroups []string

// Authorize implements authorizer.Authorizer.
func (p PrivilegedGroups) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if u := a.GetUser(); u != nil {
		for _, g := range u.GetGroups() {
			for _, want := range p {
				if g == want {
					return authorizer.DecisionAllow, "", nil
				}
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// QuietAuthorizer is an authorizer that can decide without the reason of
// an allowed decision, which the request path discards (see
// rbac.Authorizer.AuthorizeQuiet).
type QuietAuthorizer interface {
	AuthorizeQuiet(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

// AuthorizeQuiet is Authorize, asking each member that is a
// QuietAuthorizer with AuthorizeQuiet.
func (u Union) AuthorizeQuiet(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return u.authorize(ctx, a, true)
}

// Union asks its authorizers in order; the first that allows or denies
// decides. When none does, it has no opinion, with their reasons joined
// by newlines (and their errors, if any), as kube-apiserver's union does.
type Union []authorizer.Authorizer

// Authorize implements authorizer.Authorizer.
func (u Union) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return u.authorize(ctx, a, false)
}

func (u Union) authorize(ctx context.Context, a authorizer.Attributes, quiet bool) (authorizer.Decision, string, error) {
	var reasons []string
	var errs []string
	for _, z := range u {
		var d authorizer.Decision
		var reason string
		var err error
		if q, ok := z.(QuietAuthorizer); ok && quiet {
			d, reason, err = q.AuthorizeQuiet(ctx, a)
		} else {
			d, reason, err = z.Authorize(ctx, a)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if d == authorizer.DecisionAllow || d == authorizer.DecisionDeny {
			return d, reason, err
		}
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, strings.Join(reasons, "\n"), fmt.Errorf("%s", strings.Join(errs, ", "))
	}
	return authorizer.DecisionNoOpinion, strings.Join(reasons, "\n"), nil
}
