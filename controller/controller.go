// Package controller runs edgeapi's control loops outside the HTTP layer,
// as kube-controller-manager runs them beside kube-apiserver: the garbage
// collector, namespace finalization and Event expiry. Each is driven by
// the store: its watch, or its committed writes. They change objects
// through Objects, which gives them the API's deletion semantics
// (finalizers, propagation), or through the store for the metadata
// changes kube-controller-manager makes with patches.
package controller

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// DefaultEventTTL is how long Events live when Config.EventTTL is zero,
// like kube-apiserver's --event-ttl.
const DefaultEventTTL = time.Hour

// Objects is what the controllers need from the API layer.
type Objects interface {
	// DeleteObject deletes an object of kind k as a DELETE request with opts
	// would: while finalizers hold it, it is only marked
	// (deletionTimestamp), and dependents are handled as opts'
	// propagation policy says. deleted reports that the object is gone.
	// Errors are Status errors (apierrors), NotFound included.
	DeleteObject(ctx context.Context, k *registry.Kind, namespace, name string, opts *metav1.DeleteOptions) (deleted bool, err error)
}

// Config configures the controllers. Store, Registry, Objects and
// WatchCache are required.
type Config struct {
	Store    store.Store
	Registry *registry.Registry
	Objects  Objects
	// WatchCache feeds the garbage collector's watch.
	WatchCache *store.WatchCache
	// EventTTL is how long Events live (DefaultEventTTL when zero).
	EventTTL time.Duration
	Logger   *zap.Logger
}

// Manager runs the controllers. Create it with New, run it with Start,
// stop it with Close.
type Manager struct {
	cfg Config
	log *zap.Logger
	// nsKick (capacity 1) wakes the namespace controller.
	nsKick      chan struct{}
	unsubscribe func()
	cancel      context.CancelFunc
	wg          sync.WaitGroup
}

// New returns a Manager for cfg.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	return &Manager{cfg: cfg, log: cfg.Logger, nsKick: make(chan struct{}, 1)}
}

// Start runs the controllers until Close or ctx ends.
func (m *Manager) Start(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(ctx)
	m.unsubscribe = m.cfg.Store.Subscribe(m.observeNamespaces)
	m.wg.Add(3)
	go func() {
		defer m.wg.Done()
		newGarbageCollector(m).run(ctx)
	}()
	go func() {
		defer m.wg.Done()
		m.runNamespaceController(ctx)
	}()
	go func() {
		defer m.wg.Done()
		m.runEventExpiry(ctx)
	}()
}

// Close stops the controllers and waits for them.
func (m *Manager) Close() {
	if m.cancel != nil {
		m.cancel()
	}
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
	m.wg.Wait()
}
