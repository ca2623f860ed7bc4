package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Leader election, for several replicas on one etcd: the controllers that
// write (garbage collector, namespace finalization, Event expiry,
// ClusterRole aggregation, the CRD status writes and cleanup) run on the
// replica that holds the Lease kube-system/edgeapi-controller-manager, as
// kube-controller-manager's run on the holder of
// kube-system/kube-controller-manager. The algorithm is client-go's
// leaderelection, written anew over the store:
//   - a candidate reads the Lease every RetryPeriod and takes it when it is
//     free (no holder) or expired: its holder has not renewed it for
//     leaseDurationSeconds, as measured on the candidate's own clock since
//     it last saw the Lease change (so clock skew between replicas does
//     not matter);
//   - the holder renews it every RetryPeriod and stops leading when a
//     renewal has not succeeded for RenewDeadline, or another holder is
//     found;
//   - every write is a compare-and-swap on the Lease's revision (Create,
//     or Update with a ModRev precondition), so of two candidates only one
//     wins;
//   - on shutdown the holder releases the Lease (no holder, a duration of
//     one second) so that another replica takes over at its next try.
// The Lease is written through the store, not over HTTP: it has no
// managedFields, like the leases kube-controller-manager writes through
// its own client would have, but is otherwise an ordinary Lease that
// kubectl reads.

// Leader election defaults: kube-controller-manager's
// (--leader-elect-lease-duration, --leader-elect-renew-deadline,
// --leader-elect-retry-period).
const (
	DefaultLeaseNamespace = "kube-system"
	DefaultLeaseName      = "edgeapi-controller-manager"
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
)

// LeaseResource is the kind of the election's Lease.
var LeaseResource = schema.GroupVersionResource{Group: coordinationv1.GroupName, Version: "v1", Resource: "leases"}

// LeaderElection configures the election of the replica that runs the
// controllers. The zero value runs them at once and writes no Lease: one
// process owns the store (SQLite), and a Lease renewed every two seconds
// would only wear the flash.
type LeaderElection struct {
	// Enabled elects: several replicas share the store (etcd).
	Enabled bool
	// Identity is this replica's holderIdentity (DefaultIdentity when
	// empty). It must differ between replicas.
	Identity string
	// Namespace and Name name the Lease (DefaultLeaseNamespace and
	// DefaultLeaseName when empty).
	Namespace, Name string
	// LeaseDuration is how long a Lease not renewed stays with its
	// holder; RenewDeadline is how long the holder keeps leading while
	// its renewals fail; RetryPeriod is how often candidates try and the
	// holder renews. Zero means the Default… value; RenewDeadline must be
	// below LeaseDuration and above RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// withDefaults returns le with the zero fields set.
func (le LeaderElection) withDefaults() LeaderElection {
	if le.Identity == "" {
		le.Identity = DefaultIdentity()
	}
	if le.Namespace == "" {
		le.Namespace = DefaultLeaseNamespace
	}
	if le.Name == "" {
		le.Name = DefaultLeaseName
	}
	if le.LeaseDuration == 0 {
		le.LeaseDuration = DefaultLeaseDuration
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = DefaultRenewDeadline
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = DefaultRetryPeriod
	}
	return le
}

// Validate checks the timings as client-go does.
func (le LeaderElection) Validate() error {
	le = le.withDefaults()
	if le.LeaseDuration <= le.RenewDeadline {
		return fmt.Errorf("invalid leader election timings: lease duration %v must be greater than renew deadline %v", le.LeaseDuration, le.RenewDeadline)
	}
	if le.RenewDeadline <= le.RetryPeriod {
		return fmt.Errorf("invalid leader election timings: renew deadline %v must be greater than retry period %v", le.RenewDeadline, le.RetryPeriod)
	}
	if le.LeaseDuration < time.Second {
		return fmt.Errorf("invalid leader election timings: lease duration %v is below a second (leaseDurationSeconds)", le.LeaseDuration)
	}
	return nil
}

// DefaultIdentity is kube-controller-manager's: the host name, "_", and a
// random UUID, so that a restarted replica is a new candidate.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "edgeapi"
	}
	return host + "_" + uuid.NewString()
}

