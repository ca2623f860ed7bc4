package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/store"
)

// Events expire a TTL after their last write, like kube-apiserver's
// --event-ttl (there, an etcd lease renewed on every write).

// eventLastWrite is the time of an Event's last write: the latest
// managedFields time, else its creation time.
func eventLastWrite(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, mf := range ev.ManagedFields {
		if mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

// runEventExpiry deletes expired Events until ctx ends, checking every
// tenth of the TTL (at least every second, at most every minute).
func (m *Manager) runEventExpiry(ctx context.Context) {
	every := m.cfg.EventTTL / 10
	if every < time.Second {
		every = time.Second
	}
	if every > time.Minute {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := m.expireEvents(ctx, time.Now()); err != nil && ctx.Err() == nil {
				m.log.Sugar().Warnw("expire events", "error", err)
			}
		}
	}
}

func (m *Manager) expireEvents(ctx context.Context, now time.Time) error {
	k := m.cfg.Registry.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "events"})
	if k == nil {
		return nil
	}
	res, err := m.cfg.Store.List(ctx, store.ListOptions{Resource: k.StorageResource})
	if err != nil {
		return err
	}
	for _, o := range res.Objects {
		obj, err := k.DecodeStored(o.Value)
		if err != nil {
			continue
		}
		ev, ok := obj.(*corev1.Event)
		if !ok || now.Sub(eventLastWrite(ev)) < m.cfg.EventTTL {
			continue
		}
		bg := metav1.DeletePropagationBackground
		if _, err := m.cfg.Objects.DeleteObject(ctx, k, o.Key.Namespace, o.Key.Name, &metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			m.log.Sugar().Debugw("expire event", "namespace", o.Key.Namespace, "name", o.Key.Name, "error", err)
		}
	}
	return nil
}
