package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Several edgeapi replicas on one etcd prefix (issue 14). These tests
// need the etcd backend: they skip on SQLite, where one process owns the
// store. Run them with EDGEAPI_E2E_BACKEND=etcd.

// Short leader election timings for the replicas of these tests (lease
// duration, renew deadline, retry period), through the daemon's test
// knob: a takeover takes seconds instead of kube-controller-manager's 15.
const (
	replicaLeaseDuration = 4 * time.Second
	replicaRenewDeadline = 3 * time.Second
	replicaRetryPeriod   = 500 * time.Millisecond
)

// requireEtcd skips t unless the run stores objects in etcd.
func requireEtcd(t *testing.T) {
	t.Helper()
	if !onEtcd() {
		t.Skip("several replicas share one store only on etcd: run with EDGEAPI_E2E_BACKEND=etcd")
	}
}

// replicaOptions returns the options of a daemon serving a fresh etcd
// prefix with the short leader election timings; every daemon started
// with them serves that one prefix.
func replicaOptions(args ...string) DaemonOptions {
	b := make([]byte, 8)
	rand.Read(b)
	prefix := "/e2e-replicas/" + hex.EncodeToString(b)
	timings := fmt.Sprintf("%s,%s,%s", replicaLeaseDuration, replicaRenewDeadline, replicaRetryPeriod)
	return DaemonOptions{
		Args: append([]string{"--etcd-prefix", prefix}, args...),
		Env:  []string{"EDGEAPI_TEST_LEADER_ELECTION_TIMINGS=" + timings},
	}
}

// startReplicas starts n daemons that serve one fresh etcd prefix, one
// after the other, with the short leader election timings.
func startReplicas(t *testing.T, n int, args ...string) []*Daemon {
	t.Helper()
	o := replicaOptions(args...)
	var ds []*Daemon
	for range n {
		ds = append(ds, StartDaemon(t, o))
	}
	return ds
}

// TestReplicas_StartTogether: two replicas started at the same moment on
// an empty prefix both get ready, although both create the system
// namespaces, the default/kubernetes Service (and claim its cluster IP)
// and the RBAC bootstrap policy at once; one Service holds the IP.
func TestReplicas_StartTogether(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	o := replicaOptions()
	var (
		wg   sync.WaitGroup
		ds   [2]*Daemon
		errs [2]error
	)
	for i := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds[i], errs[i] = TryStartDaemon(t, o)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	for i, d := range ds {
		svc, err := d.Clientset().CoreV1().Services("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("replica %d: get default/kubernetes: %v", i, err)
		}
		if svc.Spec.ClusterIP != "10.0.0.1" {
			t.Errorf("replica %d: default/kubernetes has cluster IP %s, want 10.0.0.1", i, svc.Spec.ClusterIP)
		}
	}
	leaderAndFollower(t, ds[:])
}

