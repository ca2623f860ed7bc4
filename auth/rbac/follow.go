package rbac

import (
	"context"
	"fmt"

	"github.com/edgeapi/edgeapi/store"
)

// Lister is the part of the store Follow lists from (*store.DB).
type Lister interface {
	List(ctx context.Context, opts store.ListOptions) (store.ListResult, error)
}

// EventSource is the part of the watch cache Follow watches
// (*store.WatchCache).
type EventSource interface {
	Watch(ctx context.Context, resource, namespace string, afterRev int64) (*store.Watcher, error)
}

// Follow keeps the index equal to the store: it lists the RBAC resources
// at one revision into a fresh index, swaps it in, calls synced (when not
// nil) once the first list is in, and then applies every later event of
// the watch cache in revision order. When the watch ends (a compacted
// revision, a watcher too slow) it lists again. It returns ctx's error
// when ctx ends, or the first error listing or decoding.
func (a *Authorizer) Follow(ctx context.Context, db Lister, wc EventSource, synced func()) error {
	for {
		rev, err := a.relist(ctx, db)
		if err != nil {
			return err
		}
		if synced != nil {
			synced()
			synced = nil
		}
		// One watcher of every resource: HandleEvent skips other
		// resources before decoding anything.
		w, err := wc.Watch(ctx, "", "", rev)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		err = a.apply(ctx, w)
		w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// apply applies w's events until it ends; it returns nil when the watch
// ended (and should be relisted) and an error when an event does not
// decode.
func (a *Authorizer) apply(ctx context.Context, w *store.Watcher) error {
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return nil
		}
		if err := a.HandleEvent(ev.Event); err != nil {
			return err
		}
	}
}

// relist replaces the index with the RBAC objects of one revision and
// returns it.
func (a *Authorizer) relist(ctx context.Context, db Lister) (int64, error) {
	fresh := New()
	var rev int64
	for _, resource := range Resources {
		res, err := db.List(ctx, store.ListOptions{Resource: resource, Rev: rev})
		if err != nil {
			return 0, fmt.Errorf("list %s: %w", resource, err)
		}
		rev = res.Rev
		if err := fresh.Load(res.Objects); err != nil {
			return 0, err
		}
	}
	a.mu.Lock()
	a.roles, a.clusterRoles = fresh.roles, fresh.clusterRoles
	a.clusterBindings, a.bindings, a.subjectsOf = fresh.clusterBindings, fresh.bindings, fresh.subjectsOf
	a.unsafeForgetDecisionsLocked()
	a.mu.Unlock()
	return rev, nil
}
