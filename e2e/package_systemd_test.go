//go:build !(arm || 386 || mips || mipsle)

// lossyfs (go-fuse) does not compile on 32-bit platforms: see powercut_test.go.

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/e2e/internal/lossyfs"
)

// The packaged service under a real systemd: a Debian root with systemd
// installed is booted in a container (systemd-nspawn --boot) with systemd
// as its PID 1 and a network namespace of its own, and the deb is
// installed there as on a device. Unlike TestPackage_Deb, nothing stands
// in for systemd: the unit runs as written, with DynamicUser=, its
// directories, the sandbox and the seccomp filter, Type=notify and the
// watchdog.

const (
	// bootTimeout bounds the wait for the container's systemd to finish
	// booting, and for it to power off. It is a hang guard.
	bootTimeout = 120 * time.Second
	// testWatchdogSec replaces the unit's WatchdogSec= (30s) in a drop-in,
	// so that a missed ping is acted on within the test's time. Each of
	// the daemon's probes is then bounded by 2s.
	testWatchdogSec = 6
)

// TestPackage_DebUnderSystemd installs the deb into a Debian root booted
// with systemd as PID 1 and checks what the administrator of a device
// sees: the postinst starts edgeapi.service (Type=notify, so it is active
// only once the daemon said READY=1), the daemon runs as a dynamic user
// inside the sandbox (no capabilities, no_new_privs, a seccomp filter),
// kubectl reads and writes through the kubeconfig it wrote. Then:
//
//   - the watchdog: with the daemon stopped (SIGSTOP), systemd's watchdog
//     fires, kills it and restarts it (NRestarts goes up, the journal says
//     why), and what was written before is served again;
//   - socket activation: with edgeapi.socket enabled the service is
//     started by the first connection, and a client that connects while
//     the service restarts is served, not refused;
//   - an upgrade under the running systemd: the postinst restarts the
//     service, and the edit to config.yaml, the data and the enabled
//     socket unit stay;
//   - `systemd-analyze security edgeapi`, logged;
//   - remove and purge stop the units and leave the database.
//
// It needs root, systemd-nspawn (apt-get install systemd-container, done
// here when missing) and, the first time, the Debian mirror; it skips,
// saying why, when one is missing or when systemd cannot boot in a
// container on this machine.
func TestPackage_DebUnderSystemd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: systemd-nspawn, chroot and dpkg into a Debian root")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("needs dpkg-deb (a Debian host)")
	}
	// The deb's daemon is the SQLite build whatever the e2e run's backend:
	// once is enough.
	requireSQLite(t)
	start := time.Now()
	sys, root := installUnderSystemd(t, nil, nil)
	t.Logf("installed and started after %v", time.Since(start).Round(time.Millisecond))
	if got := sys.output(t, "systemctl", "is-enabled", "edgeapi.service"); got != "enabled" {
		t.Errorf("systemctl is-enabled edgeapi.service = %q, want enabled", got)
	}

	// The sandbox, as the kernel applies it to the main process.
	status := sys.mustRun(t, "cat", "/proc/"+sys.show(t, "edgeapi.service", "MainPID")+"/status")
	for _, want := range []struct{ field, value string }{
		{"NoNewPrivs", "1"},
		{"Seccomp", "2"},
		{"CapEff", "0000000000000000"},
		{"CapBnd", "0000000000000000"},
	} {
		if got := statusField(status, want.field); got != want.value {
			t.Errorf("/proc/MAINPID/status %s = %q, want %q", want.field, got, want.value)
		}
	}
	if uid := strings.Fields(statusField(status, "Uid")); len(uid) == 0 || uid[0] == "0" {
		t.Errorf("the daemon runs as uid %q, want a dynamic user", statusField(status, "Uid"))
	}

	kubeconfig := filepath.Join(root, "var/lib/private/edgeapi/kubeconfig")
	sys.mustKubectl(t, kubeconfig, "create", "configmap", "before-watchdog", "--from-literal=k=v")
	if res := sys.kubectl(kubeconfig, "get", "namespaces", "-o", "name"); res.ExitCode != 0 || !strings.Contains(res.Stdout, "namespace/default") {
		t.Errorf("kubectl get namespaces: %s", res)
	}

	// The watchdog: a daemon that stops answering is killed and restarted.
	dropIn := writeWatchdogDropIn(t, root)
	sys.mustRun(t, "systemctl", "daemon-reload")
	sys.mustRun(t, "systemctl", "restart", "edgeapi.service")
	restarts := sys.show(t, "edgeapi.service", "NRestarts")
	stopped := sys.show(t, "edgeapi.service", "MainPID")
	sys.mustRun(t, "systemctl", "kill", "--kill-who=main", "--signal=SIGSTOP", "edgeapi.service")
	sys.waitFor(t, "systemd to restart the stopped daemon", func() bool {
		pid := sys.show(t, "edgeapi.service", "MainPID")
		return sys.show(t, "edgeapi.service", "NRestarts") != restarts && pid != "0" && pid != stopped &&
			sys.show(t, "edgeapi.service", "ActiveState") == "active"
	})
	journal := sys.journal(t, "edgeapi.service")
	for _, want := range []string{"Watchdog timeout", "SIGABRT"} {
		if !strings.Contains(journal, want) {
			t.Errorf("the journal of edgeapi.service has no %q:\n%s", want, journal)
		}
	}
	t.Logf("the journal on the way:\n%s", grepLines(journal, "Watchdog", "SIGABRT", "restart", "Started"))
	if res := sys.kubectl(kubeconfig, "get", "configmap", "before-watchdog", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "v" {
		t.Errorf("configmap after the watchdog's restart: %s", res)
	}
	if err := os.Remove(dropIn); err != nil {
		t.Fatal(err)
	}
	sys.mustRun(t, "systemctl", "daemon-reload")

	// Socket activation: the socket unit holds the port, and the first
	// connection starts the service.
	sys.mustRun(t, "systemctl", "stop", "edgeapi.service")
	sys.mustRun(t, "systemctl", "enable", "--now", "edgeapi.socket")
	if got := sys.output(t, "systemctl", "is-active", "edgeapi.service"); got != "inactive" {
		t.Fatalf("edgeapi.service is %q before any connection, want inactive", got)
	}
	if res := sys.kubectl(kubeconfig, "get", "configmap", "before-watchdog", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "v" {
		t.Errorf("kubectl through the socket unit, the service stopped: %s\n%s", res, sys.journal(t, "edgeapi.service"))
	}
	// The daemon answers on the passed socket as soon as it serves;
	// systemd marks the service active once it has read its READY=1,
	// which on a loaded machine can come a moment after the answer.
	got := sys.output(t, "systemctl", "is-active", "edgeapi.service")
	for deadline := time.Now().Add(eventually); got == "activating" && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		got = sys.output(t, "systemctl", "is-active", "edgeapi.service")
	}
	if got != "active" {
		t.Errorf("edgeapi.service is %q after a connection to edgeapi.socket, want active", got)
	}
	activated := sys.show(t, "edgeapi.service", "MainPID")

	// A restart while clients connect: none is refused. The clients run
	// until the restart is over, then twice more.
	var (
		mu      sync.Mutex
		results []KubectlResult
	)
	restarted := make(chan struct{})
	clients := make(chan struct{})
	go func() {
		defer close(clients)
		after := 0
		for after < 2 {
			select {
			case <-restarted:
				after++
			default:
			}
			res := sys.kubectl(kubeconfig, "get", "configmap", "before-watchdog", "-o", "jsonpath={.data.k}")
			mu.Lock()
			results = append(results, res)
			mu.Unlock()
		}
	}()
	out, restartErr := sys.run("systemctl", "restart", "edgeapi.service")
	close(restarted)
	<-clients
	if restartErr != nil {
		t.Fatalf("systemctl restart edgeapi.service: %v\n%s", restartErr, out)
	}
	if pid := sys.show(t, "edgeapi.service", "MainPID"); pid == activated {
		t.Errorf("MainPID is %s after the restart, as before it", pid)
	}
	for _, res := range results {
		if res.ExitCode != 0 || res.Stdout != "v" {
			t.Errorf("a client during the restart: %s", res)
		}
	}
	t.Logf("%d clients during and after the restart", len(results))

	// Upgrade under the running systemd: the postinst restarts the
	// service, an edit to config.yaml stays, and so do the data and the
	// enabled socket unit.
	configPath := filepath.Join(root, "etc/edgeapi/config.yaml")
	config, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(config), "\nlog-level: info\n", "\nlog-level: debug # edited by the administrator\n", 1)
	if edited == string(config) {
		t.Fatalf("config.yaml has no log-level: info line:\n%s", config)
	}
	if err := os.WriteFile(configPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	newDeb := buildDeb(t, "0.0.2~sd2")
	b, err := os.ReadFile(newDeb)
	if err != nil {
		t.Fatal(err)
	}
	// Into the container's root, which it sees as it is (its /tmp is a
	// tmpfs of its own).
	inside := "/var/tmp/" + filepath.Base(newDeb)
	if err := os.WriteFile(filepath.Join(root, inside), b, 0o644); err != nil {
		t.Fatal(err)
	}
	beforeUpgrade := sys.show(t, "edgeapi.service", "MainPID")
	sys.mustRun(t, "dpkg", "-i", inside)
	if got := strings.TrimSpace(sys.mustRun(t, "dpkg-query", "-W", "-f", "${Version}", "edgeapi")); got != "0.0.2~sd2-1" {
		t.Errorf("version after the upgrade = %q, want 0.0.2~sd2-1", got)
	}
	if got, err := os.ReadFile(configPath); err != nil || string(got) != edited {
		t.Errorf("config.yaml after the upgrade (error %v):\n%s\nwant the administrator's edit:\n%s", err, got, edited)
	}
	for _, unit := range []string{"edgeapi.socket", "edgeapi.service"} {
		if got := sys.output(t, "systemctl", "is-active", unit); got != "active" {
			t.Errorf("%s is %q after the upgrade, want active", unit, got)
		}
	}
	if pid := sys.show(t, "edgeapi.service", "MainPID"); pid == beforeUpgrade {
		t.Errorf("MainPID is %s after the upgrade, as before it: the postinst did not restart the service", pid)
	}
	if res := sys.kubectl(kubeconfig, "get", "configmap", "before-watchdog", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "v" {
		t.Errorf("configmap after the upgrade: %s", res)
	}

	// What systemd thinks of the sandbox, for the log.
	if out, err := sys.run("systemd-analyze", "security", "--no-pager", "edgeapi.service"); err != nil {
		t.Errorf("systemd-analyze security edgeapi.service: %v\n%s", err, out)
	} else {
		t.Logf("systemd-analyze security edgeapi.service:\n%s", out)
	}

	// Remove: the prerm stops both units; the data stays. Purge: it still
	// stays.
	sys.mustRun(t, "dpkg", "-r", "edgeapi")
	for _, unit := range []string{"edgeapi.socket", "edgeapi.service"} {
		if got := sys.output(t, "systemctl", "is-active", unit); got == "active" {
			t.Errorf("%s is %s after dpkg -r", unit, got)
		}
	}
	db := filepath.Join(root, "var/lib/private/edgeapi/edgeapi.db")
	if _, err := os.Stat(db); err != nil {
		t.Errorf("database after dpkg -r: %v", err)
	}
	sys.mustRun(t, "dpkg", "-P", "edgeapi")
	if _, err := os.Stat(db); err != nil {
		t.Errorf("database after dpkg -P: %v", err)
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}

// copyRoot copies base into a new directory, removed when the test ends.
// Unlike freshRoot it mounts nothing there: systemd-nspawn mounts the
// container's own /proc, and a host /proc under it would show through when
// the container's systemd unmounts everything at power-off.
func copyRoot(t *testing.T, base string) string {
	t.Helper()
	root, err := os.MkdirTemp("", "edgeapi-sdroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if out, err := exec.Command("cp", "-a", base+"/.", root).CombinedOutput(); err != nil {
		t.Fatalf("copy the debian root: %v\n%s", err, out)
	}
	return root
}

// TestPackage_DebUnderSystemdStuckWriter is the watchdog's reason to be:
// the packaged service, under systemd, on a state directory whose disk
// stops completing fsyncs (lossyfs bound at /var/lib/private/edgeapi,
// with its syncs held). A write leaves the store's writer stuck in the
// WAL's fsync; the daemon stops pinging while its HTTP server still works;
// systemd's watchdog kills it (SIGABRT) and restarts it. Once the disk
// completes fsyncs again the restarted daemon comes up and serves what was
// written before; the held write is readable if kubectl saw it
// acknowledged.
//
// It needs what TestPackage_DebUnderSystemd needs, and /dev/fuse.
func TestPackage_DebUnderSystemdStuckWriter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: systemd-nspawn, FUSE, chroot and dpkg into a Debian root")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("needs dpkg-deb (a Debian host)")
	}
	requireSQLite(t)
	dir, err := os.MkdirTemp("", "edgeapi-sdstate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	// The service's dynamic user, not root, uses it.
	fsys, err := lossyfs.MountWith(dir, lossyfs.Options{AllowOther: true})
	if err != nil {
		t.Skipf("this machine cannot mount a FUSE file system: %v", err)
	}
	t.Cleanup(func() {
		if err := fsys.Unmount(); err != nil {
			t.Errorf("%v", err)
		}
	})
	start := time.Now()
	sys, _ := installUnderSystemd(t, []string{"--bind", dir + ":/var/lib/private/edgeapi"}, func(root string) {
		writeWatchdogDropIn(t, root)
	})
	// Cleanups run last first: the fsyncs are released before the
	// container powers off, and the file system unmounted after.
	t.Cleanup(fsys.ReleaseSyncs)
	t.Logf("installed and started after %v", time.Since(start).Round(time.Millisecond))
	if got := sys.output(t, "findmnt", "--noheadings", "--output", "FSTYPE", "/var/lib/private/edgeapi"); got != "fuse.lossyfs" {
		t.Fatalf("the state directory's file system is %q, want fuse.lossyfs", got)
	}
	// The state directory is the lossyfs mount, seen from the host.
	kubeconfig := filepath.Join(fsys.Dir, "kubeconfig")
	sys.mustKubectl(t, kubeconfig, "create", "configmap", "before", "--from-literal=k=v")
	restarts := sys.show(t, "edgeapi.service", "NRestarts")
	stuck := sys.show(t, "edgeapi.service", "MainPID")

	// The disk stops completing fsyncs, and a write waits for one.
	fsys.HoldSyncs()
	held := make(chan KubectlResult, 1)
	go func() {
		held <- sys.kubectl(kubeconfig, "create", "configmap", "held", "--from-literal=k=held")
	}()
	sys.waitFor(t, "the write's fsync to be held", func() bool { return fsys.HeldSyncs() > 0 })
	sys.waitFor(t, "systemd to restart the daemon whose writer is stuck", func() bool {
		return sys.show(t, "edgeapi.service", "NRestarts") != restarts
	})
	// The disk recovers; the new daemon may have waited for it to start.
	fsys.ReleaseSyncs()
	sys.waitFor(t, "the restarted daemon to be active", func() bool {
		pid := sys.show(t, "edgeapi.service", "MainPID")
		return pid != "0" && pid != stuck && sys.show(t, "edgeapi.service", "ActiveState") == "active"
	})
	journal := sys.journal(t, "edgeapi.service")
	for _, want := range []string{"store writer", "Watchdog timeout", "SIGABRT"} {
		if !strings.Contains(journal, want) {
			t.Errorf("the journal of edgeapi.service has no %q:\n%s", want, journal)
		}
	}
	t.Logf("the journal on the way:\n%s", grepLines(journal, "liveness probe", "Watchdog", "SIGABRT", "restart", "Started", "READY"))
	if res := sys.kubectl(kubeconfig, "get", "configmap", "before", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "v" {
		t.Errorf("configmap written before the stuck writer, after the restart: %s", res)
	}
	if res := <-held; res.ExitCode != 0 {
		t.Logf("the held write was not acknowledged: %s", res)
	} else if got := sys.kubectl(kubeconfig, "get", "configmap", "held", "-o", "jsonpath={.data.k}"); got.ExitCode != 0 || got.Stdout != "held" {
		t.Errorf("the held write was acknowledged (%s) but reads back as: %s", res, got)
	} else {
		t.Logf("the held write was acknowledged and is readable after the restart")
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}

// installUnderSystemd builds the deb, boots a copy of systemdRoot with
// nspawnArgs added to systemd-nspawn's, after prepare (when not nil) has
// changed the root, installs the deb with dpkg and checks that the
// postinst started edgeapi.service. It returns the system and its root
// directory on the host.
func installUnderSystemd(t *testing.T, nspawnArgs []string, prepare func(root string)) (*bootedSystem, string) {
	t.Helper()
	base := systemdRoot(t)
	deb := buildDeb(t, "0.0.1~sd1")
	root := copyRoot(t, base)
	if prepare != nil {
		prepare(root)
	}
	sys := bootSystemd(t, root, filepath.Dir(deb), nspawnArgs...)
	sys.mustRun(t, "dpkg", "-i", "/mnt/debs/"+filepath.Base(deb))
	if got := sys.output(t, "systemctl", "is-active", "edgeapi.service"); got != "active" {
		t.Fatalf("systemctl is-active edgeapi.service after dpkg -i = %q, want active\n%s", got, sys.journal(t, "edgeapi.service"))
	}
	return sys, root
}

// writeWatchdogDropIn writes a drop-in that sets WatchdogSec= to
// testWatchdogSec for edgeapi.service into root, and returns its path on
// the host.
func writeWatchdogDropIn(t *testing.T, root string) string {
	t.Helper()
	dropIn := filepath.Join(root, "etc/systemd/system/edgeapi.service.d/test-watchdog.conf")
	if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dropIn, fmt.Appendf(nil, "[Service]\nWatchdogSec=%ds\n", testWatchdogSec), 0o644); err != nil {
		t.Fatal(err)
	}
	return dropIn
}

// grepLines is the lines of text that hold any of words, for the log.
func grepLines(text string, words ...string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				b.WriteString(line + "\n")
				break
			}
		}
	}
	return b.String()
}

