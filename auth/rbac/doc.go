// Package rbac decides requests with kube-apiserver's RBAC rule semantics
// from an in-memory index of Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings.
//
// The index is fed one object at a time (Apply, Delete, or HandleEvent
// with the store's change events, as the watch cache delivers them), so a
// request never reads the store and never scans every binding: bindings
// are indexed by subject (a user name, a group name; a ServiceAccount
// subject is indexed under the user name its tokens authenticate as,
// "system:serviceaccount:<namespace>:<name>"), and a request looks up its
// user and each of its groups, cluster-wide and in the request's
// namespace.
//
// The rule matching is kube-apiserver's (plugin/pkg/auth/authorizer/rbac
// and pkg/apis/rbac/v1 evaluation helpers), rewritten here: verbs and API
// groups match exactly or by "*"; resources match "*", the exact
// "resource" or "resource/subresource", or "*/subresource"; resourceNames,
// when set, must hold the request's name; non-resource URLs match exactly,
// by "*", or by a prefix ending in "*". Members of system:masters are
// allowed everything, as kube-apiserver's privileged-group authorizer
// (always in front of RBAC) allows them.
package rbac