// elector runs the election for one replica. Only its run goroutine uses
// observed and observedAt.
type elector struct {
	cfg  LeaderElection
	st   store.Store
	kind *registry.Kind
	key  store.Key
	log  *zap.Logger
	// now is the clock (a var in tests).
	now func() time.Time

	// observedRev is the Lease revision last read or written, and
	// observedAt the local time it was first seen.
	observedRev int64
	observedAt  time.Time

	// mu guards leading.
	mu      sync.Mutex
	leading bool
}

// newElector returns the elector of cfg over st; the registry must serve
// Leases.
func newElector(cfg LeaderElection, st store.Store, reg *registry.Registry, log *zap.Logger) (*elector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	k := reg.Lookup(LeaseResource)
	if k == nil {
		return nil, errors.New("elect leader: leases are not served")
	}
	return &elector{cfg: cfg, st: st, kind: k, key: k.StoreKey(cfg.Namespace, cfg.Name), log: log, now: time.Now}, nil
}

// isLeading reports whether this replica holds the Lease.
func (e *elector) isLeading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

func (e *elector) setLeading(v bool) {
	e.mu.Lock()
	e.leading = v
	e.mu.Unlock()
}

// run campaigns until ctx ends. Each time it acquires the Lease it calls
// lead with a context that is cancelled when leadership is lost, and
// waits for lead to return before it campaigns again. When ctx ends it
// releases a Lease it holds.
func (e *elector) run(ctx context.Context, lead func(ctx context.Context)) {
	for {
		if !e.acquire(ctx) {
			return
		}
		e.setLeading(true)
		e.log.Info("became leader: starting the controllers", zap.String("lease", e.cfg.Namespace+"/"+e.cfg.Name), zap.String("identity", e.cfg.Identity))
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			lead(lctx)
		}()
		reason := e.renew(ctx)
		cancel()
		<-done
		e.setLeading(false)
		if ctx.Err() != nil {
			e.release()
			e.log.Info("stopped leading: shutting down; lease released", zap.String("identity", e.cfg.Identity))
			return
		}
		e.log.Warn("stopped leading: controllers stopped", zap.String("identity", e.cfg.Identity), zap.String("reason", reason))
	}
}

// jittered returns d plus up to 20% of it, as client-go's wait.Jitter(1.2):
// candidates that started together do not stay in step.
func jittered(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}

// acquire tries every RetryPeriod until it holds the Lease (true) or ctx
// ends (false).
func (e *elector) acquire(ctx context.Context) bool {
	for {
		ok, err := e.tryAcquireOrRenew(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Debug("try to acquire the controller lease", zap.Error(err))
		}
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(jittered(e.cfg.RetryPeriod)):
		}
	}
}

// renew renews the Lease every RetryPeriod until ctx ends, a renewal has
// not succeeded for RenewDeadline, or another holder has it; it returns
// why it stopped.
func (e *elector) renew(ctx context.Context) string {
	last := e.now()
	t := time.NewTicker(e.cfg.RetryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return "shutdown"
		case <-t.C:
		}
		// A renewal that hangs must not outlast the deadline.
		rctx, cancel := context.WithDeadline(ctx, last.Add(e.cfg.RenewDeadline))
		ok, err := e.tryAcquireOrRenew(rctx)
		cancel()
		switch {
		case ok:
			last = e.now()
		case errors.Is(err, errHeldByOther):
			return err.Error()
		case e.now().Sub(last) >= e.cfg.RenewDeadline:
			return fmt.Sprintf("lease not renewed within %v: %v", e.cfg.RenewDeadline, err)
		}
	}
}

// errHeldByOther: the Lease is held by another replica and not expired.
var errHeldByOther = errors.New("elect leader: lease held by another replica")

