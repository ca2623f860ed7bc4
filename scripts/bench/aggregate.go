package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// kube-apiserver alone (no kube-controller-manager, as scripts/kube-ref-start
// runs it) leaves the aggregated ClusterRoles (admin, edit, view) without
// rules: their rules are filled in by the controller manager's
// clusterrole-aggregation controller. A user bound to edit there may do
// nothing. aggregateEdit does that controller's work once for the edit
// ClusterRole the bench binds its RBAC user to, so that the user has on
// kube-apiserver the rules it has on edgeapi and on a full control plane.

// aggregatedRules returns the rules of ClusterRole name among roles: its
// own, or for an aggregated role the rules of every role its selectors
// match, themselves aggregated, without repeats and in a stable order.
func aggregatedRules(roles []rbacv1.ClusterRole, name string) ([]rbacv1.PolicyRule, error) {
	byName := map[string]*rbacv1.ClusterRole{}
	for i := range roles {
		byName[roles[i].Name] = &roles[i]
	}
	var visit func(name string, path map[string]bool) ([]rbacv1.PolicyRule, error)
	visit = func(name string, path map[string]bool) ([]rbacv1.PolicyRule, error) {
		r := byName[name]
		if r == nil {
			return nil, fmt.Errorf("aggregate clusterrole %s: not found", name)
		}
		if r.AggregationRule == nil {
			return r.Rules, nil
		}
		if path[name] {
			return nil, fmt.Errorf("aggregate clusterrole %s: aggregation cycle", name)
		}
		path[name] = true
		defer delete(path, name)
		var out []rbacv1.PolicyRule
		seen := map[string]bool{}
		for _, sel := range r.AggregationRule.ClusterRoleSelectors {
			s := labels.SelectorFromSet(sel.MatchLabels)
			for i := range roles {
				o := &roles[i]
				if o.Name == name || !s.Matches(labels.Set(o.Labels)) {
					continue
				}
				rules, err := visit(o.Name, path)
				if err != nil {
					return nil, err
				}
				for _, rule := range rules {
					key, _ := json.Marshal(rule)
					if !seen[string(key)] {
						seen[string(key)] = true
						out = append(out, rule)
					}
				}
			}
		}
		return out, nil
	}
	return visit(name, map[string]bool{})
}

// aggregateEdit fills the rules of the server's edit ClusterRole from the
// roles it aggregates, when it has none.
func (b *bench) aggregateEdit(ctx context.Context) error {
	const path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	code, body, err := b.c.doSimple(ctx, http.MethodGet, path, "")
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("list clusterroles: HTTP %d %v: %.300s", code, err, body)
	}
	var list rbacv1.ClusterRoleList
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("list clusterroles: %w", err)
	}
	var edit *rbacv1.ClusterRole
	for i := range list.Items {
		if list.Items[i].Name == "edit" {
			edit = &list.Items[i]
		}
	}
	if edit == nil {
		return fmt.Errorf("aggregate clusterrole edit: not found")
	}
	if len(edit.Rules) > 0 || edit.AggregationRule == nil {
		return nil
	}
	rules, err := aggregatedRules(list.Items, "edit")
	if err != nil {
		return err
	}
	edit.Rules = rules
	edit.APIVersion, edit.Kind = "rbac.authorization.k8s.io/v1", "ClusterRole"
	put, err := json.Marshal(edit)
	if err != nil {
		return err
	}
	code, body, err = b.c.doSimple(ctx, http.MethodPut, path+"/edit", string(put))
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("update clusterrole edit: HTTP %d %v: %.300s", code, err, bytes.TrimSpace(body))
	}
	b.logf("tls: filled the aggregated ClusterRole edit with %d rules (no kube-controller-manager to aggregate them)", len(rules))
	return nil
}