// statusField is a field of /proc/PID/status, "" when absent.
func statusField(status, field string) string {
	for _, line := range strings.Split(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// systemdRoot returns debianRoot with systemd, systemd-sysv and dbus
// installed, kept in .cache/debootstrap beside it and made on first use.
// It skips the test when the packages cannot be installed.
func systemdRoot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(moduleRoot, ".cache", "debootstrap", packageSuite+"-systemd-amd64")
	if _, err := os.Stat(filepath.Join(dir, "lib/systemd/systemd")); err == nil {
		return dir
	}
	base := debianRoot(t)
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if out, err := exec.Command("cp", "-a", base+"/.", tmp).CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		t.Fatalf("copy the debian root: %v\n%s", err, out)
	}
	t.Logf("apt-get install systemd into %s (once; later runs reuse it)", dir)
	err := installSystemd(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		t.Skipf("install systemd into the debian root (no network to the mirror?): %v", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// installSystemd installs systemd as init, and dbus, into root with apt-get
// in a chroot.
func installSystemd(root string) error {
	proc := filepath.Join(root, "proc")
	if err := syscall.Mount("proc", proc, "proc", 0, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	defer syscall.Unmount(proc, syscall.MNT_DETACH)
	resolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return fmt.Errorf("read resolv.conf: %w", err)
	}
	inRoot := filepath.Join(root, "etc/resolv.conf")
	os.Remove(inRoot)
	if err := os.WriteFile(inRoot, resolv, 0o644); err != nil {
		return fmt.Errorf("write resolv.conf: %w", err)
	}
	defer os.Remove(inRoot)
	cmd := chrootCmd(root, 0, "sh", "-c",
		"apt-get update -q && apt-get install -y -q --no-install-recommends systemd systemd-sysv dbus && apt-get clean")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get: %w\n%s", err, tail(out))
	}
	return nil
}

// bootedSystem is a Debian root booted in a container by systemd-nspawn,
// with systemd as its PID 1 and a network namespace of its own (only
// loopback): the daemon's 127.0.0.1:6443 there is no other's.
type bootedSystem struct {
	// pid is the container's PID 1, systemd, as the host numbers it.
	pid     int
	nsenter string
	// kubectlPath is the host's kubectl, and home its HOME.
	kubectlPath, home string
	// machine is the container's name.
	machine string
	// booted is set once systemd has finished booting.
	booted  bool
	nspawn  *exec.Cmd
	console *logBuffer
	exited  chan struct{}
}

// bootSystemd boots root with systemd-nspawn, the directory debs bound
// read-only at /mnt/debs and nspawnArgs added, and waits until systemd reports the boot done
// (running or degraded). It powers the container off when the test ends.
// It skips the test when systemd-nspawn is missing and cannot be
// installed, or when systemd does not boot (a machine whose kernel or
// cgroups it cannot use).
func bootSystemd(t *testing.T, root, debs string, nspawnArgs ...string) *bootedSystem {
	t.Helper()
	nspawn, err := exec.LookPath("systemd-nspawn")
	if err != nil {
		// A new machine may have no package lists yet.
		if _, err := exec.Command("apt-get", "install", "-y", "systemd-container").CombinedOutput(); err != nil {
			exec.Command("apt-get", "update").Run()
			if out, err := exec.Command("apt-get", "install", "-y", "systemd-container").CombinedOutput(); err != nil {
				t.Skipf("systemd-nspawn is missing and apt-get install -y systemd-container failed: %v\n%s", err, tail(out))
			}
		}
		if nspawn, err = exec.LookPath("systemd-nspawn"); err != nil {
			t.Skipf("systemd-nspawn: %v", err)
		}
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skipf("nsenter: %v", err)
	}
	s := &bootedSystem{nsenter: nsenter, kubectlPath: kubectlBin.Path(t), home: t.TempDir(),
		machine: filepath.Base(root), console: &logBuffer{}, exited: make(chan struct{})}
	// --register=no and --keep-unit: there is no systemd on the host to
	// register the machine with or to make a scope in.
	args := append([]string{"--quiet", "--register=no", "--keep-unit", "--private-network",
		"--directory", root, "--machine", s.machine, "--bind-ro", debs + ":/mnt/debs",
		"--console=passive"}, nspawnArgs...)
	args = append(args, "--boot")
	if procs := containerCgroups(t, s.machine); len(procs) > 0 {
		// Into the container's own cgroups first: with --keep-unit
		// systemd-nspawn makes its payload and supervisor cgroups under
		// its own.
		script := `for p in ` + strings.Join(procs, " ") + `; do echo $$ > "$p" || exit 1; done; exec "$0" "$@"`
		s.nspawn = exec.Command("/bin/sh", append([]string{"-c", script, nspawn}, args...)...)
	} else {
		s.nspawn = exec.Command(nspawn, args...)
	}
	s.nspawn.Stdout, s.nspawn.Stderr = s.console, s.console
	if err := s.nspawn.Start(); err != nil {
		t.Skipf("start systemd-nspawn: %v", err)
	}
	go func() {
		s.nspawn.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.powerOff(t) })

	deadline := time.Now().Add(bootTimeout)
	for s.pid == 0 {
		select {
		case <-s.exited:
			t.Skipf("systemd-nspawn exited before systemd started: %v\n%s", s.nspawn.ProcessState, s.console.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Skipf("no systemd in the container after %v\n%s", bootTimeout, s.console.String())
		}
		s.pid = containerInit(s.nspawn.Process.Pid)
		time.Sleep(100 * time.Millisecond)
	}
	// PID 1 is systemd-nspawn's child until it execs systemd; systemctl
	// then fails to connect (or says "offline") until systemd has made its
	// socket, and after that --wait waits for the boot to end.
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	var state string
	for ctx.Err() == nil {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", s.pid)); strings.TrimSpace(string(comm)) == "systemd" {
			out, _ := s.command(ctx, "systemctl", "is-system-running", "--wait").CombinedOutput()
			state = strings.TrimSpace(string(out))
			if state == "running" || state == "degraded" {
				s.booted = true
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	failed, _ := s.run("systemctl", "--failed", "--no-pager")
	t.Skipf("systemd did not boot in the container within %v: is-system-running = %q\n%s\nconsole:\n%s", bootTimeout, state, failed, s.console.String())
	return nil
}

// containerCgroups makes a cgroup named name for a container in each
// hierarchy where systemd-nspawn makes its own (the cgroup2 one, and the
// named systemd one of a hybrid layout), and returns the paths of their
// cgroup.procs files. Without a systemd on the host, systemd-nspawn
// --keep-unit would make them under the caller's cgroup, the root here,
// where two containers would share them. It returns nothing on a host
// whose PID 1 is systemd, where the caller's cgroup is a unit's. The
// cgroups are removed when the test ends, after the container (cleanups
// run last first).
func containerCgroups(t *testing.T, name string) []string {
	t.Helper()
	if comm, _ := os.ReadFile("/proc/1/comm"); strings.TrimSpace(string(comm)) == "systemd" {
		return nil
	}
	var procs []string
	for _, base := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup"} {
		var fsys syscall.Statfs_t
		if err := syscall.Statfs(base, &fsys); err != nil {
			continue
		}
		// cgroup2 (0x63677270), or a v1 hierarchy (0x27e0eb) only
		// when it is systemd's.
		if fsys.Type != 0x63677270 && (fsys.Type != 0x27e0eb || filepath.Base(base) != "systemd") {
			continue
		}
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("make the container's cgroup: %v", err)
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs
}

// removeCgroup removes the cgroup dir and those under it, deepest first.
// A cgroup that still holds a process stays, with an error.
func removeCgroup(t *testing.T, dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil {
			t.Errorf("remove cgroup %s: %v", dirs[i], err)
		}
	}
}

// containerInit is the host's pid of the child of systemd-nspawn (pid
// nspawn) that is PID 1 in its own pid namespace, 0 when there is none yet.
func containerInit(nspawn int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || statusField(string(status), "PPid") != strconv.Itoa(nspawn) {
			continue
		}
		if nspid := strings.Fields(statusField(string(status), "NSpid")); len(nspid) > 1 && nspid[len(nspid)-1] == "1" {
			return pid
		}
	}
	return 0
}

// powerOff asks the container's systemd to power off (SIGTERM to
// systemd-nspawn) and waits; past bootTimeout it kills the container.
func (s *bootedSystem) powerOff(t *testing.T) {
	defer func() {
		// systemd-nspawn leaves this empty directory behind when it
		// runs without a systemd on the host.
		os.Remove(filepath.Join("/run/systemd/nspawn/propagate", s.machine))
		if t.Failed() {
			t.Logf("container console:\n%s", s.console.String())
		}
	}()
	if !s.booted {
		// A systemd that did not boot may not be there to power off.
		if s.pid != 0 {
			syscall.Kill(s.pid, syscall.SIGKILL)
		}
		s.nspawn.Process.Kill()
		<-s.exited
		return
	}
	s.nspawn.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(bootTimeout):
		t.Errorf("the container did not power off within %v; killing it", bootTimeout)
		if s.pid != 0 {
			syscall.Kill(s.pid, syscall.SIGKILL)
		}
		s.nspawn.Process.Kill()
		<-s.exited
	}
}

// command is args run in the container (all its namespaces, its root),
// with a plain environment.
func (s *bootedSystem) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"--target", strconv.Itoa(s.pid), "--all", "--",
		"/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive",
		"SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}, args...)
	return exec.CommandContext(ctx, s.nsenter, full...)
}