// TestReplicas_WatchSeesOtherReplicasWrites: a watch on replica B from a
// known resourceVersion sees every create, update and delete made through
// replica A, in several namespaces, in order, each once, with the
// resourceVersion A answered.
func TestReplicas_WatchSeesOtherReplicasWrites(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	ds := startReplicas(t, 2)
	a, b := ds[0].Clientset(), ds[1].Clientset()
	ctx := context.Background()
	namespaces := []string{"rw-a", "rw-b", "rw-c"}
	for _, ns := range namespaces {
		createNamespace(t, a, ns)
	}
	start, err := a.CoreV1().ConfigMaps(namespaces[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "start"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The writes through A, and the event each must give on B.
	type write struct {
		typ  watch.EventType
		key  string
		rv   int64
		data string
	}
	var writes []write
	const objects = 30
	for j := range objects {
		ns, name := namespaces[j%len(namespaces)], fmt.Sprintf("cm-%d", j)
		key := ns + "/" + name
		cm, err := a.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": "created"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		writes = append(writes, write{watch.Added, key, mustRV(t, cm.ResourceVersion), "created"})
		cm.Data["i"] = "updated"
		if cm, err = a.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		writes = append(writes, write{watch.Modified, key, mustRV(t, cm.ResourceVersion), "updated"})
		if j%3 == 2 {
			// A DELETE answers with a Status, without the delete's
			// resourceVersion: its event must come between the
			// writes before and after it (rv 0 here).
			if err := a.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			writes = append(writes, write{watch.Deleted, key, 0, "updated"})
		}
	}
	// A last write, so that the last awaited event has a known
	// resourceVersion.
	end, err := a.CoreV1().ConfigMaps(namespaces[0]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "end"}, Data: map[string]string{"i": "end"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writes = append(writes, write{watch.Added, namespaces[0] + "/end", mustRV(t, end.ResourceVersion), "end"})

	last := writes[len(writes)-1].rv
	var got []write
	timeout := time.After(eventually)
	for len(got) == 0 || got[len(got)-1].rv < last {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch on B ended after %d events", len(got))
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				t.Fatalf("watch on B: %s event of %T: %v", ev.Type, ev.Object, ev.Object)
			}
			got = append(got, write{ev.Type, cm.Namespace + "/" + cm.Name, mustRV(t, cm.ResourceVersion), cm.Data["i"]})
		case <-timeout:
			t.Fatalf("watch on B: %d events after %v, the last at %v; want up to %d", len(got), eventually, got, last)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].rv <= got[i-1].rv {
			t.Errorf("event %d at resourceVersion %d follows %d: not strictly increasing", i, got[i].rv, got[i-1].rv)
		}
	}
	if len(got) != len(writes) {
		t.Errorf("got %d events, want %d (one per write)", len(got), len(writes))
	}
	for i := range min(len(got), len(writes)) {
		want := writes[i]
		if want.rv == 0 {
			want.rv = got[i].rv // a delete: ordered by the check above
		}
		if got[i] != want {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], writes[i])
		}
	}
	t.Logf("a watch on B saw all %d writes made through A, in order", len(writes))
}

// leaderMetric reads edgeapi_controller_leader from d: 1 when it runs the
// controllers; -1 when d does not answer (killed).
func leaderMetric(t *testing.T, d *Daemon) float64 {
	t.Helper()
	r := rawGetNoFatal(d, "/metrics")
	if r.Status != 200 {
		return -1
	}
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, "edgeapi_controller_leader "); ok {
			return map[string]float64{"0": 0, "1": 1}[strings.TrimSpace(v)]
		}
	}
	t.Fatalf("no edgeapi_controller_leader in /metrics of %s", d.Addr)
	return 0
}

