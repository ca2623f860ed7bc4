//go:build !(arm || 386 || mips || mipsle)

// lossyfs (go-fuse) does not compile on 32-bit platforms: see powercut_test.go.

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/e2e/internal/lossyfs"
)

// TestWatchdog_StuckWriterStopsPings runs the daemon, as systemd would
// with WatchdogSec=, on a file system (lossyfs) that then stops completing
// fsyncs, as a failing disk may. A write makes the store's writer wait in
// the WAL's fsync. Then the WATCHDOG=1 pings stop, and the unit's status
// says the store writer is the reason, while HTTP reads still work (the
// server is alive, the writer is not): under systemd, that is a restart.
// Once the fsyncs complete again, the pings resume, and the write that was
// held is either acknowledged and readable, or was never acknowledged.
//
// It needs root and /dev/fuse, and skips saying so without them.
func TestWatchdog_StuckWriterStopsPings(t *testing.T) {
	requireSQLite(t)
	fsys, err := lossyfs.Mount(t.TempDir())
	if err != nil {
		t.Skipf("this machine cannot mount a FUSE file system: %v", err)
	}
	t.Cleanup(func() {
		if err := fsys.Unmount(); err != nil {
			t.Errorf("%v", err)
		}
	})
	path, lines := listenNotify(t)
	d := StartDaemon(t, DaemonOptions{DataDir: fsys.Dir,
		Env: []string{"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=" + testWatchdogUSec}})
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "stuck"
	createNamespace(t, cs, ns)
	before, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"k": "before"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// next is the next notification; it fails the test when none comes
	// before deadline.
	next := func(deadline <-chan time.Time, what string) string {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("notify socket closed while waiting for %s", what)
			}
			return line
		case <-deadline:
			t.Fatalf("gave up after %v waiting for %s", eventually, what)
			return ""
		}
	}
	// Healthy first: a ping.
	deadline := time.After(eventually)
	for next(deadline, "the first WATCHDOG=1") != "WATCHDOG=1" {
	}

	// The disk stops completing fsyncs, and a write waits for one.
	fsys.HoldSyncs()
	released := false
	release := func() {
		if !released {
			fsys.ReleaseSyncs()
			released = true
		}
	}
	t.Cleanup(release) // before the daemon is stopped: cleanups run last first
	type result struct {
		cm  *corev1.ConfigMap
		err error
	}
	written := make(chan result, 1)
	go func() {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "held"}, Data: map[string]string{"k": "held"}}, metav1.CreateOptions{})
		written <- result{cm, err}
	}()
	waitFor(t, "the write's fsync to be held", func() bool { return fsys.HeldSyncs() > 0 })

	// The watchdog says why it stops pinging. Pings that were already on
	// their way (a tick whose probe passed just before the write) may
	// come first, and so may a failure of the HTTP probe on a loaded
	// machine.
	deadline = time.After(eventually)
	for {
		line := next(deadline, "STATUS=unhealthy naming the store writer")
		if strings.HasPrefix(line, "STATUS=unhealthy") && strings.Contains(line, "store writer") {
			break
		}
		if line != "WATCHDOG=1" {
			t.Logf("notification while waiting for the store writer's STATUS=unhealthy: %q", line)
		}
	}

	// The HTTP server still serves reads.
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "before", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "before" {
		t.Errorf("read while the writer is stuck: %v, %v", got.Data, err)
	}
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list while the writer is stuck: %v", err)
	}

	// No ping for two watchdog intervals, while the fsync stays held:
	// systemd would have killed the daemon after one. A slow machine
	// only makes pings fewer.
	window := time.After(2 * 3 * time.Second)
	for open := true; open; {
		select {
		case line := <-lines:
			if line == "WATCHDOG=1" {
				t.Errorf("WATCHDOG=1 while the writer is stuck in fsync (held fsyncs: %d)", fsys.HeldSyncs())
			}
		case <-window:
			open = false
		}
	}
	if fsys.HeldSyncs() == 0 {
		t.Fatalf("no fsync held any more; the window above proved nothing")
	}
	select {
	case r := <-written:
		t.Fatalf("the write returned while its fsync was held: %v, %v", r.cm, r.err)
	default:
	}

	// The disk recovers: pings resume, and the held write is either
	// acknowledged and readable, or was never acknowledged.
	release()
	var serving bool
	deadline = time.After(eventually)
	for pinged := false; !pinged; {
		switch line := next(deadline, "WATCHDOG=1 after the release"); {
		case line == "WATCHDOG=1":
			pinged = true
		case line == "STATUS=serving":
			serving = true
		}
	}
	if !serving {
		t.Errorf("pings resumed without STATUS=serving first")
	}
	r := <-written
	if r.err != nil {
		t.Logf("the held write was not acknowledged: %v", r.err)
		return
	}
	t.Logf("the held write was acknowledged once the fsync completed, at resourceVersion %s", r.cm.ResourceVersion)
	got, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "held" || got.ResourceVersion != r.cm.ResourceVersion {
		t.Errorf("the acknowledged write (resourceVersion %s) read back: %v, %v", r.cm.ResourceVersion, got, err)
	}
	if mustRV(t, r.cm.ResourceVersion) <= mustRV(t, before.ResourceVersion) {
		t.Errorf("the held write's resourceVersion %s is not after %s", r.cm.ResourceVersion, before.ResourceVersion)
	}
}
