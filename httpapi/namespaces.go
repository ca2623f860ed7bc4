package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Namespace lifecycle, done by edgeapi itself since there is no
// kube-controller-manager: system namespaces exist from the first start,
// creates in a missing or terminating namespace are refused, and a deleted
// namespace is emptied and then removed.

// bootstrapNamespaces exist from the first start.
var bootstrapNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

func (s *Server) key(k *registry.Kind, namespace, name string) store.Key {
	return k.StoreKey(namespace, name)
}

func (s *Server) namespaceKind() *registry.Kind {
	return s.cfg.Registry.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
}

// ensureBootstrapNamespaces creates the system namespaces that are missing.
func (s *Server) ensureBootstrapNamespaces(ctx context.Context) error {
	nk := s.namespaceKind()
	for _, name := range bootstrapNamespaces {
		if _, err := s.cfg.Store.Get(ctx, s.key(nk, "", name)); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("read namespace %s: %w", name, err)
		}
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
		r := &request{kind: nk}
		if _, _, err := s.createObject(ctx, r, ns, "edgeapi", false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
}

// namespaceStates mirrors which namespaces exist and which are
// terminating, kept current by the commit path (Subscribe runs before
// writers are answered, so a create that follows an acknowledged namespace
// write always sees it).
type namespaceStates struct {
	// mu guards terminating.
	mu sync.RWMutex
	// terminating maps each existing namespace to whether it has a
	// deletionTimestamp.
	terminating map[string]bool
}

// observe applies committed namespace events.
func (n *namespaceStates) observe(events []store.Event) {
	for i := range events {
		ev := &events[i]
		if ev.Object.Key.Resource != "namespaces" {
			continue
		}
		n.mu.Lock()
		if ev.Type == store.Deleted {
			delete(n.terminating, ev.Object.Key.Name)
		} else {
			n.terminating[ev.Object.Key.Name] = registry.HasDeletionTimestamp(ev.Object.Value)
		}
		n.mu.Unlock()
	}
}

func (n *namespaceStates) get(name string) (exists, terminating bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	t, ok := n.terminating[name]
	return ok, t
}

// loadNamespaces fills the namespace states from the store. Called once,
// after subscribing, so no event is missed.
func (s *Server) loadNamespaces(ctx context.Context) error {
	res, err := s.cfg.Store.List(ctx, store.ListOptions{Resource: "namespaces"})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	s.namespaces.mu.Lock()
	defer s.namespaces.mu.Unlock()
	for _, o := range res.Objects {
		if _, seen := s.namespaces.terminating[o.Key.Name]; !seen {
			s.namespaces.terminating[o.Key.Name] = registry.HasDeletionTimestamp(o.Value)
		}
	}
	return nil
}

// namespaceAcceptsCreate refuses creates in a missing (404) or terminating
// (403) namespace, with kube-apiserver's wording. The mirror answers when
// it accepts. Before it refuses, the store is asked (a linearizable read
// on etcd): another replica may have created the namespace, or deleted
// and created it again, and its events may not have reached this
// replica's mirror yet. On SQLite the mirror is exact and the read only
// costs a refused create one Get.
func (s *Server) namespaceAcceptsCreate(ctx context.Context, k *registry.Kind, m metav1.Object) error {
	exists, terminating := s.namespaces.get(m.GetNamespace())
	if !exists || terminating {
		var err error
		if exists, terminating, err = s.readNamespace(ctx, m.GetNamespace()); err != nil {
			return err
		}
	}
	if !exists {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, m.GetNamespace())
	}
	if terminating {
		name := m.GetName()
		if name == "" {
			name = m.GetGenerateName()
		}
		err := apierrors.NewForbidden(schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}, name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", m.GetNamespace()))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", m.GetNamespace()),
			Field:   "metadata.namespace",
		})
		return err
	}
	return nil
}

// readNamespace reads namespace name from the store. The mirror is left to
// the watch: an answer written into it could be older than an event it
// gets meanwhile.
func (s *Server) readNamespace(ctx context.Context, name string) (exists, terminating bool, err error) {
	o, err := s.cfg.Store.Get(ctx, s.key(s.namespaceKind(), "", name))
	if errors.Is(err, store.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return true, registry.HasDeletionTimestamp(o.Value), nil
}

// markNamespace marks a Namespace for deletion: deletionTimestamp and
// phase Terminating. It stays while it has spec or metadata finalizers.
func markNamespace(obj runtime.Object, finalizers []string) (marked, changed bool) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return false, false
	}
	if len(finalizers) != len(ns.Finalizers) {
		ns.Finalizers = finalizers
		changed = true
	}
	if ns.DeletionTimestamp == nil {
		now := metav1.Now().Rfc3339Copy()
		ns.DeletionTimestamp = &now
		ns.Status.Phase = corev1.NamespaceTerminating
		changed = true
	}
	if len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 {
		return false, false
	}
	return true, changed
}
