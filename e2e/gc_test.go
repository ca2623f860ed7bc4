package e2e

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Garbage collection of dependents through ownerReferences, as
// kube-controller-manager's garbage collector does it
// (https://kubernetes.io/docs/concepts/architecture/garbage-collection/):
// Background deletes the owner at once and its dependents afterwards;
// Foreground keeps the owner, with deletionTimestamp and the
// foregroundDeletion finalizer, until every dependent with
// blockOwnerDeletion is gone; Orphan removes the owner's reference from its
// dependents and leaves them. edgeapi runs the collector itself.

// holdFinalizer keeps a dependent in its deleting state until the test
// releases it, so the states in between can be observed.
const holdFinalizer = "example.com/hold"

// ownerRef is a reference to owner, optionally blocking its foreground
// deletion.
func ownerRef(owner *corev1.ConfigMap, block bool) metav1.OwnerReference {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	if block {
		ref.BlockOwnerDeletion = ptr(true)
	}
	return ref
}

func mustCreateCM(t *testing.T, cs kubernetes.Interface, ns string, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	got, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, cm.Name, err)
	}
	return got
}

func getCM(cs kubernetes.Interface, ns, name string) (*corev1.ConfigMap, error) {
	return cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func mustGetCM(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := getCM(cs, ns, name)
	if err != nil {
		t.Fatalf("get configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

func waitCMGone(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	waitGone(t, "configmap "+ns+"/"+name, func() error { _, err := getCM(cs, ns, name); return err })
}

// releaseCM removes every finalizer of a ConfigMap.
func releaseCM(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("remove finalizers of %s/%s: %v", ns, name, err)
	}
}

// waitDeleting waits until a ConfigMap has a deletionTimestamp.
func waitDeleting(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	waitFor(t, ns+"/"+name+" to get a deletionTimestamp", func() bool {
		var err error
		cm, err = getCM(cs, ns, name)
		if err != nil {
			t.Fatalf("get %s/%s: %v", ns, name, err)
		}
		return cm.DeletionTimestamp != nil
	})
	return cm
}

// wantForegroundPending checks an owner that waits for blocking dependents.
func wantForegroundPending(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	owner, err := getCM(cs, ns, name)
	if err != nil {
		t.Fatalf("owner %s/%s while a blocking dependent exists: %v, want it still there", ns, name, err)
	}
	if owner.DeletionTimestamp == nil || !reflect.DeepEqual(owner.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
		t.Errorf("owner %s/%s: deletionTimestamp %v finalizers %v, want a deletionTimestamp and [foregroundDeletion]", ns, name, owner.DeletionTimestamp, owner.Finalizers)
	}
}

// cmState is one watch event of a ConfigMap.
type cmState struct {
	typ        watch.EventType
	rv         string
	finalizers []string
}

// watchCMStates records every event of one ConfigMap from rv on. The
// returned function waits for the DELETED event and returns the events.
func watchCMStates(t *testing.T, cs kubernetes.Interface, ns, name, rv string) func() []cmState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*eventually)
	t.Cleanup(cancel)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watch %s/%s: %v", ns, name, err)
	}
	done := make(chan []cmState, 1)
	go func() {
		defer w.Stop()
		var got []cmState
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				break
			}
			got = append(got, cmState{typ: ev.Type, rv: cm.ResourceVersion, finalizers: cm.Finalizers})
			if ev.Type == watch.Deleted {
				break
			}
		}
		done <- got
	}()
	return func() []cmState {
		t.Helper()
		got := <-done
		if len(got) == 0 || got[len(got)-1].typ != watch.Deleted {
			t.Errorf("watch of %s/%s ended without a DELETED event: %+v", ns, name, got)
		}
		return got
	}
}

func deleteWith(t *testing.T, cs kubernetes.Interface, ns, name string, policy metav1.DeletionPropagation) {
	t.Helper()
	opts := metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, opts); err != nil {
		t.Fatalf("delete %s/%s (%q): %v", ns, name, policy, err)
	}
}

