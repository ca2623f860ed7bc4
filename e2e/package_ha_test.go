package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPackage_DebHA installs the edgeapi deb into a fresh Debian root, then
// switches to the edgeapi-ha deb by installing it (Conflicts and Replaces
// remove edgeapi), back to edgeapi, and to edgeapi-ha again. After each
// switch it purges the package switched from, and checks which package owns /usr/bin/edgeapi, what `edgeapi
// version` says, that the administrator's config.yaml and the service's
// enablement survived (no mask left by the removed package), and that the
// daemon serves the data of the SQLite file, started as the unit's
// ExecStart says (see TestPackage_Deb for how the test stands in for
// systemd). edgeapi-ha without --etcd-servers and edgeapi with etcd3 both
// refuse to start with the flag error. Last, edgeapi-ha serves from an etcd
// the test starts, configured by uncommenting the etcd lines of the shipped
// config.yaml, and purging it keeps the database.
//
// It needs what TestPackage_Deb needs, and an etcd binary for the last part
// (EDGEAPI_ETCD, or scripts/kube-ref-build etcd; scripts/test provides it):
// without one it skips, saying why, after the switches.
func TestPackage_DebHA(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chroot, mount and dpkg into a Debian root")
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("needs dpkg-deb (a Debian host)")
	}
	if onEtcd() {
		t.Skip("the packages do not depend on the e2e backend: run in the SQLite run only")
	}
	start := time.Now()
	base := debianRoot(t)
	debs := buildDebs(t, "0.0.1~test1", "default", "ha")
	t.Logf("packages built after %v", time.Since(start).Round(time.Millisecond))

	root := freshRoot(t, base)
	in := func(args ...string) string { return mustChroot(t, root, args...) }
	edgeapiDeb, haDeb := copyInto(t, root, debs["default"]), copyInto(t, root, debs["ha"])

	// edgeapi, with the port moved in config.yaml and an object stored.
	in("dpkg", "-i", edgeapiDeb)
	port := freePortT(t)
	configPath := filepath.Join(root, "etc/edgeapi/config.yaml")
	config, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	listenLine := regexp.MustCompile(`(?m)^listen: .*$`)
	edited := listenLine.ReplaceAll(config, []byte(fmt.Sprintf("listen: 127.0.0.1:%d # edited by the administrator", port)))
	if string(edited) == string(config) {
		t.Fatalf("config.yaml has no listen line:\n%s", config)
	}
	if err := os.WriteFile(configPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(root, "lib/systemd/system/edgeapi.service")
	kubeconfig := filepath.Join(root, "var/lib/edgeapi/kubeconfig")
	kubectl := func(args ...string) KubectlResult {
		stdout, stderr, code := runTool(t, kubectlBin.Path(t), append([]string{"--kubeconfig", kubeconfig}, args...),
			[]string{"HOME=" + t.TempDir(), "KUBECONFIG="}, "")
		return KubectlResult{Args: args, Stdout: stdout, Stderr: stderr, ExitCode: code}
	}
	svc := startUnit(t, root, unit)
	if res := kubectl("create", "configmap", "survives", "--from-literal=k=v"); res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	svc.stop(t)

	// switched checks the state after installing pkg over the other one,
	// which dpkg leaves with its configuration files (now pkg's) recorded,
	// and purging that one as an administrator tidying up would: pkg owns
	// the binary, the version says whether the etcd backend is in, the
	// edit and the enablement survived, and it serves the SQLite data.
	switched := func(pkg string, etcd bool) {
		t.Helper()
		other := map[string]string{"edgeapi": "edgeapi-ha", "edgeapi-ha": "edgeapi"}[pkg]
		in("dpkg", "-P", other)
		if got, want := in("dpkg-query", "-S", "/usr/bin/edgeapi"), pkg+": /usr/bin/edgeapi"; got != want {
			t.Errorf("after installing %s, dpkg-query -S /usr/bin/edgeapi = %q, want %q", pkg, got, want)
		}
		if status := chrootStatus(root, other); strings.HasSuffix(status, " installed") {
			t.Errorf("after installing %s, %s is still installed: %q", pkg, other, status)
		}
		first, _, _ := strings.Cut(in("edgeapi", "version"), "\n")
		if got := strings.HasSuffix(first, " (etcd backend)"); got != etcd {
			t.Errorf("%s: edgeapi version first line %q, says etcd backend: got %v, want %v", pkg, first, got, etcd)
		}
		if got, err := os.ReadFile(configPath); err != nil || string(got) != string(edited) {
			t.Errorf("config.yaml after installing %s (error %v):\n%s\nwant the administrator's edit:\n%s", pkg, err, got, edited)
		}
		if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/edgeapi.service")); err != nil {
			t.Errorf("the service is not enabled after installing %s: %v", pkg, err)
		}
		if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system/edgeapi.service")); err == nil {
			t.Errorf("the unit is masked (-> %s) after installing %s over %s", target, pkg, other)
		}
		svc := startUnit(t, root, unit)
		if res := kubectl("get", "configmap", "survives", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "v" {
			t.Errorf("%s on the SQLite file of edgeapi: %s", pkg, res)
		}
		svc.stop(t)
	}
	// refuses runs `edgeapi serve` with args and wants it to fail, saying want.
	refuses := func(want string, args ...string) {
		t.Helper()
		cmd := chrootCmd(root, 0, append([]string{"edgeapi", "serve", "--data-dir", "/tmp/refused", "--listen", fmt.Sprintf("127.0.0.1:%d", freePortT(t))}, args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("edgeapi serve %s: error %v, output:\n%s\nwant a failure saying %q", strings.Join(args, " "), err, out, want)
		}
	}

	in("dpkg", "-i", haDeb)
	switched("edgeapi-ha", true)
	refuses("--storage-backend=etcd3 needs at least one etcd URL", "--storage-backend=etcd3")

	in("dpkg", "-i", edgeapiDeb)
	switched("edgeapi", false)
	refuses("install the edgeapi-ha package", "--storage-backend=etcd3", "--etcd-servers", "http://127.0.0.1:2379")

	in("dpkg", "-i", haDeb)
	switched("edgeapi-ha", true)
	t.Logf("three switches done after %v", time.Since(start).Round(time.Millisecond))

	if _, err := etcdBinary(); err != nil {
		t.Skipf("serving from etcd: %v", err)
	}
	etcd, err := startEtcd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.stop)
	// The shipped example's etcd lines, uncommented, with the test's etcd.
	onEtcd := edited
	for _, line := range []string{"storage-backend: etcd3", "etcd-servers: " + etcd.URL, "etcd-prefix: /registry", "etcd-compaction-interval: 5m"} {
		key, _, _ := strings.Cut(line, ":")
		commented := regexp.MustCompile(`(?m)^# ` + key + `: .*$`)
		if !commented.Match(onEtcd) {
			t.Fatalf("config.yaml has no commented-out %s line:\n%s", key, onEtcd)
		}
		onEtcd = commented.ReplaceAll(onEtcd, []byte(line))
	}
	if err := os.WriteFile(configPath, onEtcd, 0o644); err != nil {
		t.Fatal(err)
	}
	svc = startUnit(t, root, unit)
	if res := kubectl("create", "configmap", "in-etcd", "--from-literal=k=etcd"); res.ExitCode != 0 {
		t.Errorf("%s", res)
	}
	if res := kubectl("get", "configmap", "in-etcd", "-o", "jsonpath={.data.k}"); res.ExitCode != 0 || res.Stdout != "etcd" {
		t.Errorf("edgeapi-ha on etcd: %s", res)
	}
	// Not the SQLite file's objects.
	if res := kubectl("get", "configmap", "survives"); res.ExitCode == 0 || !strings.Contains(res.Stderr, "NotFound") {
		t.Errorf("edgeapi-ha on etcd serves the SQLite file's configmap: %s", res)
	}
	svc.stop(t)

	// Purge: the binary and the configuration go, the database stays.
	in("dpkg", "-P", "edgeapi-ha")
	for _, path := range []string{"usr/bin/edgeapi", "etc/edgeapi/config.yaml"} {
		if _, err := os.Stat(filepath.Join(root, path)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/%s after dpkg -P edgeapi-ha: stat error %v, want not exist", path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/edgeapi/edgeapi.db")); err != nil {
		t.Errorf("database after dpkg -P edgeapi-ha: %v", err)
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}