// tryAcquireOrRenew reads the Lease and, when it is free, expired or
// ours, writes it with this replica as holder and the current time as
// renewTime. ok reports that this replica holds the Lease now.
func (e *elector) tryAcquireOrRenew(ctx context.Context) (ok bool, err error) {
	now := e.now()
	nowMicro := metav1.NewMicroTime(now)
	seconds := int32(e.cfg.LeaseDuration / time.Second)
	o, err := e.st.Get(ctx, e.key)
	if errors.Is(err, store.ErrNotFound) {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: e.cfg.Name, Namespace: e.cfg.Namespace, UID: types.UID(uuid.NewString()), CreationTimestamp: metav1.NewTime(now.Truncate(time.Second))},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: &e.cfg.Identity, LeaseDurationSeconds: &seconds,
				AcquireTime: &nowMicro, RenewTime: &nowMicro, LeaseTransitions: new(int32),
			},
		}
		value, err := e.kind.EncodeStorage(lease)
		if err != nil {
			return false, err
		}
		created, err := e.st.Create(ctx, e.key, string(lease.UID), value)
		if err != nil {
			return false, fmt.Errorf("create lease: %w", err)
		}
		e.observedRev, e.observedAt = created.ModRev, now
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read lease: %w", err)
	}
	obj, err := e.kind.DecodeStored(o.Value)
	if err != nil {
		return false, err
	}
	lease, isLease := obj.(*coordinationv1.Lease)
	if !isLease {
		return false, fmt.Errorf("read lease: got %T", obj)
	}
	if o.ModRev != e.observedRev {
		e.observedRev, e.observedAt = o.ModRev, now
	}
	spec := &lease.Spec
	holder := ""
	if spec.HolderIdentity != nil {
		holder = *spec.HolderIdentity
	}
	mine := holder == e.cfg.Identity
	if holder != "" && !mine {
		d := time.Duration(0)
		if spec.LeaseDurationSeconds != nil {
			d = time.Duration(*spec.LeaseDurationSeconds) * time.Second
		}
		if e.observedAt.Add(d).After(now) {
			return false, errHeldByOther
		}
	}
	if !mine {
		spec.AcquireTime = &nowMicro
		transitions := int32(0)
		if spec.LeaseTransitions != nil {
			transitions = *spec.LeaseTransitions
		}
		if holder != "" {
			transitions++
		}
		spec.LeaseTransitions = &transitions
	}
	spec.HolderIdentity, spec.LeaseDurationSeconds, spec.RenewTime = &e.cfg.Identity, &seconds, &nowMicro
	value, err := e.kind.EncodeStorage(lease)
	if err != nil {
		return false, err
	}
	updated, err := e.st.Update(ctx, e.key, store.Preconditions{ModRev: o.ModRev}, value)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		// Another candidate wrote first: if it took the Lease, the next
		// read sees its holder.
		return false, fmt.Errorf("write lease: %w", err)
	}
	if err != nil {
		return false, fmt.Errorf("write lease: %w", err)
	}
	e.observedRev, e.observedAt = updated.ModRev, now
	return true, nil
}

// release gives up the Lease if this replica holds it: no holder, and a
// duration of one second, as client-go's ReleaseOnCancel leaves it.
func (e *elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.RenewDeadline)
	defer cancel()
	_, err := e.st.GuaranteedUpdate(ctx, e.key, func(cur store.Object) ([]byte, error) {
		obj, err := e.kind.DecodeStored(cur.Value)
		if err != nil {
			return nil, err
		}
		lease, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return nil, fmt.Errorf("read lease: got %T", obj)
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != e.cfg.Identity {
			return nil, errNotHolder
		}
		now := metav1.NewMicroTime(e.now())
		one := int32(1)
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = nil, &one
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		return e.kind.EncodeStorage(lease)
	})
	if err != nil && !errors.Is(err, errNotHolder) && !errors.Is(err, store.ErrNotFound) {
		e.log.Warn("release the controller lease", zap.Error(err))
	}
}

// errNotHolder: release found the Lease held by another replica.
var errNotHolder = errors.New("elect leader: not the lease holder")