// TestGarbageCollector_Propagation deletes owners with each propagation
// policy and checks what becomes of their dependents.
func TestGarbageCollector_Propagation(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()

	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, ""} {
		name := string(policy)
		if name == "" {
			name = "Default"
		}
		t.Run(name, func(t *testing.T) {
			ns := "gc-bg-" + map[string]string{"Background": "explicit", "Default": "default"}[name]
			createNamespace(t, cs, ns)
			owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
			mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}})
			mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep-blocking", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}})
			if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dep-secret", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create secret: %v", err)
			}
			mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}})

			deleteWith(t, cs, ns, "owner", policy)
			// Background: the owner goes at once, with no finalizer.
			if _, err := getCM(cs, ns, "owner"); !apierrors.IsNotFound(err) {
				t.Errorf("owner right after a background delete: %v, want NotFound", err)
			}
			waitCMGone(t, cs, ns, "dep")
			waitCMGone(t, cs, ns, "dep-blocking")
			waitGone(t, "secret dep-secret", func() error {
				_, err := cs.CoreV1().Secrets(ns).Get(ctx, "dep-secret", metav1.GetOptions{})
				return err
			})
			mustGetCM(t, cs, ns, "bystander")
		})
	}

	t.Run("Foreground", func(t *testing.T) {
		const ns = "gc-fg"
		createNamespace(t, cs, ns)
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
		blocker := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocker", Finalizers: []string{holdFinalizer}, OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}})
		blockerStates := watchCMStates(t, cs, ns, "blocker", blocker.ResourceVersion)

		deleteWith(t, cs, ns, "owner", metav1.DeletePropagationForeground)
		wantForegroundPending(t, cs, ns, "owner")
		// The collector deletes the dependents: the blocker then waits
		// for its own finalizer, the plain one goes.
		waitDeleting(t, cs, ns, "blocker")
		waitCMGone(t, cs, ns, "plain")
		wantForegroundPending(t, cs, ns, "owner")

		releaseCM(t, cs, ns, "blocker")
		waitCMGone(t, cs, ns, "blocker")
		waitCMGone(t, cs, ns, "owner")

		// A dependent that has no dependents of its own is deleted in the
		// background, so it never carries a foregroundDeletion finalizer
		// (kube-controller-manager's attemptToDeleteItem, default case:
		// Background unless the item already has the orphan or
		// foregroundDeletion finalizer).
		for _, st := range blockerStates() {
			if st.typ != watch.Deleted && !reflect.DeepEqual(st.finalizers, []string{holdFinalizer}) {
				t.Errorf("blocker %s at rv %s had finalizers %v, want only [%s] throughout", st.typ, st.rv, st.finalizers, holdFinalizer)
			}
		}
	})

	t.Run("Foreground without blocking dependents", func(t *testing.T) {
		const ns = "gc-fg-nonblocking"
		createNamespace(t, cs, ns)
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{holdFinalizer}, OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}})

		deleteWith(t, cs, ns, "owner", metav1.DeletePropagationForeground)
		// A dependent without blockOwnerDeletion is deleted but does not
		// hold the owner.
		waitCMGone(t, cs, ns, "owner")
		waitDeleting(t, cs, ns, "held")
		releaseCM(t, cs, ns, "held")
		waitCMGone(t, cs, ns, "held")
	})

	t.Run("two owners, one deleted in the foreground", func(t *testing.T) {
		const ns = "gc-fg-two-owners"
		createNamespace(t, cs, ns)
		a := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-a"}})
		b := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-b"}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{ownerRef(a, true), ownerRef(b, false)}}})

		// The dependent still has a live owner, so it is not deleted;
		// its reference to the owner being deleted is removed instead,
		// which unblocks that owner (kube-controller-manager's
		// attemptToDeleteItem: solid owners left → patch away the
		// dangling and waitingForDependentsDeletion references).
		deleteWith(t, cs, ns, "owner-a", metav1.DeletePropagationForeground)
		waitCMGone(t, cs, ns, "owner-a")
		dep := mustGetCM(t, cs, ns, "dep")
		if want := []metav1.OwnerReference{ownerRef(b, false)}; !reflect.DeepEqual(dep.OwnerReferences, want) || dep.DeletionTimestamp != nil {
			t.Errorf("dependent: ownerReferences %+v deletionTimestamp %v, want %+v and not deleting", dep.OwnerReferences, dep.DeletionTimestamp, want)
		}
	})

	t.Run("Orphan", func(t *testing.T) {
		const ns = "gc-orphan"
		createNamespace(t, cs, ns)
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", Labels: map[string]string{"keep": "me"}, OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}, Data: map[string]string{"k": "v"}})

		deleteWith(t, cs, ns, "owner", metav1.DeletePropagationOrphan)
		waitCMGone(t, cs, ns, "owner")
		dep := mustGetCM(t, cs, ns, "dep")
		if len(dep.OwnerReferences) != 0 {
			t.Errorf("orphaned dependent ownerReferences = %+v, want none", dep.OwnerReferences)
		}
		if dep.DeletionTimestamp != nil || dep.Labels["keep"] != "me" || dep.Data["k"] != "v" {
			t.Errorf("orphaned dependent: deletionTimestamp %v labels %v data %v, want it untouched", dep.DeletionTimestamp, dep.Labels, dep.Data)
		}
	})

	t.Run("two owners", func(t *testing.T) {
		const ns = "gc-two-owners"
		createNamespace(t, cs, ns)
		a := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-a"}})
		b := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-b"}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{ownerRef(a, false), ownerRef(b, false)}}})

		deleteWith(t, cs, ns, "owner-a", metav1.DeletePropagationBackground)
		want := []metav1.OwnerReference{ownerRef(b, false)}
		var dep *corev1.ConfigMap
		waitFor(t, "dep's reference to owner-a to be removed", func() bool {
			var err error
			dep, err = getCM(cs, ns, "dep")
			if err != nil {
				t.Fatalf("dependent with a remaining owner: %v, want it kept", err)
			}
			return len(dep.OwnerReferences) < 2
		})
		if !reflect.DeepEqual(dep.OwnerReferences, want) || dep.DeletionTimestamp != nil {
			t.Errorf("dependent after owner-a went: ownerReferences %+v deletionTimestamp %v, want %+v and not deleting", dep.OwnerReferences, dep.DeletionTimestamp, want)
		}

		deleteWith(t, cs, ns, "owner-b", metav1.DeletePropagationBackground)
		waitCMGone(t, cs, ns, "dep")
	})
}

