package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it when the test ends. It skips the test, saying why, where it cannot
// (not root, no mount(2) permission in this sandbox).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs to fill needs root")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs to fill (%v)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			// A daemon still holding files: detach it instead.
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// fillFile writes zeros to path until the file system is full and returns
// the bytes written.
func fillFile(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for len(buf) > 0 {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			buf = buf[:len(buf)/2] // take the last pages too
			continue
		}
		if err != nil {
			t.Fatalf("fill %s: %v", path, err)
		}
	}
	return n
}

// diskFullCM is the ConfigMap the disk-full test writes: 32 KiB of data,
// so that the test's objects stay small beside the store's reserve.
func diskFullCM(name string, i int) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"i":"%d","pad":%q}}`,
		name, i, strings.Repeat("x", 32<<10)))
}

// TestDiskFull fills the file system that holds the data directory, as a
// runaway log on the same disk would, and checks what a client sees:
// creates and updates get a 500 Status that says the disk is full, with
// Retry-After; reads, lists and an open watch keep working; deletes
// succeed; a SIGKILL and a clean stop on the full disk lose nothing and
// the daemon starts again on it; and once the space is freed, writes
// succeed again without a restart. Then a restart finds every
// acknowledged write.
func TestDiskFull(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	const (
		ns      = "full"
		reserve = 8 << 20
	)
	mnt := mountTmpfs(t, 48<<20)
	dataDir := filepath.Join(mnt, "data")
	opts := DaemonOptions{DataDir: dataDir, Args: []string{"--disk-reserve", "8Mi"}}
	d := StartDaemon(t, opts)
	if _, err := os.Stat(filepath.Join(dataDir, "edgeapi.db-reserve")); err != nil {
		t.Fatalf("space reserve: %v", err)
	}
	cs := d.Clientset()
	ctx := context.Background()
	createNamespace(t, cs, ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps"

	// acked holds the acknowledged state: name -> value of "i".
	acked := map[string]string{}
	create := func(name string, i int) httpResult {
		res := doRaw(t, d, http.MethodPost, base, "application/json", "application/json", diskFullCM(name, i))
		if res.Status == http.StatusCreated {
			acked[name] = fmt.Sprint(i)
		}
		return res
	}
	for i := 0; i < 30; i++ {
		if res := create(fmt.Sprintf("before-%d", i), i); res.Status != http.StatusCreated {
			t.Fatalf("create before-%d: %d %s", i, res.Status, res.Body)
		}
	}
	start := listCMs(t, d, ns)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: fmt.Sprint(start.rv)})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// Something else fills the disk.
	filler := filepath.Join(mnt, "filler")
	t.Logf("filler took %d bytes", fillFile(t, filler))

	// Creates go on until the store finds the disk full.
	var refused httpResult
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatalf("1000 creates on a full disk and none refused")
		}
		res := create(fmt.Sprintf("during-%d", i), i)
		if res.Status == http.StatusCreated {
			continue
		}
		refused = res
		break
	}
	checkNoSpace(t, "create", refused)

	// Updates are refused too, and change nothing.
	cur := rawGet(t, d, base+"/before-0")
	if cur.Status != http.StatusOK {
		t.Fatalf("get before-0 on a full disk: %d %s", cur.Status, cur.Body)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(cur.Body, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["i"] = "changed"
	checkNoSpace(t, "update", doRaw(t, d, http.MethodPut, base+"/before-0", "application/json", "application/json", mustJSON(t, cm)))

	// Reads and lists work.
	if got := rawGet(t, d, base+"/before-0"); string(got.Body) != string(cur.Body) {
		t.Errorf("before-0 changed after a refused update:\ngot  %s\nwant %s", got.Body, cur.Body)
	}
	full := listCMs(t, d, ns)
	for name, i := range acked {
		if got := full.objects[name].Data["i"]; got != i {
			t.Errorf("on a full disk, list: %s has i=%q, want %q", name, got, i)
		}
	}

	// Deletes succeed, and the open watch reports them.
	deleted := map[string]bool{}
	del := func(i int) {
		t.Helper()
		name := fmt.Sprintf("before-%d", i)
		res := doRaw(t, d, http.MethodDelete, base+"/"+name, "", "application/json", nil)
		if res.Status != http.StatusOK {
			t.Fatalf("delete %s on a full disk: %d %s", name, res.Status, res.Body)
		}
		delete(acked, name)
		deleted[name] = true
	}
	for i := 0; i < 3; i++ {
		del(i)
	}
	waitDeleted(t, w, deleted)

	// A crash on the full disk: after SIGKILL the daemon recovers from
	// the WAL, serves what was acknowledged, refuses creates and takes
	// deletes. (A clean stop on a full disk is checked below.)
	d.Kill()
	d = StartDaemon(t, opts)
	onRestart := listCMs(t, d, ns)
	for name, i := range acked {
		if got := onRestart.objects[name].Data["i"]; got != i {
			t.Errorf("restarted on a full disk: %s has i=%q, want %q", name, got, i)
		}
	}
	checkNoSpace(t, "create after a restart", create("restarted", 0))
	del(3)
	if err := d.Stop(); err != nil {
		t.Fatalf("stop on a full disk: %v", err)
	}
	d = StartDaemon(t, opts)
	checkNoSpace(t, "create after a clean restart", create("restarted", 0))
	del(4)

	// Free the space: writes resume without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for i := 0; ; i++ {
		res := create(fmt.Sprintf("after-%d", i), i)
		if res.Status == http.StatusCreated {
			break
		}
		checkNoSpace(t, "create while space returns", res)
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume within %v of freeing the space", eventually)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "edgeapi.db-reserve")); err != nil {
		t.Errorf("space reserve after recovery: %v", err)
	}

	checkAcked := func(when string) {
		t.Helper()
		got := listCMs(t, d, ns)
		for name, i := range acked {
			if v, ok := got.objects[name]; !ok || v.Data["i"] != i {
				t.Errorf("%s: acknowledged %s (i=%s) is missing or changed: %v", when, name, i, v.Data["i"])
			}
		}
		for name := range deleted {
			if _, ok := got.objects[name]; ok {
				t.Errorf("%s: deleted %s is back", when, name)
			}
		}
		if len(got.objects) != len(acked) {
			t.Errorf("%s: %d objects, want the %d acknowledged", when, len(got.objects), len(acked))
		}
	}
	checkAcked("after recovery")
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	d = StartDaemon(t, opts)
	checkAcked("after restart")
	t.Logf("%d acknowledged writes checked, %d deletes on the full disk", len(acked), len(deleted))
}

// checkNoSpace checks the answer to a write refused because the disk is
// full: a 500 Status that says so, with Retry-After.
func checkNoSpace(t *testing.T, what string, res httpResult) {
	t.Helper()
	if res.Status != http.StatusInternalServerError {
		t.Fatalf("%s on a full disk: %d %s, want 500", what, res.Status, res.Body)
	}
	var st metav1.Status
	if err := json.Unmarshal(res.Body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("%s on a full disk: body %s is not a Status (%v)", what, res.Body, err)
	}
	if st.Code != 500 || st.Reason != metav1.StatusReasonInternalError || !strings.Contains(st.Message, "database space exceeded") ||
		!strings.Contains(st.Message, "full") {
		t.Errorf("%s on a full disk: Status %+v", what, st)
	}
	if got := res.Header.Get("Retry-After"); got != "1" {
		t.Errorf("%s on a full disk: Retry-After %q, want \"1\"", what, got)
	}
}

// waitDeleted reads w until it has reported a DELETED event for every name
// in names.
func waitDeleted(t *testing.T, w watch.Interface, names map[string]bool) {
	t.Helper()
	left := len(names)
	seen := map[string]bool{}
	timeout := time.After(eventually)
	for left > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed with %d deletes not reported", left)
			}
			if ev.Type != watch.Deleted {
				continue
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if ok && names[cm.Name] && !seen[cm.Name] {
				seen[cm.Name] = true
				left--
			}
		case <-timeout:
			t.Fatalf("watch: %d deletes not reported within %v", left, eventually)
		}
	}
}
