// Package controller runs edgeapi's control loops outside the HTTP layer,
// as kube-controller-manager runs them beside kube-apiserver: the garbage
// collector, namespace finalization, Event expiry and ClusterRole
// aggregation. Each is driven by
// the store: its watch, or its committed writes. They change objects
// through Objects, which gives them the API's deletion semantics
// (finalizers, propagation), or through the store for the metadata
// changes kube-controller-manager makes with patches.
package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/auth/rbac"
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
	// UpdateObject updates an object of kind k as a PUT of subresource by
	// manager would; fn computes the new state from a copy of the current
	// one and is called again after a conflict. deleted reports that the
	// update emptied the finalizers of an object being deleted, which
	// removed it. Errors are Status errors, NotFound included.
	UpdateObject(ctx context.Context, k *registry.Kind, namespace, name, subresource, manager string, fn func(cur runtime.Object) (runtime.Object, error)) (deleted bool, err error)
	// CreateObject creates obj, of kind k, as a POST by manager would.
	// Errors are Status errors, AlreadyExists included.
	CreateObject(ctx context.Context, k *registry.Kind, obj runtime.Object, manager string) error
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
	// CustomResourceKinds builds the kinds an established
	// CustomResourceDefinition serves, one per served version. When nil,
	// CRDs get their status but nothing is served for them.
	CustomResourceKinds func(crd *apiextensionsv1.CustomResourceDefinition) ([]*registry.Kind, error)
	// BootstrapRBAC reconciles the default ClusterRoles and
	// ClusterRoleBindings at start (see RBACBootstrapped), as
	// kube-apiserver does when RBAC authorizes.
	// RBAC, when set, is the RBAC authorizer: its index follows the
	// stored roles and bindings (see RBACSynced), and the default
	// ClusterRoles and ClusterRoleBindings are reconciled at start (see
	// RBACBootstrapped), as kube-apiserver does when RBAC authorizes.
	RBAC   *rbac.Authorizer
	Logger *zap.Logger
	// LeaderElection, when enabled, runs the controllers that write only
	// while this replica holds the controller Lease (see elector.go). The
	// zero value runs them at once: one process owns the store.
	LeaderElection LeaderElection
}

// Manager runs the controllers. Create it with New, run it with Start,
// stop it with Close.
type Manager struct {
	cfg Config
	log *zap.Logger
	// nsKick and crdKick (capacity 1) wake the namespace and CRD
	// controllers.
	nsKick  chan struct{}
	crdKick chan struct{}
	// aggKick (capacity 1) wakes the ClusterRole aggregation controller.
	aggKick chan struct{}
	// crdChanges holds the CRDs committed since the CRD loop last looked.
	crdChanges  crdChanges
	unsubscribe func()
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	// crdsServed is closed when the CRD controller has served the kinds
	// of every stored CRD once (see CRDsServed).
	crdsServed     chan struct{}
	crdsServedOnce sync.Once
	// rbacBootstrapped is closed once the RBAC bootstrap policy is
	// reconciled.
	rbacBootstrapped chan struct{}
	// rbacSynced is closed once the RBAC index holds the stored roles
	// and bindings.
	rbacSynced chan struct{}
	// rbacReady is closed once both are.
	rbacReady chan struct{}
	// gcHandled is the revision of the last event the garbage collector
	// handled (or the revision its watch started at); -1 before it
	// starts. See GCQueueDepth.
	gcHandled atomic.Int64

	// elector elects the replica that runs the writing controllers; nil
	// when Config.LeaderElection is off.
	elector *elector
	// leadMu guards leadCtx.
	leadMu sync.Mutex
	// leadCtx is the context of the current leadership: cancelled when
	// it ends; nil while this replica does not lead.
	leadCtx context.Context
}

// GCQueueDepth is the number of committed writes the garbage collector
// has not handled yet: the store's revision less that of the last event
// it handled (every revision is one event, and it watches them all); 0
// before it starts.
func (m *Manager) GCQueueDepth() int64 {
	h := m.gcHandled.Load()
	if h < 0 {
		return 0
	}
	return max(m.cfg.Store.Rev()-h, 0)
}