// leaseHolder returns the controller Lease's holderIdentity.
func leaseHolder(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "edgeapi-controller-manager", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestReplicas_ControllersMove: of two replicas exactly one runs the
// controllers (the metric and the Lease agree); kill -9 it, and the other
// takes the Lease, finalizes a deleted namespace, collects an orphaned
// dependent, and its informers hold every object written before and
// after the kill.
func TestReplicas_ControllersMove(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	leader, survivor := leaderAndFollower(t, startReplicas(t, 2))
	ctx := context.Background()
	lc, sc := leader.Clientset(), survivor.Clientset()
	oldHolder := leaseHolder(t, sc)
	if oldHolder == "" {
		t.Fatal("the controller Lease has no holder while a replica leads")
	}

	// An informer on the survivor, and objects written before the kill
	// through the leader.
	const ns = "moved"
	createNamespace(t, lc, ns)
	want := map[string]bool{}
	for i := range 10 {
		name := fmt.Sprintf("before-%d", i)
		if _, err := lc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	factory := informers.NewSharedInformerFactoryWithOptions(sc, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("informer on the survivor did not sync")
	}

	leader.Kill()
	killed := time.Now()
	var took time.Duration
	waitFor(t, "the survivor to take the controller Lease", func() bool {
		if leaderMetric(t, survivor) != 1 {
			return false
		}
		h := leaseHolder(t, sc)
		if h == "" || h == oldHolder {
			return false
		}
		took = time.Since(killed)
		return true
	})
	// Measured, not asserted (timings are noisy on a shared machine):
	// the bound is one lease duration plus a retry period.
	t.Logf("survivor leads %v after kill -9 of the leader (lease %v + retry %v = %v)", took.Round(time.Millisecond),
		replicaLeaseDuration, replicaRetryPeriod, replicaLeaseDuration+replicaRetryPeriod)

	for i := range 10 {
		name := fmt.Sprintf("after-%d", i)
		if _, err := sc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want[name] = true
	}
	waitFor(t, "the survivor's informer to hold every ConfigMap", func() bool {
		keys := inf.GetStore().ListKeys()
		if len(keys) != len(want) {
			return false
		}
		for _, k := range keys {
			if !want[strings.TrimPrefix(k, ns+"/")] {
				return false
			}
		}
		return true
	})

	// Garbage collection on the survivor: a dependent of a deleted owner
	// goes.
	owner, err := sc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if _, err := sc.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sc.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dependent of the deleted owner to be collected", func() bool {
		_, err := sc.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// Namespace finalization on the survivor: the namespace is emptied
	// and removed.
	if err := sc.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted namespace to be finalized and removed", func() bool {
		_, err := sc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestReplicas_NamespaceFromOtherReplica: an object can be created through
// replica B in a namespace just created through replica A, whether or not
// B's watch has delivered the namespace yet.
func TestReplicas_NamespaceFromOtherReplica(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	ds := startReplicas(t, 2)
	a, b := ds[0].Clientset(), ds[1].Clientset()
	ctx := context.Background()
	for i := range 30 {
		ns := fmt.Sprintf("fresh-%d", i)
		createNamespace(t, a, ns)
		if _, err := b.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create in namespace %s through B right after A created it: %v", ns, err)
		}
	}
	// A namespace that exists nowhere is still refused.
	_, err := b.CoreV1().ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: err = %v, want NotFound", err)
	}
}

// TestReplicas_ServiceAllocationUnique creates NodePort Services through
// two replicas at once, in a cluster IP range small enough that their
// first guesses collide: every Service gets its own cluster IP and node
// port.
func TestReplicas_ServiceAllocationUnique(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	// 10.0.0.0/26: 62 addresses, the first the kubernetes Service's; 60
	// node ports.
	ds := startReplicas(t, 2, "--service-cluster-ip-range", "10.0.0.0/26", "--service-node-port-range", "30000-30059")
	ctx := context.Background()
	createNamespace(t, ds[0].Clientset(), "alloc")
	const perReplica, workers = 24, 6
	var (
		mu   sync.Mutex
		svcs []*corev1.Service
		wg   sync.WaitGroup
	)
	errs := make(chan error, 2*perReplica)
	for r, d := range ds {
		cs := d.Clientset()
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < perReplica; i += workers {
					svc := &corev1.Service{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d-s%d", r, i)},
						Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "x"},
							Ports: []corev1.ServicePort{{Port: 80}}},
					}
					got, err := cs.CoreV1().Services("alloc").Create(ctx, svc, metav1.CreateOptions{})
					if err != nil {
						errs <- fmt.Errorf("create %s through replica %d: %w", svc.Name, r, err)
						continue
					}
					mu.Lock()
					svcs = append(svcs, got)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range svcs {
		if other, dup := ips[s.Spec.ClusterIP]; dup {
			t.Errorf("cluster IP %s given to %s and %s", s.Spec.ClusterIP, other, s.Name)
		}
		ips[s.Spec.ClusterIP] = s.Name
		np := s.Spec.Ports[0].NodePort
		if other, dup := ports[np]; dup {
			t.Errorf("node port %d given to %s and %s", np, other, s.Name)
		}
		ports[np] = s.Name
	}
	// What is stored agrees with what was answered, read through either
	// replica.
	list, err := ds[1].Clientset().CoreV1().Services("alloc").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, s := range list.Items {
		stored = append(stored, s.Spec.ClusterIP)
	}
	sort.Strings(stored)
	if len(stored) != 2*perReplica || len(ips) != 2*perReplica {
		t.Errorf("%d Services stored with %d distinct cluster IPs answered; want %d", len(stored), len(ips), 2*perReplica)
	}
	t.Logf("%d Services through 2 replicas: %d distinct cluster IPs, %d distinct node ports", len(svcs), len(ips), len(ports))
}

// leaderAndFollower waits until exactly one of two replicas leads and
// returns it and the other.
func leaderAndFollower(t *testing.T, ds []*Daemon) (leader, follower *Daemon) {
	t.Helper()
	waitFor(t, "exactly one replica leading", func() bool {
		m0, m1 := leaderMetric(t, ds[0]), leaderMetric(t, ds[1])
		switch {
		case m0 == 1 && m1 == 0:
			leader, follower = ds[0], ds[1]
		case m0 == 0 && m1 == 1:
			leader, follower = ds[1], ds[0]
		default:
			return false
		}
		return true
	})
	return leader, follower
}

// TestReplicas_CRDServedOnBoth: a CRD created through the replica that
// does not lead is established (by the leader's status write) and its
// custom resources are served by both replicas.
func TestReplicas_CRDServedOnBoth(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	leader, follower := leaderAndFollower(t, startReplicas(t, 2))
	const name = "crontabs.stable.example.com"
	if res := follower.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-"); res.ExitCode != 0 {
		t.Fatalf("kubectl apply of the CRD through the follower: %s", res)
	}
	if res := waitEstablished(t, follower, "60s", name); res.ExitCode != 0 {
		t.Fatalf("kubectl wait --for condition=established through the follower: %s", res)
	}
	gvr := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
	ctx := context.Background()
	for i, d := range []*Daemon{follower, leader} {
		ns := fmt.Sprintf("crd-%d", i)
		createNamespace(t, d.Clientset(), ns)
		ct := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab",
			"metadata": map[string]any{"name": fmt.Sprintf("ct-%d", i)},
			"spec":     map[string]any{"cronSpec": "* * * * */5"},
		}}
		var lastErr error
		waitFor(t, "a CronTab create through "+d.Addr, func() bool {
			_, lastErr = d.Dynamic().Resource(gvr).Namespace(ns).Create(ctx, ct, metav1.CreateOptions{})
			return lastErr == nil
		})
		// Read back through the other replica, with the default the
		// schema gives.
		other := leader
		if d == leader {
			other = follower
		}
		var got *unstructured.Unstructured
		waitFor(t, "the CronTab through the other replica", func() bool {
			var err error
			got, err = other.Dynamic().Resource(gvr).Namespace(ns).Get(ctx, ct.GetName(), metav1.GetOptions{})
			return err == nil
		})
		if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 1 {
			t.Errorf("CronTab %s read through %s: spec.replicas = %d, want the schema's default 1", ct.GetName(), other.Addr, r)
		}
	}
}

// TestReplicas_RBACFromOtherReplica: a Role and RoleBinding written
// through replica A authorize a user's requests on replica B once B's
// RBAC index has them from the watch; removing the binding through A
// forbids them again on B.
func TestReplicas_RBACFromOtherReplica(t *testing.T) {
	requireEtcd(t)
	t.Parallel()
	ds := startReplicas(t, 2)
	a := ds[0].Clientset()
	ctx := context.Background()
	const ns = "rbac-replicas"
	createNamespace(t, a, ns)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}}}
	if _, err := a.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if _, err := a.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := ds[1].RESTConfig()
	cfg.Impersonate.UserName = "alice"
	alice, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice allowed on B by the binding made through A", func() bool {
		_, err := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	if err := a.RbacV1().RoleBindings(ns).Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice forbidden on B once the binding is deleted through A", func() bool {
		_, err := alice.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return apierrors.IsForbidden(err)
	})
}
