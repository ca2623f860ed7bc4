package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCrash_KillDashNine kills the daemon with SIGKILL while 32 writers
// create ConfigMaps, restarts it on the same data directory and checks that
// every acknowledged write survived unchanged, nothing appeared that no one
// wrote, and resourceVersions keep growing.
//
// It is a fast smoke test of recovery, not of durability: SIGKILL leaves
// the page cache intact, so it would pass with synchronous=OFF too.
// TestCrashLoop checks updates, deletes and watches across many kills; only
// a power cut (losing what was not fsynced) can show that commits are
// durable.
func TestCrash_KillDashNine(t *testing.T) {
	t.Parallel()
	const (
		ns      = "crash"
		writers = 32
		load    = 2 * time.Second // how long the writers run before the kill
	)
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	var (
		mu        sync.Mutex            // guards attempted and acked
		attempted = map[string]bool{}   // names sent to the server
		acked     = map[string]string{} // name -> resourceVersion of acknowledged creates
		wg        sync.WaitGroup
	)
	var (
		killed   atomic.Bool // set just before SIGKILL
		errMu    sync.Mutex  // guards firstErr
		firstErr error       // the first write error before the kill
	)
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%02d-%06d", w, i)
				mu.Lock()
				attempted[name] = true
				mu.Unlock()
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"writer": strconv.Itoa(w)}},
					Data:       map[string]string{"i": strconv.Itoa(i)},
				}
				got, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				if err != nil {
					if !killed.Load() {
						errMu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("create %s before the kill: %w", name, err)
						}
						errMu.Unlock()
					}
					// After the kill the daemon is gone: this writer is done.
					return
				}
				mu.Lock()
				acked[name] = got.ResourceVersion
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(load)
	killed.Store(true)
	d.Kill() // mid-load: the writers are still sending
	close(stop)
	wg.Wait()
	if firstErr != nil {
		t.Errorf("a write failed under load: %v", firstErr)
	}

	if len(acked) == 0 {
		t.Fatalf("no create was acknowledged before the kill (%d attempted)", len(attempted))
	}
	var maxAcked uint64
	for name, rv := range acked {
		n, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			t.Fatalf("configmap %s: resourceVersion %q is not a decimal number", name, rv)
		}
		maxAcked = max(maxAcked, n)
	}
	t.Logf("%d creates acknowledged, %d attempted before SIGKILL; highest resourceVersion %d", len(acked), len(attempted), maxAcked)

	d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	cs2 := d2.Clientset()

	t.Run("acknowledged creates survive", func(t *testing.T) {
		lost := 0
		for name, want := range acked {
			got, err := cs2.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				lost++
				if lost <= 10 {
					t.Errorf("get acknowledged configmap %s: %v", name, err)
				}
				continue
			}
			if got.ResourceVersion != want {
				t.Errorf("configmap %s: resourceVersion = %s, want %s (as acknowledged)", name, got.ResourceVersion, want)
			}
		}
		if lost > 0 {
			t.Errorf("%d of %d acknowledged creates are lost", lost, len(acked))
		}
	})

	t.Run("no unknown or half-present objects", func(t *testing.T) {
		list, err := cs2.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		listed := map[string]bool{}
		for _, cm := range list.Items {
			listed[cm.Name] = true
			if !attempted[cm.Name] {
				t.Errorf("configmap %s exists but was never created", cm.Name)
			}
			if cm.UID == "" || cm.ResourceVersion == "" || cm.CreationTimestamp.IsZero() {
				t.Errorf("configmap %s is incomplete: uid %q, resourceVersion %q, creationTimestamp %v",
					cm.Name, cm.UID, cm.ResourceVersion, cm.CreationTimestamp)
			}
			if cm.Data["i"] == "" || cm.Labels["writer"] == "" {
				t.Errorf("configmap %s lost its content: data %v, labels %v", cm.Name, cm.Data, cm.Labels)
			}
		}
		for name := range acked {
			if !listed[name] {
				t.Errorf("acknowledged configmap %s is missing from the list", name)
			}
		}
	})

	t.Run("resourceVersion keeps growing", func(t *testing.T) {
		cm, err := cs2.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create after restart: %v", err)
		}
		n, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatalf("resourceVersion %q is not a decimal number", cm.ResourceVersion)
		}
		if n <= maxAcked {
			t.Errorf("resourceVersion after restart = %d, want > %d (the highest acknowledged before the crash)", n, maxAcked)
		}
	})
}

// TestDaemon_SIGTERM checks a graceful shutdown: SIGTERM makes the daemon
// exit with status 0, and what it acknowledged is there after a restart.
func TestDaemon_SIGTERM(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	want, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := d.Stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want exit status 0", err)
	}

	d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	got, err := d2.Clientset().CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if got.ResourceVersion != want.ResourceVersion || got.UID != want.UID || got.Data["k"] != "v" {
		t.Errorf("after restart: uid %s rv %s data %v, want uid %s rv %s data map[k:v]",
			got.UID, got.ResourceVersion, got.Data, want.UID, want.ResourceVersion)
	}
}
