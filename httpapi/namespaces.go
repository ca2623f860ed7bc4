package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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

// namespaceSweepInterval is how often terminating namespaces are looked at
// even without a kick. A var so tests can shorten it.
var namespaceSweepInterval = 5 * time.Second

func (s *Server) key(k *registry.Kind, namespace, name string) store.Key {
	if !k.Namespaced {
		namespace = ""
	}
	return store.Key{Resource: k.StorageResource, Namespace: namespace, Name: name}
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
			n.terminating[ev.Object.Key.Name] = hasDeletionTimestamp(ev.Object.Value)
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

func hasDeletionTimestamp(value []byte) bool {
	var m struct {
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return json.Unmarshal(value, &m) == nil && m.Metadata.DeletionTimestamp != nil
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
			s.namespaces.terminating[o.Key.Name] = hasDeletionTimestamp(o.Value)
		}
	}
	return nil
}

// namespaceAcceptsCreate refuses creates in a missing (404) or terminating
// (403) namespace, with kube-apiserver's wording.
func (s *Server) namespaceAcceptsCreate(ctx context.Context, k *registry.Kind, m metav1.Object) error {
	exists, terminating := s.namespaces.get(m.GetNamespace())
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

// kickNamespaces wakes the namespace controller after a namespace was
// marked for deletion.
func (s *Server) kickNamespaces(k *registry.Kind) {
	if k.Resource != "namespaces" {
		return
	}
	select {
	case s.nsKick <- struct{}{}:
	default:
	}
}

// runNamespaceController finalizes terminating namespaces until ctx ends.
func (s *Server) runNamespaceController(ctx context.Context) {
	t := time.NewTicker(namespaceSweepInterval)
	defer t.Stop()
	for {
		if err := s.finalizeNamespaces(ctx); err != nil && ctx.Err() == nil {
			s.log.Sugar().Warnw("finalize namespaces", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.nsKick:
		case <-t.C:
		}
	}
}

// finalizeNamespaces deletes the contents of every terminating namespace
// and removes the namespace once it is empty.
func (s *Server) finalizeNamespaces(ctx context.Context) error {
	nk := s.namespaceKind()
	res, err := s.cfg.Store.List(ctx, store.ListOptions{Resource: nk.StorageResource})
	if err != nil {
		return err
	}
	for _, o := range res.Objects {
		obj, err := nk.DecodeStored(o.Value)
		if err != nil {
			return err
		}
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		empty, err := s.emptyNamespace(ctx, ns.Name)
		if err != nil {
			return err
		}
		if !empty {
			// Objects with finalizers remain; look again soon.
			s.retryNamespacesSoon(ctx)
			continue
		}
		if err := s.removeNamespace(ctx, nk, ns.Name); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) retryNamespacesSoon(ctx context.Context) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
			select {
			case s.nsKick <- struct{}{}:
			default:
			}
		}
	}()
}

// emptyNamespace deletes every object in namespace; it reports whether
// nothing is left.
func (s *Server) emptyNamespace(ctx context.Context, namespace string) (bool, error) {
	empty := true
	seen := map[string]bool{}
	bg := metav1.DeletePropagationBackground
	for _, k := range s.cfg.Registry.Kinds() {
		if !k.Namespaced || seen[k.StorageResource] {
			continue
		}
		seen[k.StorageResource] = true
		res, err := s.cfg.Store.List(ctx, store.ListOptions{Resource: k.StorageResource, Namespace: namespace})
		if err != nil {
			return false, err
		}
		for _, o := range res.Objects {
			dr, err := s.deleteObject(ctx, k, namespace, o.Key.Name, &metav1.DeleteOptions{PropagationPolicy: &bg})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if !dr.deleted {
				empty = false
			}
		}
	}
	return empty, nil
}

// removeNamespace clears the "kubernetes" finalizer and deletes the
// namespace when no other finalizer holds it.
func (s *Server) removeNamespace(ctx context.Context, nk *registry.Kind, name string) error {
	key := s.key(nk, "", name)
	for {
		cur, err := s.cfg.Store.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		obj, err := nk.DecodeStored(cur.Value)
		if err != nil {
			return err
		}
		ns := obj.(*corev1.Namespace)
		ns.Spec.Finalizers = nil
		if len(ns.Finalizers) > 0 {
			value, err := nk.EncodeStorage(ns)
			if err != nil {
				return err
			}
			if _, err := s.cfg.Store.Update(ctx, key, store.Preconditions{ModRev: cur.ModRev}, value); errors.Is(err, store.ErrConflict) {
				continue
			} else if err != nil {
				return err
			}
			return nil
		}
		if _, err := s.cfg.Store.Delete(ctx, key, store.Preconditions{ModRev: cur.ModRev}); errors.Is(err, store.ErrConflict) {
			continue
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
}
