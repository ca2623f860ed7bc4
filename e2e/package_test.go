package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The packaged-service test installs the deb into a fresh Debian root, as
// a device's administrator would, and runs the daemon the way the unit
// does. Debian's root comes from debootstrap, once, into a cache reused
// by later runs.
const (
	// packageSuite is the Debian release the packages are tried on.
	packageSuite = "bookworm"
	// packageMirror is where debootstrap fetches it.
	packageMirror = "http://deb.debian.org/debian"
	// dynamicUID stands in for the user systemd allocates for the unit
	// (DynamicUser=yes takes one from 61184–65519).
	dynamicUID = 61184
)

// TestPackage_Deb builds the amd64 deb, installs it with dpkg into a fresh
// Debian root, runs `edgeapi version` and the daemon as the unit's
// ExecStart would (systemd is not there: the test is its stand-in, as an
// unprivileged user, with the unit's state and runtime directories and a
// notification socket), reads from it with kubectl through the kubeconfig
// it writes, upgrades to a newer deb and checks that an edit to
// /etc/edgeapi/config.yaml and the data survive, runs `edgeapi check`,
// then removes and purges the package and checks that the database stays.
//
// It needs root (chroot, mount, dpkg) and debootstrap (installed with
// apt-get when missing) with the Debian mirror reachable the first time;
// it skips, saying why, when any is missing.
func TestPackage_Deb(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chroot, mount and dpkg into a Debian root")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("needs dpkg-deb (a Debian host)")
	}
	start := time.Now()
	base := debianRoot(t)
	t.Logf("debian root ready after %v", time.Since(start).Round(time.Millisecond))

	// Two packages of the same build: the second a newer version, to
	// upgrade to.
	oldDeb := buildDeb(t, "0.0.1~test1")
	newDeb := buildDeb(t, "0.0.2~test2")
	t.Logf("packages built after %v", time.Since(start).Round(time.Millisecond))

	root := freshRoot(t, base)
	t.Logf("fresh root copied after %v", time.Since(start).Round(time.Millisecond))
	in := func(args ...string) string { return mustChroot(t, root, args...) }

	// Install.
	in("dpkg", "-i", copyInto(t, root, oldDeb))
	if got := in("dpkg-query", "-W", "-f", "${Version}", "edgeapi"); got != "0.0.1~test1-1" {
		t.Errorf("installed version = %q, want 0.0.1~test1-1", got)
	}
	for _, path := range []string{"/usr/bin/edgeapi", "/lib/systemd/system/edgeapi.service", "/lib/systemd/system/edgeapi.socket",
		"/etc/edgeapi/config.yaml", "/usr/share/doc/edgeapi/README.md"} {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("after dpkg -i: %v", err)
		}
	}
	// The postinst enabled the service (deb-systemd-helper, without a
	// running systemd) and left the socket unit alone.
	if _, err := os.Lstat(filepath.Join(root, "/etc/systemd/system/multi-user.target.wants/edgeapi.service")); err != nil {
		t.Errorf("the service is not enabled after install: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "/etc/systemd/system/sockets.target.wants/edgeapi.socket")); err == nil {
		t.Errorf("the socket unit is enabled after install; it should be the administrator's choice")
	}
	if out := in("edgeapi", "version"); !strings.Contains(out, "edgeapi") {
		t.Errorf("edgeapi version = %q", out)
	}

	// The administrator moves the port (also keeps the test off 6443,
	// which another daemon on this host may hold).
	port := freePortT(t)
	configPath := filepath.Join(root, "etc/edgeapi/config.yaml")
	config, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	listenLine := regexp.MustCompile(`(?m)^listen: .*$`)
	if !listenLine.Match(config) {
		t.Fatalf("config.yaml has no listen line:\n%s", config)
	}
	edited := listenLine.ReplaceAll(config, []byte(fmt.Sprintf("listen: 127.0.0.1:%d # edited by the administrator", port)))
	if err := os.WriteFile(configPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}

	unit := filepath.Join(root, "lib/systemd/system/edgeapi.service")
	svc := startUnit(t, root, unit)
	kubeconfig := filepath.Join(root, "var/lib/edgeapi/kubeconfig")
	kubectl := func(args ...string) KubectlResult {
		stdout, stderr, code := runTool(t, kubectlBin.Path(t), append([]string{"--kubeconfig", kubeconfig}, args...),
			[]string{"HOME=" + t.TempDir(), "KUBECONFIG="}, "")
		return KubectlResult{Args: args, Stdout: stdout, Stderr: stderr, ExitCode: code}
	}
	if res := kubectl("create", "configmap", "survives", "--from-literal=k=v"); res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	if res := kubectl("get", "namespaces", "-o", "name"); res.ExitCode != 0 || !strings.Contains(res.Stdout, "namespace/default") {
		t.Errorf("kubectl get namespaces: %s", res)
	}
	svc.stop(t)

	// Upgrade: the edit and the data survive.
	in("dpkg", "-i", copyInto(t, root, newDeb))
	if got := in("dpkg-query", "-W", "-f", "${Version}", "edgeapi"); got != "0.0.2~test2-1" {
		t.Errorf("version after upgrade = %q, want 0.0.2~test2-1", got)
	}
	if got, err := os.ReadFile(configPath); err != nil || string(got) != string(edited) {
		t.Errorf("config.yaml after upgrade (error %v):\n%s\nwant the administrator's edit:\n%s", err, got, edited)
	}
	svc = startUnit(t, root, unit)
	if res := kubectl("get", "configmap", "survives", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "v" {
		t.Errorf("configmap after upgrade: %s", res)
	}
	svc.stop(t)

	// The database checks out, as the service's user.
	mustChrootAs(t, root, dynamicUID, "edgeapi", "check", "--data-dir", "/var/lib/edgeapi")

	// Remove: the binary goes, the configuration and the data stay.
	in("dpkg", "-r", "edgeapi")
	db := filepath.Join(root, "var/lib/edgeapi/edgeapi.db")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/edgeapi")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/usr/bin/edgeapi after dpkg -r: stat error %v, want not exist", err)
	}
	if _, err := os.Stat(configPath); err != nil {
		t.Errorf("config.yaml after dpkg -r (conffiles stay until purge): %v", err)
	}
	if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system/edgeapi.service")); err != nil || target != "/dev/null" {
		t.Errorf("the unit is not masked after dpkg -r: link %q, error %v", target, err)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("database after dpkg -r: %v", err)
	}

	// Purge: the configuration and the unit's state go, the data stays.
	in("dpkg", "-P", "edgeapi")
	if _, err := os.Stat(configPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config.yaml after dpkg -P: stat error %v, want not exist", err)
	}
	for _, link := range []string{"etc/systemd/system/edgeapi.service", "etc/systemd/system/multi-user.target.wants/edgeapi.service"} {
		if _, err := os.Lstat(filepath.Join(root, link)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/%s after dpkg -P: lstat error %v, want not exist", link, err)
		}
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("database after dpkg -P (kept unless the user deletes it): %v", err)
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}

