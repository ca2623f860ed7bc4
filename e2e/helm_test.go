package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Helm 3, built from its Go module by scripts/helm-build, installs,
// upgrades, rolls back and uninstalls a chart on edgeapi. The chart,
// testdata/charts/gadgets, has a CRD in crds/ and templates that use its
// kind (Gadget) with a ConfigMap, a Secret and an optional second
// ConfigMap. Helm keeps its releases in Secrets of type helm.sh/release.v1,
// found by label selectors.

var gadgetGVR = schema.GroupVersionResource{Group: "charts.example.com", Version: "v1", Resource: "gadgets"}

var (
	helmBinOnce sync.Once
	helmBinPath string
	helmBinErr  error
)

// helmPath returns $HELM_BIN (scripts/test sets it), or else builds
// bin/helm with scripts/helm-build. A failed build fails t.
func helmPath(t *testing.T) string {
	t.Helper()
	helmBinOnce.Do(func() {
		if p := os.Getenv("HELM_BIN"); p != "" {
			helmBinPath = p
			if _, err := os.Stat(p); err != nil {
				helmBinErr = fmt.Errorf("HELM_BIN=%s: %w", p, err)
			}
			return
		}
		cmd := exec.Command(filepath.Join(moduleRoot, "scripts", "helm-build"))
		cmd.Dir = moduleRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			helmBinErr = fmt.Errorf("HELM_BIN is unset and scripts/helm-build failed: %v\n%s", err, out)
			return
		}
		helmBinPath = filepath.Join(moduleRoot, "bin", "helm")
	})
	if helmBinErr != nil {
		t.Fatalf("helm: %v", helmBinErr)
	}
	return helmBinPath
}

// helmResult is the outcome of one helm run.
type helmResult struct {
	Args           []string
	Stdout, Stderr string
	ExitCode       int
}

func (r helmResult) String() string {
	return fmt.Sprintf("helm %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.ExitCode, r.Stdout, r.Stderr)
}

// helmClient runs helm against one daemon, with its own Helm home.
type helmClient struct {
	t    *testing.T
	bin  string
	d    *Daemon
	home string
}

func newHelmClient(t *testing.T, d *Daemon) *helmClient {
	t.Helper()
	return &helmClient{t: t, bin: helmPath(t), d: d, home: t.TempDir()}
}

// Run runs helm with --kubeconfig set to the daemon's.
func (h *helmClient) Run(args ...string) helmResult {
	h.t.Helper()
	stdout, stderr, code := runTool(h.t, h.bin, append([]string{"--kubeconfig", h.d.Kubeconfig}, args...), []string{
		"HOME=" + h.home,
		"KUBECONFIG=",
		"HELM_CACHE_HOME=" + filepath.Join(h.home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(h.home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(h.home, "data"),
	}, "")
	return helmResult{Args: args, Stdout: stdout, Stderr: stderr, ExitCode: code}
}

// Must runs helm and fails the test unless it exits 0.
func (h *helmClient) Must(args ...string) helmResult {
	h.t.Helper()
	res := h.Run(args...)
	if res.ExitCode != 0 {
		h.t.Fatalf("%s", res)
	}
	return res
}

// helmRelease is one entry of `helm list -o json` or `helm history -o
// json`; list gives the revision as a string, history as a number.
type helmRelease struct {
	Name        string          `json:"name"`
	Namespace   string          `json:"namespace"`
	Revision    json.RawMessage `json:"revision"`
	Status      string          `json:"status"`
	Chart       string          `json:"chart"`
	Description string          `json:"description"`
}

// releases decodes helm's JSON output into "revision status" lines, with
// the description for history entries.
func (h *helmClient) releases(args ...string) []string {
	h.t.Helper()
	res := h.Must(append(args, "-o", "json")...)
	var rs []helmRelease
	if err := json.Unmarshal([]byte(res.Stdout), &rs); err != nil {
		h.t.Fatalf("%s\ndecode: %v", res, err)
	}
	out := []string{}
	for _, r := range rs {
		s := strings.Trim(string(r.Revision), `"`) + " " + r.Status
		if r.Name != "" {
			s = r.Name + " " + s
		}
		if r.Description != "" {
			s += " " + r.Description
		}
		out = append(out, s)
	}
	return out
}

// gadgetState is what the chart's templates produced, as read back from
// edgeapi: "" for an object that does not exist.
type gadgetState struct {
	GadgetSize  int64
	GadgetColor string
	Config      map[string]string
	Password    string
	Extra       bool
	// Hook is the data of the pre-install and pre-upgrade hook's
	// ConfigMap, which Helm leaves alone once it ran.
	Hook map[string]string
}

func readGadgetState(t *testing.T, d *Daemon, ns, release string) gadgetState {
	t.Helper()
	ctx := context.Background()
	var s gadgetState
	g, err := d.Dynamic().Resource(gadgetGVR).Namespace(ns).Get(ctx, release+"-gadget", metav1.GetOptions{})
	switch {
	case err == nil:
		s.GadgetSize, _, _ = unstructured.NestedInt64(g.Object, "spec", "size")
		s.GadgetColor, _, _ = unstructured.NestedString(g.Object, "spec", "color")
		wantHelmOwned(t, "gadget", g.GetLabels(), g.GetAnnotations(), ns, release)
	case !apierrors.IsNotFound(err):
		t.Fatalf("get gadget: %v", err)
	}
	cs := d.Clientset()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, release+"-config", metav1.GetOptions{})
	switch {
	case err == nil:
		s.Config = cm.Data
		wantHelmOwned(t, "configmap", cm.Labels, cm.Annotations, ns, release)
	case !apierrors.IsNotFound(err):
		t.Fatalf("get configmap: %v", err)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, release+"-secret", metav1.GetOptions{})
	switch {
	case err == nil:
		s.Password = string(sec.Data["password"])
		wantHelmOwned(t, "secret", sec.Labels, sec.Annotations, ns, release)
	case !apierrors.IsNotFound(err):
		t.Fatalf("get secret: %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, release+"-extra", metav1.GetOptions{})
	switch {
	case err == nil:
		s.Extra = true
	case !apierrors.IsNotFound(err):
		t.Fatalf("get extra configmap: %v", err)
	}
	hook, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, release+"-hook", metav1.GetOptions{})
	switch {
	case err == nil:
		s.Hook = hook.Data
	case !apierrors.IsNotFound(err):
		t.Fatalf("get hook configmap: %v", err)
	}
	return s
}

// wantHelmOwned checks the labels and annotations with which Helm marks
// the objects of a release.
func wantHelmOwned(t *testing.T, what string, labels, annotations map[string]string, ns, release string) {
	t.Helper()
	if labels["app.kubernetes.io/managed-by"] != "Helm" || labels["app.kubernetes.io/instance"] != release {
		t.Errorf("%s labels %v: want Helm's", what, labels)
	}
	if annotations["meta.helm.sh/release-name"] != release || annotations["meta.helm.sh/release-namespace"] != ns {
		t.Errorf("%s annotations %v: want Helm's", what, annotations)
	}
}

func wantGadgetState(t *testing.T, step string, got, want gadgetState) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after %s: objects\n got %+v\nwant %+v", step, got, want)
	}
}

// releaseSecrets returns "name status" for each Secret of type
// helm.sh/release.v1 in ns, found as Helm finds them, by label selector.
func releaseSecrets(t *testing.T, d *Daemon, ns string) []string {
	t.Helper()
	l, err := d.Clientset().CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatalf("list release secrets: %v", err)
	}
	out := []string{}
	for _, s := range l.Items {
		if s.Type != "helm.sh/release.v1" {
			t.Errorf("release secret %s has type %q, want helm.sh/release.v1", s.Name, s.Type)
		}
		out = append(out, s.Name+" "+s.Labels["status"])
	}
	return out
}

func wantStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestHelm_Lifecycle installs the gadgets chart, upgrades it with changed
// values, fails an upgrade that the CRD's schema refuses, rolls back to
// revision 1, upgrades with --force (replace instead of patch) and
// uninstalls it, checking the objects, the hook (which deletes and
// recreates its ConfigMap and looks up the release's), the release history
// and the release Secrets after each step.
func TestHelm_Lifecycle(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	h := newHelmClient(t, d)
	chart, err := filepath.Abs(filepath.Join("testdata", "charts", "gadgets"))
	if err != nil {
		t.Fatal(err)
	}
	const ns, rel = "gadgets", "demo"
	initial := gadgetState{
		GadgetSize: 1, GadgetColor: "blue",
		Config:   map[string]string{"size": "1", "color": "blue", "revision": "1"},
		Password: "hunter2",
		Hook:     map[string]string{"revision": "1", "before": "{}"},
	}

	// Install: the CRD from crds/ first (Helm waits until it is
	// established), then the templates, which use its kind.
	h.Must("install", rel, chart, "--namespace", ns, "--create-namespace", "--wait", "--timeout", "60s")
	crd := waitCRD(t, d, "gadgets.charts.example.com", established)
	if crd.Spec.Names.Kind != "Gadget" {
		t.Errorf("CRD kind %q, want Gadget", crd.Spec.Names.Kind)
	}
	wantGadgetState(t, "install", readGadgetState(t, d, ns, rel), initial)
	wantStrings(t, "helm list after install", h.releases("list", "--namespace", ns), "demo 1 deployed")
	wantStrings(t, "release secrets after install", releaseSecrets(t, d, ns), "sh.helm.release.v1.demo.v1 deployed")
	// The Gadget's printer column, through kubectl and the short name.
	res := d.MustKubectl("get", "gd", "--namespace", ns)
	if rows := table(res.Stdout); len(rows) != 2 || !reflect.DeepEqual(rows[1], []string{"demo-gadget", "1"}) {
		t.Errorf("kubectl get gd:\n%s", res.Stdout)
	}

	// Upgrade with changed values: the objects change, the extra
	// ConfigMap appears, revision 1 is superseded.
	h.Must("upgrade", rel, chart, "--namespace", ns, "--wait", "--timeout", "60s",
		"--set", "size=5,color=red,password=s3cret,extra.enabled=true")
	upgraded := gadgetState{
		GadgetSize: 5, GadgetColor: "red",
		Config:   map[string]string{"size": "5", "color": "red", "revision": "2"},
		Password: "s3cret", Extra: true,
		Hook: map[string]string{"revision": "2", "before": `{"color":"blue","revision":"1","size":"1"}`},
	}
	wantGadgetState(t, "upgrade", readGadgetState(t, d, ns, rel), upgraded)
	wantStrings(t, "helm list after upgrade", h.releases("list", "--namespace", ns), "demo 2 deployed")
	wantStrings(t, "release secrets after upgrade", releaseSecrets(t, d, ns),
		"sh.helm.release.v1.demo.v1 superseded", "sh.helm.release.v1.demo.v2 deployed")

	// An upgrade that the CRD's schema refuses fails with edgeapi's 422,
	// the Gadget keeps its size, and Helm records a failed revision.
	// (With --reuse-values the failed revision's manifest still has the
	// extra ConfigMap and red, so the rollback below removes and resets
	// them: Helm patches from the last revision's manifest to the target's.)
	res2 := h.Run("upgrade", rel, chart, "--namespace", ns, "--reuse-values", "--set", "size=0")
	if res2.ExitCode == 0 || !strings.Contains(res2.Stderr, `Gadget.charts.example.com "demo-gadget" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`) {
		t.Errorf("upgrade with size=0: want the schema's 422 in the error\n%s", res2)
	}
	got := readGadgetState(t, d, ns, rel)
	if got.GadgetSize != 5 {
		t.Errorf("gadget size %d after the refused upgrade, want 5 still", got.GadgetSize)
	}
	failedHook := map[string]string{"revision": "3", "before": `{"color":"red","revision":"2","size":"5"}`}
	if !reflect.DeepEqual(got.Hook, failedHook) {
		t.Errorf("hook after the refused upgrade: %v, want %v (pre-upgrade hooks run first)", got.Hook, failedHook)
	}
	wantStrings(t, "helm list after the failed upgrade", h.releases("list", "--namespace", ns, "--all"), "demo 3 failed")

	// Rollback to revision 1: its manifest comes back as revision 4, and
	// the extra ConfigMap, not in revision 1, goes.
	h.Must("rollback", rel, "1", "--namespace", ns, "--wait", "--timeout", "60s")
	rolledBack := initial
	rolledBack.Hook = failedHook // a rollback runs no upgrade hook
	wantGadgetState(t, "rollback", readGadgetState(t, d, ns, rel), rolledBack)
	wantStrings(t, "helm history after rollback", h.releases("history", rel, "--namespace", ns),
		"1 superseded Install complete",
		"2 superseded Upgrade complete",
		`3 failed Upgrade "demo" failed: cannot patch "demo-gadget" with kind Gadget: Gadget.charts.example.com "demo-gadget" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`,
		"4 deployed Rollback to 1")

	// Upgrade with --force: Helm replaces (PUT) the objects instead of
	// patching them.
	h.Must("upgrade", rel, chart, "--namespace", ns, "--force", "--reuse-values", "--set", "size=2", "--wait", "--timeout", "60s")
	forced := gadgetState{
		GadgetSize: 2, GadgetColor: "blue",
		Config:   map[string]string{"size": "2", "color": "blue", "revision": "5"},
		Password: "hunter2",
		Hook:     map[string]string{"revision": "5", "before": `{"color":"blue","revision":"1","size":"1"}`},
	}
	wantGadgetState(t, "upgrade --force", readGadgetState(t, d, ns, rel), forced)
	wantStrings(t, "release secrets after upgrade --force", releaseSecrets(t, d, ns),
		"sh.helm.release.v1.demo.v1 superseded", "sh.helm.release.v1.demo.v2 superseded", "sh.helm.release.v1.demo.v3 failed",
		"sh.helm.release.v1.demo.v4 superseded", "sh.helm.release.v1.demo.v5 deployed")

	// Uninstall: the templated objects and the release Secrets go; the
	// CRD from crds/ stays, and so does the hook's ConfigMap, as Helm
	// documents.
	h.Must("uninstall", rel, "--namespace", ns, "--wait", "--timeout", "60s")
	wantGadgetState(t, "uninstall", readGadgetState(t, d, ns, rel), gadgetState{Hook: forced.Hook})
	wantStrings(t, "helm list after uninstall", h.releases("list", "--all-namespaces", "--all"))
	wantStrings(t, "release secrets after uninstall", releaseSecrets(t, d, ns))
	if _, err := d.apiextensionsClient(t).ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), "gadgets.charts.example.com", metav1.GetOptions{}); err != nil {
		t.Errorf("CRD after uninstall: %v, want it kept", err)
	}

	// The chart installs again over the kept CRD.
	h.Must("install", rel, chart, "--namespace", ns, "--wait", "--timeout", "60s")
	wantGadgetState(t, "second install", readGadgetState(t, d, ns, rel), initial)
	wantStrings(t, "helm list after the second install", h.releases("list", "--namespace", ns), "demo 1 deployed")
}