// TestGarbageCollector_DeleteCollection deletes several owners at once with
// each propagation policy; each deleted owner is handled as if deleted
// alone.
func TestGarbageCollector_DeleteCollection(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "gc-collection"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	for _, policy := range []string{"Background", "Foreground", "Orphan"} {
		for i := 0; i < 2; i++ {
			owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%s-%d", strings.ToLower(policy), i), Labels: map[string]string{"policy": policy}}})
			dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dep-%s-%d", strings.ToLower(policy), i), OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}}
			if policy == "Foreground" {
				dep.Finalizers = []string{holdFinalizer}
			}
			mustCreateCM(t, cs, ns, dep)
		}
	}
	deleteCollection := func(policy string) {
		t.Helper()
		p := metav1.DeletionPropagation(policy)
		if err := c.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &p}, metav1.ListOptions{LabelSelector: "policy=" + policy}); err != nil {
			t.Fatalf("deletecollection %s: %v", policy, err)
		}
	}

	t.Run("Background", func(t *testing.T) {
		deleteCollection("Background")
		for i := 0; i < 2; i++ {
			if _, err := getCM(cs, ns, fmt.Sprintf("owner-background-%d", i)); !apierrors.IsNotFound(err) {
				t.Errorf("owner-background-%d right after deletecollection: %v, want NotFound", i, err)
			}
			waitCMGone(t, cs, ns, fmt.Sprintf("dep-background-%d", i))
		}
	})
	t.Run("Orphan", func(t *testing.T) {
		deleteCollection("Orphan")
		for i := 0; i < 2; i++ {
			waitCMGone(t, cs, ns, fmt.Sprintf("owner-orphan-%d", i))
			dep := mustGetCM(t, cs, ns, fmt.Sprintf("dep-orphan-%d", i))
			if len(dep.OwnerReferences) != 0 || dep.DeletionTimestamp != nil {
				t.Errorf("dep-orphan-%d: ownerReferences %+v deletionTimestamp %v, want none and not deleting", i, dep.OwnerReferences, dep.DeletionTimestamp)
			}
		}
	})
	t.Run("Foreground", func(t *testing.T) {
		deleteCollection("Foreground")
		for i := 0; i < 2; i++ {
			waitDeleting(t, cs, ns, fmt.Sprintf("dep-foreground-%d", i))
			wantForegroundPending(t, cs, ns, fmt.Sprintf("owner-foreground-%d", i))
		}
		// Releasing one dependent lets exactly its owner go.
		releaseCM(t, cs, ns, "dep-foreground-0")
		waitCMGone(t, cs, ns, "owner-foreground-0")
		wantForegroundPending(t, cs, ns, "owner-foreground-1")
		releaseCM(t, cs, ns, "dep-foreground-1")
		waitCMGone(t, cs, ns, "owner-foreground-1")
	})
}