// run runs args in the container, bounded by twice the request timeout,
// and returns its combined output.
func (s *bootedSystem) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	out, err := s.command(ctx, args...).CombinedOutput()
	return string(out), err
}

// output is the trimmed standard output of args in the container,
// whatever its exit code (systemctl is-active exits 3 for inactive).
func (s *bootedSystem) output(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	out, _ := s.command(ctx, args...).Output()
	return strings.TrimSpace(string(out))
}

// mustRun runs args in the container and returns its standard output; it
// fails the test unless args exits 0.
func (s *bootedSystem) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	cmd := s.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("in the container, %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// show is one property of a unit (systemctl show -p).
func (s *bootedSystem) show(t *testing.T, unit, property string) string {
	t.Helper()
	return strings.TrimSpace(s.mustRun(t, "systemctl", "show", "--property", property, "--value", unit))
}

// journal is the unit's journal since boot, for messages.
func (s *bootedSystem) journal(t *testing.T, unit string) string {
	t.Helper()
	out, _ := s.run("journalctl", "--no-pager", "--boot", "--unit", unit, "--output", "short-monotonic")
	return out
}

// waitFor polls cond until it holds or the eventually deadline passes.
func (s *bootedSystem) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s\n%s", eventually, what, s.journal(t, "edgeapi.service"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectl runs the host's kubectl in the container's network namespace
// (where its 127.0.0.1 is) with kubeconfig, a path on the host, bounded
// by twice the request timeout. It does not fail the test, so that
// goroutines may call it: a kubectl that cannot run has exit code -1 and
// the error in Stderr.
func (s *bootedSystem) kubectl(kubeconfig string, args ...string) KubectlResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
	defer cancel()
	full := append([]string{"--target", strconv.Itoa(s.pid), "--net", "--", s.kubectlPath, "--kubeconfig", kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, s.nsenter, full...)
	cmd.Env = append(os.Environ(), "HOME="+s.home, "KUBECONFIG=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := KubectlResult{Args: args}
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		res.ExitCode = -1
		stderr.WriteString(err.Error())
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	return res
}

// mustKubectl is kubectl that fails the test unless kubectl exits 0.
func (s *bootedSystem) mustKubectl(t *testing.T, kubeconfig string, args ...string) KubectlResult {
	t.Helper()
	res := s.kubectl(kubeconfig, args...)
	if res.ExitCode != 0 {
		t.Fatalf("%s\n%s", res, s.journal(t, "edgeapi.service"))
	}
	return res
}