// debianRoot returns a minimal Debian root (debootstrap --variant=minbase)
// kept in .cache/debootstrap under the module root and made on first use.
// It skips the test when debootstrap cannot be had or cannot fetch.
func debianRoot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(moduleRoot, ".cache", "debootstrap", packageSuite+"-minbase-amd64")
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/dpkg")); err == nil {
		return dir
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		out, err := exec.Command("apt-get", "install", "-y", "debootstrap").CombinedOutput()
		if err != nil {
			t.Skipf("debootstrap is missing and apt-get install -y debootstrap failed: %v\n%s", err, tail(out))
		}
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	t.Logf("debootstrap --variant=minbase %s into %s (once; later runs reuse it)", packageSuite, dir)
	out, err := exec.Command("debootstrap", "--variant=minbase", packageSuite, tmp, packageMirror).CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		t.Skipf("debootstrap %s from %s failed (no network to the mirror?): %v\n%s", packageSuite, packageMirror, err, tail(out))
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tail is the end of a command's output, for messages.
func tail(out []byte) string {
	const n = 2000
	if len(out) > n {
		return "..." + string(out[len(out)-n:])
	}
	return string(out)
}

// buildDeb builds the amd64 deb of the default variant (edgeapi) with
// version into a directory of its own and returns its path.
func buildDeb(t *testing.T, version string) string {
	t.Helper()
	return buildDebs(t, version, "default")["default"]
}