// TestGarbageCollector_Restart stops the daemon while a foreground deletion
// waits for a blocking dependent and checks that, after a restart on the
// same data directory, releasing the dependent still lets the owner go.
func TestGarbageCollector_Restart(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	const ns = "gc-restart"
	createNamespace(t, cs, ns)
	owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
	mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "blocker", Finalizers: []string{holdFinalizer}, OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}})
	// A second pair is deleted only after the restart, while the first
	// is half-way, to check the collector is working at all then.
	owner2 := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner2"}})
	mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep2", OwnerReferences: []metav1.OwnerReference{ownerRef(owner2, false)}}})

	deleteWith(t, cs, ns, "owner", metav1.DeletePropagationForeground)
	waitDeleting(t, cs, ns, "blocker")
	wantForegroundPending(t, cs, ns, "owner")

	if err := d.Stop(); err != nil {
		t.Fatalf("stop with SIGTERM: %v", err)
	}
	d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	cs2 := d2.Clientset()

	wantForegroundPending(t, cs2, ns, "owner")
	blocker := mustGetCM(t, cs2, ns, "blocker")
	if blocker.DeletionTimestamp == nil {
		t.Errorf("blocker lost its deletionTimestamp across the restart")
	}
	releaseCM(t, cs2, ns, "blocker")
	waitCMGone(t, cs2, ns, "blocker")
	waitCMGone(t, cs2, ns, "owner")

	deleteWith(t, cs2, ns, "owner2", metav1.DeletePropagationBackground)
	waitCMGone(t, cs2, ns, "dep2")
}

