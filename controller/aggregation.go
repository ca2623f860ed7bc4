package controller

import (
	"context"
	"fmt"
	"reflect"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/auth/rbac"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// The ClusterRole aggregation controller, as kube-controller-manager's
// clusterrole-aggregation controller: the rules of a ClusterRole with an
// aggregationRule are the union of the rules of the ClusterRoles its
// selectors match (rbac.AggregateRules). Any committed write to a
// ClusterRole wakes it, and it rewrites every aggregated ClusterRole whose
// rules differ; it also sweeps every aggregationSweepInterval.
//
// kube-controller-manager writes with server-side apply; this controller
// updates, under the same field manager.

// ClusterRoleResource is what the aggregation controller reads.
var ClusterRoleResource = schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles"}

// aggregationManager is kube-controller-manager's field manager for
// aggregated rules.
const aggregationManager = "clusterrole-aggregation-controller"

// aggregationSweepInterval is how often aggregated roles are recomputed
// without a kick. A var so tests can shorten it.
var aggregationSweepInterval = 30 * time.Second

// kickAggregation wakes the aggregation controller.
func (m *Manager) kickAggregation() {
	select {
	case m.aggKick <- struct{}{}:
	default:
	}
}

// observeClusterRoles wakes the aggregation controller when a committed
// write touches a ClusterRole. It runs on the store's writer.
func (m *Manager) observeClusterRoles(events []store.Event) {
	k := m.cfg.Registry.Lookup(ClusterRoleResource)
	if k == nil {
		return
	}
	for i := range events {
		if events[i].Object.Key.Resource == k.StorageResource {
			m.kickAggregation()
			return
		}
	}
}

// runAggregationController keeps aggregated ClusterRoles current until ctx
// ends.
func (m *Manager) runAggregationController(ctx context.Context) {
	t := time.NewTicker(aggregationSweepInterval)
	defer t.Stop()
	for {
		if err := m.aggregate(ctx); err != nil && ctx.Err() == nil {
			m.log.Sugar().Warnw("aggregate cluster roles", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.aggKick:
		case <-t.C:
		}
	}
}

// aggregate rewrites the aggregated ClusterRoles whose rules are not the
// union of the roles their selectors match.
func (m *Manager) aggregate(ctx context.Context) error {
	k := m.cfg.Registry.Lookup(ClusterRoleResource)
	if k == nil {
		return nil
	}
	res, err := m.cfg.Store.List(ctx, store.ListOptions{Resource: k.StorageResource})
	if err != nil {
		return err
	}
	all := make([]rbacv1.ClusterRole, 0, len(res.Objects))
	for _, o := range res.Objects {
		obj, err := k.DecodeStored(o.Value)
		if err != nil {
			return err
		}
		if r, ok := obj.(*rbacv1.ClusterRole); ok {
			all = append(all, *r)
		}
	}
	var firstErr error
	for i := range all {
		role := &all[i]
		if role.AggregationRule == nil {
			continue
		}
		want := rbac.AggregateRules(role, all)
		if rulesEqual(role.Rules, want) {
			continue
		}
		if err := m.writeAggregated(ctx, k, role.Name, all); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("aggregate clusterrole %s: %w", role.Name, err)
		}
	}
	return firstErr
}

// writeAggregated sets the aggregated rules of the current state of the
// ClusterRole name (recomputed from all if its selectors changed meanwhile).
func (m *Manager) writeAggregated(ctx context.Context, k *registry.Kind, name string, all []rbacv1.ClusterRole) error {
	_, err := m.cfg.Objects.UpdateObject(ctx, k, "", name, "", aggregationManager, func(cur runtime.Object) (runtime.Object, error) {
		r, ok := cur.(*rbacv1.ClusterRole)
		if !ok {
			return nil, fmt.Errorf("unexpected object %T", cur)
		}
		if r.AggregationRule == nil {
			return r, nil
		}
		r.Rules = rbac.AggregateRules(r, all)
		return r, nil
	})
	return err
}

// rulesEqual compares rules as the controller's write would store them:
// an empty list and none are the same.
func rulesEqual(a, b []rbacv1.PolicyRule) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