// buildDebs builds the amd64 debs of the build variants (scripts/package's
// VARIANTS: default for edgeapi, ha for edgeapi-ha) with version into a
// directory of their own and returns their paths by variant.
func buildDebs(t *testing.T, version string, variants ...string) map[string]string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.Command(filepath.Join(moduleRoot, "scripts/package"))
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "ARCHES=amd64", "PACKAGERS=deb", "DIST="+dist, "EDGEAPI_PKG_VERSION="+version,
		"VARIANTS="+strings.Join(variants, " "))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/package (version %s, variants %q): %v\n%s", version, variants, err, out)
	}
	debs := map[string]string{}
	for _, variant := range variants {
		name := map[string]string{"default": "edgeapi", "ha": "edgeapi-ha"}[variant]
		found, _ := filepath.Glob(filepath.Join(dist, name+"_*_amd64.deb"))
		if len(found) != 1 {
			t.Fatalf("scripts/package made %q for %s, want one amd64 deb", found, name)
		}
		debs[variant] = found[0]
	}
	return debs
}

// freshRoot copies base into a new directory and mounts /proc there. The
// copy is removed when the test ends, after /proc is unmounted; if the
// unmount fails, the copy is left in place rather than removed through a
// mount.
func freshRoot(t *testing.T, base string) string {
	t.Helper()
	root, err := os.MkdirTemp("", "edgeapi-debroot-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", base+"/.", root).CombinedOutput(); err != nil {
		os.RemoveAll(root)
		t.Fatalf("copy the debian root: %v\n%s", err, out)
	}
	proc := filepath.Join(root, "proc")
	if err := syscall.Mount("proc", proc, "proc", 0, ""); err != nil {
		os.RemoveAll(root)
		t.Skipf("mount proc in the debian root: %v (a container without CAP_SYS_ADMIN?)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(proc, 0); err != nil {
			t.Errorf("unmount %s: %v; leaving %s in place", proc, err, root)
			return
		}
		os.RemoveAll(root)
	})
	return root
}

// copyInto copies file into root's /tmp and returns its path inside root.
func copyInto(t *testing.T, root, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	inside := "/tmp/" + filepath.Base(file)
	if err := os.WriteFile(filepath.Join(root, inside), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return inside
}

// chrootCmd is args run in root, as uid (0 for root), with a plain
// environment.
func chrootCmd(root string, uid int, args ...string) *exec.Cmd {
	// exec.Command would look the program up on the host's PATH.
	cmd := &exec.Cmd{Path: lookInRoot(root, args[0]), Args: args, Dir: "/"}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	if uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), NoSetGroups: true}
	}
	return cmd
}

// lookInRoot is the path of program inside root: program itself when it
// holds a slash, else the first match on chrootCmd's PATH (or program,
// for exec to report as missing).
func lookInRoot(root, program string) string {
	if strings.Contains(program, "/") {
		return program
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		if fi, err := os.Stat(filepath.Join(root, dir, program)); err == nil && fi.Mode().IsRegular() {
			return dir + "/" + program
		}
	}
	return program
}