// TestGarbageCollector_RestartBeforeCollection kills the daemon while the
// collector's work is half done and checks that the restarted daemon
// finishes it. A finalizer the test owns holds one object of each chain, so
// the work cannot finish before the kill:
//   - background: owner → held dependent → leaf. The owner is deleted in the
//     background; the held dependent is marked deleted and stays; the leaf
//     can only be collected once the held dependent is gone, which the test
//     allows only after the restart;
//   - foreground: an owner deleted in the foreground waits for its held,
//     blocking dependent; after the restart the test releases the
//     dependent, and the new process must then delete the owner.
func TestGarbageCollector_RestartBeforeCollection(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const (
		ns     = "gc-restart-bg"
		hold   = "e2e.example.com/hold"
		chains = 5
	)
	createNamespace(t, cs, ns)
	var owners []*corev1.ConfigMap
	for i := 0; i < chains; i++ {
		o := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%02d", i)}})
		dep := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dep-%02d", i), Finalizers: []string{hold}, OwnerReferences: []metav1.OwnerReference{ownerRef(o, false)}}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("leaf-%02d", i), OwnerReferences: []metav1.OwnerReference{ownerRef(dep, false)}}})
		owners = append(owners, o)
	}
	fg := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg-owner"}})
	mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg-dep", Finalizers: []string{hold}, OwnerReferences: []metav1.OwnerReference{ownerRef(fg, true)}}})
	for _, o := range owners {
		deleteWith(t, cs, ns, o.Name, metav1.DeletePropagationBackground)
	}
	deleteWith(t, cs, ns, fg.Name, metav1.DeletePropagationForeground)

	// Wait until the collector has acted on every held object: each is
	// marked deleted, and held.
	marked := func(name string) bool {
		cm, err := getCM(cs, ns, name)
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return cm.DeletionTimestamp != nil
	}
	deadline := time.Now().Add(eventually)
	for i := 0; i < chains; i++ {
		for !marked(fmt.Sprintf("dep-%02d", i)) || !marked("fg-dep") {
			if time.Now().After(deadline) {
				t.Fatalf("the collector did not mark the held dependents within %v", eventually)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	d.Kill()

	d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	cs2 := d2.Clientset()
	// The work is still half done: leaves and the foreground owner are
	// there, held by what the test holds.
	for i := 0; i < chains; i++ {
		if _, err := getCM(cs2, ns, fmt.Sprintf("leaf-%02d", i)); err != nil {
			t.Fatalf("leaf-%02d after the restart: %v (it should wait for its held owner)", i, err)
		}
	}
	if cm, err := getCM(cs2, ns, "fg-owner"); err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("fg-owner after the restart: %v, %+v (want it marked, waiting for its dependent)", err, cm)
	}
	release := func(name string) {
		t.Helper()
		for {
			cm, err := getCM(cs2, ns, name)
			if err != nil {
				t.Fatalf("get %s: %v", name, err)
			}
			cm.Finalizers = nil
			_, err = cs2.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				continue
			}
			if err != nil {
				t.Fatalf("release %s: %v", name, err)
			}
			return
		}
	}
	for i := 0; i < chains; i++ {
		release(fmt.Sprintf("dep-%02d", i))
	}
	release("fg-dep")
	// Only the restarted process can finish the work now.
	for i := 0; i < chains; i++ {
		waitCMGone(t, cs2, ns, fmt.Sprintf("dep-%02d", i))
		waitCMGone(t, cs2, ns, fmt.Sprintf("leaf-%02d", i))
	}
	waitCMGone(t, cs2, ns, "fg-dep")
	waitCMGone(t, cs2, ns, "fg-owner")

	// A dependent created after the restart that names an owner deleted
	// before it is collected too: kube-controller-manager deletes
	// dependents whose owner is verified absent. (edgeapi may take until
	// its next periodic rescan, a minute, so the hang guard here is
	// longer; how long it takes is not what this test checks.)
	mustCreateCM(t, cs2, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", OwnerReferences: []metav1.OwnerReference{ownerRef(owners[0], false)}}})
	deadline = time.Now().Add(3 * eventually)
	for {
		_, err := getCM(cs2, ns, "late")
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			t.Fatalf("get late: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("dependent of an owner deleted before the restart still there after %v", 3*eventually)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGarbageCollector_Graphs covers owners of other kinds and scopes,
// chains of owners, and an owner recreated under the same name.
func TestGarbageCollector_Graphs(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()

	t.Run("chain in the background", func(t *testing.T) {
		const ns = "gc-chain-bg"
		createNamespace(t, cs, ns)
		a := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
		b := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", OwnerReferences: []metav1.OwnerReference{ownerRef(a, false)}}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", OwnerReferences: []metav1.OwnerReference{ownerRef(b, false)}}})
		deleteWith(t, cs, ns, "a", metav1.DeletePropagationBackground)
		waitCMGone(t, cs, ns, "b")
		waitCMGone(t, cs, ns, "c")
	})

	t.Run("chain in the foreground", func(t *testing.T) {
		// a ← b ← c, all references blocking, c held by a finalizer.
		// Deleting a in the foreground deletes b in the foreground too (b
		// has dependents), so both wait with foregroundDeletion until c
		// is released; then c, b and a go in that order.
		const ns = "gc-chain-fg"
		createNamespace(t, cs, ns)
		a := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
		b := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", OwnerReferences: []metav1.OwnerReference{ownerRef(a, true)}}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{holdFinalizer}, OwnerReferences: []metav1.OwnerReference{ownerRef(b, true)}}})
		deleteWith(t, cs, ns, "a", metav1.DeletePropagationForeground)
		waitDeleting(t, cs, ns, "c")
		wantForegroundPending(t, cs, ns, "b")
		wantForegroundPending(t, cs, ns, "a")
		releaseCM(t, cs, ns, "c")
		waitCMGone(t, cs, ns, "c")
		waitCMGone(t, cs, ns, "b")
		waitCMGone(t, cs, ns, "a")
	})

	t.Run("owner of another kind", func(t *testing.T) {
		const ns = "gc-secret-owner"
		createNamespace(t, cs, ns)
		s, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "owner", UID: s.UID}
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{ref}}})
		if err := cs.CoreV1().Secrets(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCMGone(t, cs, ns, "dep")
	})

	t.Run("dependents of every kind", func(t *testing.T) {
		const ns = "gc-kinds"
		createNamespace(t, cs, ns)
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
		refs := []metav1.OwnerReference{ownerRef(owner, false)}
		if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease", OwnerReferences: refs}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create lease: %v", err)
		}
		if _, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev", OwnerReferences: refs},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "owner"}, Reason: "Test", Message: "m", Type: corev1.EventTypeNormal}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create event: %v", err)
		}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secret", OwnerReferences: refs}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create secret: %v", err)
		}
		deleteWith(t, cs, ns, "owner", metav1.DeletePropagationBackground)
		waitGone(t, "lease", func() error {
			_, err := cs.CoordinationV1().Leases(ns).Get(ctx, "lease", metav1.GetOptions{})
			return err
		})
		waitGone(t, "event", func() error { _, err := cs.CoreV1().Events(ns).Get(ctx, "ev", metav1.GetOptions{}); return err })
		waitGone(t, "secret", func() error { _, err := cs.CoreV1().Secrets(ns).Get(ctx, "secret", metav1.GetOptions{}); return err })
	})

	t.Run("cluster-scoped owner", func(t *testing.T) {
		// A namespaced dependent may have a cluster-scoped owner.
		const ns = "gc-ns-dependent"
		createNamespace(t, cs, ns)
		createNamespace(t, cs, "gc-owner-ns")
		owner, err := cs.CoreV1().Namespaces().Get(ctx, "gc-owner-ns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: owner.Name, UID: owner.UID}
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{ref}}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander"}})
		if err := cs.CoreV1().Namespaces().Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, "namespace gc-owner-ns", func() error {
			_, err := cs.CoreV1().Namespaces().Get(ctx, owner.Name, metav1.GetOptions{})
			return err
		})
		waitCMGone(t, cs, ns, "dep")
		mustGetCM(t, cs, ns, "bystander")
	})

	t.Run("owner recreated under the same name", func(t *testing.T) {
		// The reference names the first owner's uid; a new object with the
		// same name is not that owner, so the dependent is collected.
		const ns = "gc-recreated"
		createNamespace(t, cs, ns)
		first := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early", Finalizers: []string{holdFinalizer}, OwnerReferences: []metav1.OwnerReference{ownerRef(first, false)}}})
		deleteWith(t, cs, ns, "owner", metav1.DeletePropagationBackground)
		waitDeleting(t, cs, ns, "early")
		second := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}})
		// A dependent of the first owner created now, while an object of
		// that name exists again.
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", OwnerReferences: []metav1.OwnerReference{ownerRef(first, false)}}})
		// And a dependent of the second owner, which must stay.
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "current", OwnerReferences: []metav1.OwnerReference{ownerRef(second, false)}}})
		waitCMGone(t, cs, ns, "late")
		releaseCM(t, cs, ns, "early")
		waitCMGone(t, cs, ns, "early")
		mustGetCM(t, cs, ns, "current")
		mustGetCM(t, cs, ns, "owner")
	})
}