// chrootStatus is dpkg's status of pkg in root ("install ok installed"
// when installed), or what dpkg-query says when it knows no such package.
func chrootStatus(root, pkg string) string {
	out, err := chrootCmd(root, 0, "dpkg-query", "-W", "-f", "${Status}", pkg).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s (%v)", strings.TrimSpace(string(out)), err)
	}
	return strings.TrimSpace(string(out))
}

// TestPackage_RPMHA checks the edgeapi and edgeapi-ha rpms: each Conflicts
// with the other, edgeapi-ha Provides edgeapi, and neither Obsoletes the
// other (which would make each upgrade to the other in turn); and, with
// the host's rpm into a fresh copy of the Debian root, that edgeapi-ha
// does not install over edgeapi, and does once edgeapi is erased, as its
// own binary at /usr/bin/edgeapi. The root's rpm database knows no
// package that provides /bin/sh, which the scriptlets require, so the
// installs pass --nodeps, which also turns off the Conflicts check: the
// refusal seen there is rpm's file conflict. What a swap does to the
// service (the scriptlets) is not checked: there is no systemd or dnf.
//
// It needs root and rpm (installed with apt-get when missing); it skips,
// saying why, without them.
func TestPackage_RPMHA(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: rpm --root with scriptlets run in a chroot")
	}
	if onEtcd() {
		t.Skip("the packages do not depend on the e2e backend: run in the SQLite run only")
	}
	if _, err := exec.LookPath("rpm"); err != nil {
		if out, err := exec.Command("apt-get", "install", "-y", "rpm").CombinedOutput(); err != nil {
			t.Skipf("rpm is missing and apt-get install -y rpm failed: %v\n%s", err, tail(out))
		}
	}
	dist := t.TempDir()
	cmd := exec.Command(filepath.Join(moduleRoot, "scripts/package"))
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "ARCHES=amd64", "PACKAGERS=rpm", "DIST="+dist, "EDGEAPI_PKG_VERSION=0.0.1", "VARIANTS=default ha")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/package: %v\n%s", err, out)
	}
	rpms := map[string]string{"edgeapi": filepath.Join(dist, "edgeapi-0.0.1-1.x86_64.rpm"), "edgeapi-ha": filepath.Join(dist, "edgeapi-ha-0.0.1-1.x86_64.rpm")}
	query := func(rpm, tag string) string {
		t.Helper()
		out, err := exec.Command("rpm", "-qp", tag, rpm).Output()
		if err != nil {
			t.Fatalf("rpm -qp %s %s: %v", tag, rpm, err)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	for _, c := range []struct{ pkg, tag, want string }{
		{"edgeapi", "--conflicts", "edgeapi-ha"},
		{"edgeapi", "--obsoletes", ""},
		{"edgeapi-ha", "--conflicts", "edgeapi"},
		{"edgeapi-ha", "--obsoletes", ""},
		{"edgeapi-ha", "--provides", "edgeapi edgeapi-ha = 0.0.1-1"},
	} {
		if got := query(rpms[c.pkg], c.tag); got != c.want {
			t.Errorf("rpm -qp %s %s: got %q, want %q", c.tag, c.pkg, got, c.want)
		}
	}

	root := freshRoot(t, debianRoot(t))
	rpm := func(args ...string) error {
		out, err := exec.Command("rpm", append([]string{"--root", root}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("rpm %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := rpm("--initdb"); err != nil {
		t.Fatal(err)
	}
	if err := rpm("-i", "--nodeps", rpms["edgeapi"]); err != nil {
		t.Fatal(err)
	}
	if err := rpm("-i", "--nodeps", rpms["edgeapi-ha"]); err == nil {
		t.Errorf("edgeapi-ha installed over edgeapi")
	}
	if err := rpm("-e", "edgeapi"); err != nil {
		t.Fatal(err)
	}
	if err := rpm("-i", "--nodeps", rpms["edgeapi-ha"]); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(mustChroot(t, root, "edgeapi", "version"), "\n")
	if !strings.HasSuffix(first, " (etcd backend)") {
		t.Errorf("edgeapi version after installing the edgeapi-ha rpm: first line %q, want it to say (etcd backend)", first)
	}
	for _, path := range []string{"usr/lib/systemd/system/edgeapi.service", "etc/edgeapi/config.yaml"} {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("after installing the edgeapi-ha rpm: %v", err)
		}
	}
}