// New returns a Manager for cfg.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, nsKick: make(chan struct{}, 1), crdKick: make(chan struct{}, 1), aggKick: make(chan struct{}, 1), crdsServed: make(chan struct{}),
		rbacBootstrapped: make(chan struct{}), rbacSynced: make(chan struct{}), rbacReady: make(chan struct{})}
	m.gcHandled.Store(-1)
	return m
}

// CRDsServed reports whether the custom resources of every
// CustomResourceDefinition stored at start are served: it turns true once
// the CRD controller's first round has put their kinds in the registry
// (or found the CRD kind absent) and stays true. Like kube-apiserver's
// crd-informer-synced post-start hook, it keeps /readyz failing after a
// restart until requests for custom resources can be answered.
func (m *Manager) CRDsServed() bool {
	select {
	case <-m.crdsServed:
		return true
	default:
		return false
	}
}

// CRDsServedCh is closed when CRDsServed turns true.
func (m *Manager) CRDsServedCh() <-chan struct{} { return m.crdsServed }

// markCRDsServed makes CRDsServed true.
func (m *Manager) markCRDsServed() {
	m.crdsServedOnce.Do(func() { close(m.crdsServed) })
}

// Start runs the controllers until Close or ctx ends. What every replica
// needs to serve runs at once: the CRD loop (it serves the kinds of the
// stored CRDs; their status writes and cleanup wait for leadership), the
// RBAC index and the RBAC bootstrap (as kube-apiserver's
// rbac/bootstrap-roles hook, on every replica: it writes only what is
// missing, with compare-and-swap, once per start, and a replica of a
// newer version brings its own policy). The controllers that write run
// while this replica leads (see runLeading): at once without leader
// election, else while it holds the Lease. It fails only when leader
// election is configured wrongly.
func (m *Manager) Start(ctx context.Context) error {
	if m.cfg.LeaderElection.Enabled {
		e, err := newElector(m.cfg.LeaderElection, m.cfg.Store, m.cfg.Registry, m.log.Named("leader-election"))
		if err != nil {
			return err
		}
		m.elector = e
	}
	ctx, m.cancel = context.WithCancel(ctx)
	m.unsubscribe = m.cfg.Store.Subscribe(m.observe)
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		if m.elector == nil {
			m.runLeading(ctx)
			return
		}
		m.elector.run(ctx, m.runLeading)
	}()
	go func() {
		defer m.wg.Done()
		m.runCRDController(ctx)
	}()
	if m.cfg.RBAC != nil {
		m.wg.Add(2)
		go func() {
			defer m.wg.Done()
			m.runRBACBootstrap(ctx)
		}()
		go func() {
			defer m.wg.Done()
			m.followRBAC(ctx)
		}()
	}
	return nil
}

// runLeading runs the controllers that write until ctx (the leadership)
// ends, and waits for them: the garbage collector, namespace
// finalization, Event expiry and ClusterRole aggregation; and it lets the
// CRD loop write statuses meanwhile.
func (m *Manager) runLeading(ctx context.Context) {
	m.leadMu.Lock()
	m.leadCtx = ctx
	m.leadMu.Unlock()
	defer func() {
		m.leadMu.Lock()
		m.leadCtx = nil
		m.leadMu.Unlock()
		m.gcHandled.Store(-1)
	}()
	// The CRD loop has statuses to write now.
	m.kickCRDs()
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
		}()
	}
	run(m.runAggregationController)
	run(func(ctx context.Context) { newGarbageCollector(m).run(ctx) })
	run(m.runNamespaceController)
	run(m.runEventExpiry)
	wg.Wait()
}

// leadContext returns the context of the current leadership, nil when
// this replica does not lead.
func (m *Manager) leadContext() context.Context {
	m.leadMu.Lock()
	defer m.leadMu.Unlock()
	return m.leadCtx
}

// Leading reports whether this replica runs the controllers that write:
// always without leader election, else while it holds the Lease.
func (m *Manager) Leading() bool {
	return m.elector == nil || m.elector.isLeading()
}

// observe wakes the controllers that committed writes concern. It runs on
// the store's writer: it only sends kicks and notes the CRDs written.
func (m *Manager) observe(events []store.Event) {
	m.observeNamespaces(events)
	m.observeClusterRoles(events)
	crds := m.cfg.Registry.Lookup(CRDResource)
	if crds == nil {
		return
	}
	if m.crdChanges.record(events, crds.StorageResource) {
		m.kickCRDs()
	}
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
