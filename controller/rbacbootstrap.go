package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/auth/rbac/bootstrap"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// The RBAC bootstrap, as kube-apiserver's rbac/bootstrap-roles post-start
// hook: at every start the default ClusterRoles and ClusterRoleBindings
// (bootstrap.Load) are created when missing and reconciled when present,
// adding what they lack and removing nothing, so that a user's additions
// stay. Objects annotated rbac.authorization.kubernetes.io/autoupdate=false
// are left alone. It runs once, retrying until it succeeds.

// ClusterRoleBindingResource is what the RBAC bootstrap writes besides
// ClusterRoles.
var ClusterRoleBindingResource = schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterrolebindings"}

// bootstrapManager is the field manager of the bootstrap's writes, as in
// kube-apiserver.
const bootstrapManager = "kube-apiserver"

// bootstrapRetry is how long the RBAC bootstrap waits after a failure.
var bootstrapRetry = time.Second

// RBACBootstrapped reports whether the RBAC bootstrap policy has been
// reconciled since start (always false without Config.RBAC).
// /readyz reports it as poststarthook/rbac/bootstrap-roles.
func (m *Manager) RBACBootstrapped() bool {
	select {
	case <-m.rbacBootstrapped:
		return true
	default:
		return false
	}
}

// runRBACBootstrap reconciles the bootstrap policy, retrying until it
// succeeds or ctx ends.
func (m *Manager) runRBACBootstrap(ctx context.Context) {
	for {
		err := m.reconcileRBACBootstrap(ctx)
		if err == nil {
			close(m.rbacBootstrapped)
			select {
			case <-m.rbacSynced:
				close(m.rbacReady)
			case <-ctx.Done():
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		m.log.Sugar().Warnw("reconcile bootstrap rbac policy; retrying", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(bootstrapRetry):
		}
	}
}

// reconcileRBACBootstrap reconciles every object of the bootstrap policy
// once.
func (m *Manager) reconcileRBACBootstrap(ctx context.Context) error {
	policy, err := bootstrap.Load()
	if err != nil {
		return err
	}
	roles := m.cfg.Registry.Lookup(ClusterRoleResource)
	bindings := m.cfg.Registry.Lookup(ClusterRoleBindingResource)
	if roles == nil || bindings == nil {
		return errors.New("rbac kinds are not served")
	}
	for i := range policy.ClusterRoles {
		want := &policy.ClusterRoles[i]
		if err := m.reconcileClusterRole(ctx, roles, want); err != nil {
			return fmt.Errorf("reconcile clusterrole %s: %w", want.Name, err)
		}
	}
	for i := range policy.ClusterRoleBindings {
		want := &policy.ClusterRoleBindings[i]
		if err := m.reconcileClusterRoleBinding(ctx, bindings, want); err != nil {
			return fmt.Errorf("reconcile clusterrolebinding %s: %w", want.Name, err)
		}
	}
	return nil
}

func (m *Manager) reconcileClusterRole(ctx context.Context, k *registry.Kind, want *rbacv1.ClusterRole) error {
	cur, err := m.getTyped(ctx, k, want.Name)
	if err != nil {
		return err
	}
	if cur == nil {
		err := m.cfg.Objects.CreateObject(ctx, k, want.DeepCopy(), bootstrapManager)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if have, ok := cur.(*rbacv1.ClusterRole); ok && bootstrap.ReconcileClusterRole(have, want) == nil {
		return nil
	}
	_, err = m.cfg.Objects.UpdateObject(ctx, k, "", want.Name, "", bootstrapManager, func(cur runtime.Object) (runtime.Object, error) {
		have, ok := cur.(*rbacv1.ClusterRole)
		if !ok {
			return nil, fmt.Errorf("unexpected object %T", cur)
		}
		if out := bootstrap.ReconcileClusterRole(have, want); out != nil {
			return out, nil
		}
		return have, nil
	})
	return err
}

func (m *Manager) reconcileClusterRoleBinding(ctx context.Context, k *registry.Kind, want *rbacv1.ClusterRoleBinding) error {
	obj, err := m.getTyped(ctx, k, want.Name)
	if err != nil {
		return err
	}
	var have *rbacv1.ClusterRoleBinding
	if obj != nil {
		var ok bool
		if have, ok = obj.(*rbacv1.ClusterRoleBinding); !ok {
			return fmt.Errorf("unexpected object %T", obj)
		}
	}
	out, recreate := bootstrap.ReconcileClusterRoleBinding(have, want)
	switch {
	case out == nil:
		return nil
	case have != nil && !recreate:
		_, err := m.cfg.Objects.UpdateObject(ctx, k, "", want.Name, "", bootstrapManager, func(cur runtime.Object) (runtime.Object, error) {
			have, ok := cur.(*rbacv1.ClusterRoleBinding)
			if !ok {
				return nil, fmt.Errorf("unexpected object %T", cur)
			}
			if out, recreate := bootstrap.ReconcileClusterRoleBinding(have, want); out != nil && !recreate {
				return out, nil
			}
			return have, nil
		})
		return err
	case recreate:
		uid := have.UID
		if _, err := m.cfg.Objects.DeleteObject(ctx, k, "", want.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	out.ResourceVersion, out.UID = "", ""
	return m.cfg.Objects.CreateObject(ctx, k, out, bootstrapManager)
}

// getTyped reads the cluster-scoped object name of kind k; nil when it does
// not exist.
func (m *Manager) getTyped(ctx context.Context, k *registry.Kind, name string) (runtime.Object, error) {
	o, err := m.cfg.Store.Get(ctx, k.StoreKey("", name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return k.DecodeStored(o.Value)
}

// RBACSynced reports whether the RBAC index has listed the stored roles
// and bindings since start (always false without Config.RBAC). Until then
// every user outside system:masters is refused.
func (m *Manager) RBACSynced() bool {
	select {
	case <-m.rbacSynced:
		return true
	default:
		return false
	}
}

// followRBAC keeps the RBAC index equal to the store until ctx ends,
// starting over after an error.
func (m *Manager) followRBAC(ctx context.Context) {
	var once sync.Once
	synced := func() { once.Do(func() { close(m.rbacSynced) }) }
	for {
		err := m.cfg.RBAC.Follow(ctx, m.cfg.Store, m.cfg.WatchCache, synced)
		if ctx.Err() != nil {
			return
		}
		m.log.Sugar().Warnw("follow rbac roles and bindings; relisting", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(bootstrapRetry):
		}
	}
}

// RBACReadyCh is closed once the RBAC index is synced and the bootstrap
// policy reconciled; it is never closed without Config.RBAC.
func (m *Manager) RBACReadyCh() <-chan struct{} { return m.rbacReady }