// TestDelete_PropagationOptions checks the answers of deletes with each
// propagation option and the finalizers they leave on the owner.
func TestDelete_PropagationOptions(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "delete-options"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps/"

	t.Run("Foreground answers the object", func(t *testing.T) {
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg"}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fg-dep", Finalizers: []string{holdFinalizer}, OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}})
		r := sendRaw(t, d, http.MethodDelete, base+"fg?propagationPolicy=Foreground", "", nil)
		cm := decodeCM(t, "foreground DELETE", r, http.StatusOK)
		if cm.DeletionTimestamp == nil || cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 || !reflect.DeepEqual(cm.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
			t.Errorf("foreground DELETE answer: deletionTimestamp %v grace %v finalizers %v, want set, 0, [foregroundDeletion]", cm.DeletionTimestamp, cm.DeletionGracePeriodSeconds, cm.Finalizers)
		}
		waitDeleting(t, cs, ns, "fg-dep")
		releaseCM(t, cs, ns, "fg-dep")
		waitCMGone(t, cs, ns, "fg")
	})

	t.Run("Foreground without dependents", func(t *testing.T) {
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lonely"}})
		deleteWith(t, cs, ns, "lonely", metav1.DeletePropagationForeground)
		waitCMGone(t, cs, ns, "lonely")
	})

	t.Run("Background answers a Status", func(t *testing.T) {
		cm := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bg"}})
		r := sendRaw(t, d, http.MethodDelete, base+"bg?propagationPolicy=Background", "", nil)
		wantStatusBody(t, "background DELETE", r, http.StatusOK, fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"bg","kind":"configmaps","uid":%q}}`, cm.UID))
	})

	t.Run("Orphan keeps other finalizers", func(t *testing.T) {
		owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orph", Finalizers: []string{"example.com/mine"}}})
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orph-dep", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, true)}}})
		r := sendRaw(t, d, http.MethodDelete, base+"orph?propagationPolicy=Orphan", "", nil)
		cm := decodeCM(t, "orphan DELETE", r, http.StatusOK)
		if want := []string{"example.com/mine", metav1.FinalizerOrphanDependents}; !reflect.DeepEqual(cm.Finalizers, want) || cm.DeletionTimestamp == nil {
			t.Errorf("orphan DELETE answer: finalizers %v deletionTimestamp %v, want %v and a deletionTimestamp", cm.Finalizers, cm.DeletionTimestamp, want)
		}
		waitFor(t, "the collector to orphan orph-dep", func() bool {
			return len(mustGetCM(t, cs, ns, "orph-dep").OwnerReferences) == 0
		})
		waitFor(t, "the orphan finalizer to be removed", func() bool {
			return reflect.DeepEqual(mustGetCM(t, cs, ns, "orph").Finalizers, []string{"example.com/mine"})
		})
		if got := mustGetCM(t, cs, ns, "orph"); got.DeletionTimestamp == nil {
			t.Error("owner lost its deletionTimestamp")
		}
		releaseCM(t, cs, ns, "orph")
		waitCMGone(t, cs, ns, "orph")
		mustGetCM(t, cs, ns, "orph-dep")
	})

	t.Run("deprecated orphanDependents", func(t *testing.T) {
		for _, orphan := range []bool{true, false} {
			name := fmt.Sprintf("od-%v", orphan)
			owner := mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}})
			mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-dep", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}})
			if err := c.Delete(ctx, name, metav1.DeleteOptions{OrphanDependents: ptr(orphan)}); err != nil {
				t.Fatalf("delete orphanDependents=%v: %v", orphan, err)
			}
			waitCMGone(t, cs, ns, name)
			if orphan {
				waitFor(t, "the dependent to be orphaned", func() bool {
					return len(mustGetCM(t, cs, ns, name+"-dep").OwnerReferences) == 0
				})
			} else {
				waitCMGone(t, cs, ns, name+"-dep")
			}
		}
		mustCreateCM(t, cs, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "both"}})
		r := sendRaw(t, d, http.MethodDelete, base+"both", "application/json", []byte(`{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true,"propagationPolicy":"Background"}`))
		wantStatusBody(t, "orphanDependents and propagationPolicy together", r, http.StatusUnprocessableEntity,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"DeleteOptions","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set","field":"propagationPolicy"}]},"code":422}`)
		mustGetCM(t, cs, ns, "both")
	})
}
