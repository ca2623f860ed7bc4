package registry

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/store"
)

// claimReplicas returns the Service kinds and allocators of n replicas
// that share one SQLite store with Claims, as replicas share etcd, and the
// store. With follow false the allocators do not follow the store's
// events: replicas whose watch lags behind.
func claimReplicas(t *testing.T, n int, opts BuiltinOptions, follow bool) ([]*Kind, []*serviceAllocator, *store.DB) {
	t.Helper()
	db, err := store.Open(context.Background(), store.Config{Path: filepath.Join(t.TempDir(), "test.db"), UnsafeNoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if follow {
		opts.Claims = db
	}
	var kinds []*Kind
	var allocs []*serviceAllocator
	for range n {
		a, err := newServiceAllocator(opts)
		if err != nil {
			t.Fatal(err)
		}
		a.claims = db
		kinds, allocs = append(kinds, serviceKind(a)), append(allocs, a)
	}
	return kinds, allocs, db
}

// createService runs a Service create through k as the HTTP layer does:
// BeginCreate, the store write, finish.
func createService(ctx context.Context, k *Kind, db store.Store, svc *corev1.Service) error {
	svc.UID = types.UID(uuid.NewString())
	k.Strategy.PrepareForCreate(svc)
	finish, err := k.BeginCreate(ctx, svc)
	if err != nil {
		return err
	}
	value, err := k.EncodeStorage(svc)
	if err == nil {
		_, err = db.Create(ctx, k.StoreKey(svc.Namespace, svc.Name), string(svc.UID), value)
	}
	finish(ctx, err == nil)
	return err
}

// TestServiceAllocator_ClaimsAcrossReplicas creates Services through two
// allocators on one store at once, in a range small enough that their
// first guesses collide: every cluster IP and node port is handed out
// once, and the range's size is reached.
func TestServiceAllocator_ClaimsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	// 30 addresses and 40 ports.
	kinds, _, db := claimReplicas(t, 2, BuiltinOptions{ServiceClusterIPRange: "10.96.0.0/27", ServiceNodePortRange: "30000-30039"}, true)
	const perReplica = 15
	var (
		mu   sync.Mutex
		svcs []*corev1.Service
		errs []error
		wg   sync.WaitGroup
	)
	for r, k := range kinds {
		for i := range perReplica {
			wg.Add(1)
			go func() {
				defer wg.Done()
				svc := decodedService(fmt.Sprintf("r%d-s%d", r, i), func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
				err := createService(ctx, k, db, svc)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				svcs = append(svcs, svc)
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d creates failed, first: %v", len(errs), errs[0])
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, svc := range svcs {
		if other, dup := ips[svc.Spec.ClusterIP]; dup {
			t.Errorf("cluster IP %s given to %s and %s", svc.Spec.ClusterIP, other, svc.Name)
		}
		ips[svc.Spec.ClusterIP] = svc.Name
		np := svc.Spec.Ports[0].NodePort
		if other, dup := ports[np]; dup {
			t.Errorf("node port %d given to %s and %s", np, other, svc.Name)
		}
		ports[np] = svc.Name
	}
	if got, want := len(ips), 2*perReplica; got != want {
		t.Errorf("distinct cluster IPs = %d, want %d", got, want)
	}
	// The range is full now, for both.
	for i, k := range kinds {
		if err := createService(ctx, k, db, decodedService(fmt.Sprintf("full%d", i), nil)); !apierrors.IsInternalError(err) {
			t.Errorf("replica %d, full range: err = %v, want 500", i, err)
		}
	}
}

// TestServiceAllocator_ClaimRequested: a cluster IP one replica handed
// out is refused on the other, and free there again once the Service is
// deleted through the first.
func TestServiceAllocator_ClaimRequested(t *testing.T) {
	ctx := context.Background()
	// b does not follow the store's events: it never learns from its
	// pool that a handed out 10.96.0.50, only from the claim.
	kinds, _, db := claimReplicas(t, 2, BuiltinOptions{ServiceClusterIPRange: "10.96.0.0/24"}, false)
	a, b := kinds[0], kinds[1]
	first := decodedService("first", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.50" })
	if err := createService(ctx, a, db, first); err != nil {
		t.Fatal(err)
	}
	second := decodedService("second", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.50" })
	err := createService(ctx, b, db, second)
	want := `Service "second" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.50"]: failed to allocate IP 10.96.0.50: provided IP is already allocated`
	if err == nil || err.Error() != want {
		t.Fatalf("requested IP held through the other replica: err = %v, want %q", err, want)
	}

	deleted, err := db.Delete(ctx, a.StoreKey(first.Namespace, first.Name), store.Preconditions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := a.DecodeStored(deleted.Value)
	if err != nil {
		t.Fatal(err)
	}
	a.AfterDelete(ctx, obj)
	again := decodedService("again", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.50" })
	if err := createService(ctx, b, db, again); err != nil {
		t.Fatalf("requested IP after its Service was deleted through the other replica: %v", err)
	}
	if _, err := db.Get(ctx, store.Key{Resource: ipClaimResource, Name: "10.96.0.50"}); err != nil {
		t.Errorf("claim of 10.96.0.50: %v", err)
	}
}