// mustChroot runs args in root as root and returns its trimmed standard
// output; it fails the test unless args exits 0.
func mustChroot(t *testing.T, root string, args ...string) string {
	t.Helper()
	return mustChrootAs(t, root, 0, args...)
}

func mustChrootAs(t *testing.T, root string, uid int, args ...string) string {
	t.Helper()
	cmd := chrootCmd(root, uid, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("in the debian root, %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// unitProcess is the daemon as the test runs it in place of systemd.
type unitProcess struct {
	cmd    *exec.Cmd
	output *logBuffer
	exited chan struct{}
	err    error
}

// startUnit starts the daemon as systemd would start the unit file
// (a path on the host): its ExecStart, as an unprivileged user standing in
// for DynamicUser=, with StateDirectory= and RuntimeDirectory= made with
// their modes, and NOTIFY_SOCKET; it returns once the daemon has sent
// READY=1. Nothing of the unit's sandbox is applied. Nothing is added to
// ExecStart: the unit serves HTTPS with the kubeconfig it writes.
func startUnit(t *testing.T, root, unit string) *unitProcess {
	t.Helper()
	fields := unitFields(t, unit)
	if fields["Type"] != "notify" || fields["DynamicUser"] != "yes" {
		t.Fatalf("%s: Type=%s DynamicUser=%s; the test stands in for systemd with Type=notify and DynamicUser=yes", unit, fields["Type"], fields["DynamicUser"])
	}
	for _, d := range []struct{ key, parent, modeKey string }{
		{"StateDirectory", "var/lib", "StateDirectoryMode"},
		{"RuntimeDirectory", "run", "RuntimeDirectoryMode"},
	} {
		var mode uint32
		if _, err := fmt.Sscanf(fields[d.modeKey], "%o", &mode); err != nil {
			t.Fatalf("%s: %s=%q: %v", unit, d.modeKey, fields[d.modeKey], err)
		}
		path := filepath.Join(root, d.parent, fields[d.key])
		if err := os.MkdirAll(path, os.FileMode(mode)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, os.FileMode(mode)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, dynamicUID, dynamicUID); err != nil {
			t.Fatal(err)
		}
	}

	// The notification socket, inside the root where the daemon sees it.
	notifyPath := filepath.Join(root, "run", "notify.sock")
	os.Remove(notifyPath)
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { notify.Close() })
	if err := os.Chmod(notifyPath, 0o777); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				return
			}
			if strings.Contains("\n"+string(buf[:n])+"\n", "\nREADY=1\n") {
				close(ready)
				return
			}
		}
	}()

	args := strings.Fields(fields["ExecStart"])
	cmd := chrootCmd(root, dynamicUID, args...)
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET=/run/notify.sock")
	p := &unitProcess{cmd: cmd, output: &logBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.output, p.output
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", fields["ExecStart"], err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("daemon output:\n%s", p.output.String())
		}
	})
	select {
	case <-ready:
	case <-p.exited:
		t.Fatalf("%s exited before READY=1: %v\n%s", fields["ExecStart"], p.err, p.output.String())
	case <-time.After(readyTimeout):
		t.Fatalf("%s: no READY=1 within %v\n%s", fields["ExecStart"], readyTimeout, p.output.String())
	}
	return p
}

// stop sends SIGTERM, as systemctl stop does, and waits for exit 0.
func (p *unitProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("the daemon did not exit within %v of SIGTERM", stopTimeout)
	}
	if p.err != nil {
		t.Errorf("the daemon exited with %v after SIGTERM, want 0\n%s", p.err, p.output.String())
	}
}

// unitFields reads the [Service] settings of a unit file; a key given
// twice keeps the last.
func unitFields(t *testing.T, unit string) map[string]string {
	t.Helper()
	f, err := os.Open(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fields := map[string]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			if k, v, ok := strings.Cut(line, "="); ok {
				fields[k] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fields
}

// freePortT is freePort for a test.
func freePortT(t *testing.T) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
