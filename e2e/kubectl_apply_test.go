package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kubectl's apply (server-side and client-side), patch, server dry runs,
// deletion with finalizers and --show-managed-fields, against the daemon.
// The ownership hand-over story is the one in the server-side apply page
// (seed 002, "转移所有权" and "在管理器之间转移所有权"), with a ConfigMap
// key standing in for a Deployment's replicas.

// configMapYAML renders a ConfigMap manifest with the given data.
func configMapYAML(name, ns string, data map[string]string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\n")
	if len(data) > 0 {
		b.WriteString("data:\n")
		for _, k := range sortedMapKeys(data) {
			b.WriteString("  " + k + ": " + quoteYAML(data[k]) + "\n")
		}
	}
	return b.String()
}

func quoteYAML(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// kubectlGetCM reads a ConfigMap with kubectl get -o json.
func kubectlGetCM(t *testing.T, d *Daemon, ns, name string, extra ...string) corev1.ConfigMap {
	t.Helper()
	res := d.MustKubectl(append([]string{"get", "configmap", name, "-n", ns, "-o", "json"}, extra...)...)
	var cm corev1.ConfigMap
	if err := json.Unmarshal([]byte(res.Stdout), &cm); err != nil {
		t.Fatalf("decode kubectl get output: %v\n%s", err, res.Stdout)
	}
	return cm
}

// ownersOf returns "manager operation" for every managedFields entry whose
// fieldsV1 has .data.<key>.
func ownersOf(t *testing.T, cm corev1.ConfigMap, key string) []string {
	t.Helper()
	var out []string
	for _, e := range cm.ManagedFields {
		if e.FieldsV1 == nil {
			continue
		}
		var f map[string]map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &f); err != nil {
			t.Fatalf("fieldsV1 of %s: %v", e.Manager, err)
		}
		if _, ok := f["f:data"]["f:"+key]; ok {
			out = append(out, e.Manager+" "+string(e.Operation))
		}
	}
	return out
}

// TestKubectl_ApplyServerSide checks conflicts between two field managers,
// --force-conflicts, and the ownership hand-over story.
func TestKubectl_ApplyServerSide(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kssa"
	createNamespace(t, d.Clientset(), ns)
	apply := func(manager, manifest string, extra ...string) KubectlResult {
		t.Helper()
		return d.KubectlStdin(manifest, append([]string{"apply", "--server-side", "--field-manager=" + manager, "-f", "-"}, extra...)...)
	}

	t.Run("conflict and force", func(t *testing.T) {
		wantOutput(t, apply("alice", configMapYAML("colors", ns, map[string]string{"color": "red", "alice-only": "1"})), "configmap/colors serverside-applied\n")
		before := kubectlGetCM(t, d, ns, "colors")

		res := apply("bob", configMapYAML("colors", ns, map[string]string{"color": "blue"}))
		if res.ExitCode == 0 {
			t.Fatalf("second manager setting a field to another value: want a conflict, got %s", res)
		}
		wantErr := "error: Apply failed with 1 conflict: conflict with \"alice\": .data.color\nPlease review the fields above--they currently have other managers."
		if !strings.HasPrefix(res.Stderr, wantErr) || !strings.Contains(res.Stderr, "--force-conflicts") {
			t.Errorf("conflict stderr:\n%s\nwant it to start with:\n%s\nand mention --force-conflicts", res.Stderr, wantErr)
		}
		if after := kubectlGetCM(t, d, ns, "colors"); after.ResourceVersion != before.ResourceVersion || after.Data["color"] != "red" {
			t.Errorf("after the conflict: rv %s data %v, want unchanged (rv %s, color=red)", after.ResourceVersion, after.Data, before.ResourceVersion)
		}

		// A server dry run of the forced apply changes nothing.
		wantOutput(t, apply("bob", configMapYAML("colors", ns, map[string]string{"color": "blue"}), "--force-conflicts", "--dry-run=server"),
			"configmap/colors serverside-applied (server dry run)\n")
		if after := kubectlGetCM(t, d, ns, "colors"); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("server dry run changed the object (rv %s → %s)", before.ResourceVersion, after.ResourceVersion)
		}

		wantOutput(t, apply("bob", configMapYAML("colors", ns, map[string]string{"color": "blue"}), "--force-conflicts"), "configmap/colors serverside-applied\n")
		cm := kubectlGetCM(t, d, ns, "colors", "--show-managed-fields")
		if cm.Data["color"] != "blue" || cm.Data["alice-only"] != "1" {
			t.Errorf("after --force-conflicts: data %v, want color=blue alice-only=1", cm.Data)
		}
		if got, want := ownersOf(t, cm, "color"), []string{"bob Apply"}; !reflect.DeepEqual(got, want) {
			t.Errorf("owners of .data.color after --force-conflicts = %v, want %v", got, want)
		}
		if got, want := ownersOf(t, cm, "alice-only"), []string{"alice Apply"}; !reflect.DeepEqual(got, want) {
			t.Errorf("owners of .data.alice-only = %v, want %v", got, want)
		}

		// Now alice conflicts with bob.
		res = apply("alice", configMapYAML("colors", ns, map[string]string{"color": "red", "alice-only": "1"}))
		if res.ExitCode == 0 || !strings.HasPrefix(res.Stderr, "error: Apply failed with 1 conflict: conflict with \"bob\": .data.color\n") {
			t.Errorf("alice re-applying her old value: want a conflict with bob; got %s", res)
		}
	})

	t.Run("hand-over with an equal value", func(t *testing.T) {
		// The user applies replicas; a hand-over manager applies the same
		// value (no conflict: shared ownership); the user drops the field
		// from its config and the value stays, now owned by the other.
		wantOutput(t, apply("user", configMapYAML("scale", ns, map[string]string{"replicas": "3", "image": "nginx"})), "configmap/scale serverside-applied\n")
		wantOutput(t, apply("handover-to-hpa", configMapYAML("scale", ns, map[string]string{"replicas": "3"})), "configmap/scale serverside-applied\n")
		cm := kubectlGetCM(t, d, ns, "scale", "--show-managed-fields")
		if got, want := ownersOf(t, cm, "replicas"), []string{"handover-to-hpa Apply", "user Apply"}; !reflect.DeepEqual(sortedStrings(got), want) {
			t.Errorf("owners of .data.replicas after an equal-value apply = %v, want shared %v", got, want)
		}
		wantOutput(t, apply("user", configMapYAML("scale", ns, map[string]string{"image": "nginx"})), "configmap/scale serverside-applied\n")
		cm = kubectlGetCM(t, d, ns, "scale", "--show-managed-fields")
		if cm.Data["replicas"] != "3" {
			t.Errorf("after the user dropped replicas: data %v, want replicas=3 kept", cm.Data)
		}
		if got, want := ownersOf(t, cm, "replicas"), []string{"handover-to-hpa Apply"}; !reflect.DeepEqual(got, want) {
			t.Errorf("owners of .data.replicas after the hand-over = %v, want %v", got, want)
		}
		// The user's config can now change freely without touching it.
		wantOutput(t, apply("user", configMapYAML("scale", ns, map[string]string{"image": "nginx:2"})), "configmap/scale serverside-applied\n")
		if cm := kubectlGetCM(t, d, ns, "scale"); cm.Data["replicas"] != "3" || cm.Data["image"] != "nginx:2" {
			t.Errorf("after the user's next apply: data %v", cm.Data)
		}
	})

	t.Run("hand-over by force", func(t *testing.T) {
		wantOutput(t, apply("user", configMapYAML("forced", ns, map[string]string{"replicas": "3", "image": "nginx"})), "configmap/forced serverside-applied\n")
		wantOutput(t, apply("hpa", configMapYAML("forced", ns, map[string]string{"replicas": "5"}), "--force-conflicts"), "configmap/forced serverside-applied\n")
		wantOutput(t, apply("user", configMapYAML("forced", ns, map[string]string{"image": "nginx"})), "configmap/forced serverside-applied\n")
		cm := kubectlGetCM(t, d, ns, "forced", "--show-managed-fields")
		if cm.Data["replicas"] != "5" {
			t.Errorf("after the user dropped replicas: data %v, want replicas=5 (the controller's value, not reset or removed)", cm.Data)
		}
		if got, want := ownersOf(t, cm, "replicas"), []string{"hpa Apply"}; !reflect.DeepEqual(got, want) {
			t.Errorf("owners of .data.replicas = %v, want %v", got, want)
		}
		// By contrast a field only the user owned goes when dropped.
		wantOutput(t, apply("user", configMapYAML("forced", ns, nil)), "configmap/forced serverside-applied\n")
		if cm := kubectlGetCM(t, d, ns, "forced"); !reflect.DeepEqual(cm.Data, map[string]string{"replicas": "5"}) {
			t.Errorf("after the user dropped image: data %v, want only replicas=5", cm.Data)
		}
	})
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestKubectl_ApplyClientSide checks kubectl's client-side apply: create,
// update and pruning of a key removed from the file, through the
// last-applied-configuration annotation.
func TestKubectl_ApplyClientSide(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kcsa"
	createNamespace(t, d.Clientset(), ns)
	apply := func(data map[string]string) KubectlResult {
		t.Helper()
		return d.KubectlStdin(configMapYAML("app", ns, data), "apply", "-f", "-")
	}

	wantOutput(t, apply(map[string]string{"a": "1", "b": "2"}), "configmap/app created\n")
	cm := kubectlGetCM(t, d, ns, "app")
	last := cm.Annotations[corev1.LastAppliedConfigAnnotation]
	var lastObj corev1.ConfigMap
	if err := json.Unmarshal([]byte(last), &lastObj); err != nil || !reflect.DeepEqual(lastObj.Data, map[string]string{"a": "1", "b": "2"}) {
		t.Errorf("last-applied annotation = %q (%v), want the applied manifest", last, err)
	}

	wantOutput(t, apply(map[string]string{"a": "1", "b": "2"}), "configmap/app unchanged\n")

	// Another writer adds a key; apply leaves keys it never applied.
	wantOutput(t, d.Kubectl("patch", "configmap", "app", "-n", ns, "--type=merge", "-p", `{"data":{"other":"x"}}`), "configmap/app patched\n")

	wantOutput(t, apply(map[string]string{"a": "changed", "b": "2"}), "configmap/app configured\n")
	if cm := kubectlGetCM(t, d, ns, "app"); !reflect.DeepEqual(cm.Data, map[string]string{"a": "changed", "b": "2", "other": "x"}) {
		t.Errorf("after update: data %v, want a=changed b=2 other=x", cm.Data)
	}

	wantOutput(t, apply(map[string]string{"a": "changed"}), "configmap/app configured\n")
	cm = kubectlGetCM(t, d, ns, "app", "--show-managed-fields")
	if !reflect.DeepEqual(cm.Data, map[string]string{"a": "changed", "other": "x"}) {
		t.Errorf("after removing b from the file: data %v, want a=changed other=x (b pruned, other kept)", cm.Data)
	}
	var pruned corev1.ConfigMap
	if err := json.Unmarshal([]byte(cm.Annotations[corev1.LastAppliedConfigAnnotation]), &pruned); err != nil || !reflect.DeepEqual(pruned.Data, map[string]string{"a": "changed"}) {
		t.Errorf("last-applied annotation after prune = %q", cm.Annotations[corev1.LastAppliedConfigAnnotation])
	}
	managers := map[string]string{}
	for _, e := range cm.ManagedFields {
		managers[e.Manager] = string(e.Operation)
	}
	if want := map[string]string{"kubectl-client-side-apply": "Update", "kubectl-patch": "Update"}; !reflect.DeepEqual(managers, want) {
		t.Errorf("managers = %v, want %v", managers, want)
	}
}

// TestKubectl_PatchTypes changes a ConfigMap with each kubectl patch type.
func TestKubectl_PatchTypes(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kpatch"
	createNamespace(t, d.Clientset(), ns)
	wantOutput(t, d.Kubectl("create", "configmap", "p", "-n", ns, "--from-literal=k=v"), "configmap/p created\n")

	wantOutput(t, d.Kubectl("patch", "configmap", "p", "-n", ns, "--type=json", "-p", `[{"op":"replace","path":"/data/k","value":"json"},{"op":"add","path":"/data/j","value":"1"}]`), "configmap/p patched\n")
	wantOutput(t, d.Kubectl("patch", "configmap", "p", "-n", ns, "--type=merge", "-p", `{"data":{"j":null,"m":"merge"}}`), "configmap/p patched\n")
	wantOutput(t, d.Kubectl("patch", "configmap", "p", "-n", ns, "--type=strategic", "-p", `{"metadata":{"labels":{"s":"strategic"}}}`), "configmap/p patched\n")
	wantOutput(t, d.Kubectl("patch", "configmap", "p", "-n", ns, "-p", `{"data":{"d":"default-strategic"}}`), "configmap/p patched\n")
	before := kubectlGetCM(t, d, ns, "p")
	// A patch that changes nothing says so and keeps the resourceVersion.
	wantOutput(t, d.Kubectl("patch", "configmap", "p", "-n", ns, "--type=merge", "-p", `{"data":{"m":"merge"}}`), "configmap/p patched (no change)\n")

	cm := kubectlGetCM(t, d, ns, "p", "--show-managed-fields")
	if want := map[string]string{"k": "json", "m": "merge", "d": "default-strategic"}; !reflect.DeepEqual(cm.Data, want) {
		t.Errorf("data = %v, want %v", cm.Data, want)
	}
	if cm.Labels["s"] != "strategic" {
		t.Errorf("labels = %v, want s=strategic", cm.Labels)
	}
	if cm.ResourceVersion != before.ResourceVersion {
		t.Errorf("no-change patch moved resourceVersion %s → %s", before.ResourceVersion, cm.ResourceVersion)
	}
	if got := ownersOf(t, cm, "m"); !reflect.DeepEqual(got, []string{"kubectl-patch Update"}) {
		t.Errorf("owners of .data.m = %v, want [kubectl-patch Update]", got)
	}

	// Failures come back with kube-apiserver's messages.
	res := d.Kubectl("patch", "configmap", "p", "-n", ns, "--type=json", "-p", `[{"op":"test","path":"/data/k","value":"nope"}]`)
	if res.ExitCode == 0 || strings.TrimSpace(res.Stderr) != `The request is invalid: the server rejected our request due to an error in our request` {
		t.Errorf("failing JSON patch test: %s", res)
	}
	res = d.Kubectl("patch", "configmap", "missing", "-n", ns, "--type=merge", "-p", `{"data":{"x":"y"}}`)
	if res.ExitCode == 0 || strings.TrimSpace(res.Stderr) != `Error from server (NotFound): configmaps "missing" not found` {
		t.Errorf("patch of a missing object: %s", res)
	}
}

// TestKubectl_DryRunServer checks kubectl's --dry-run=server on create and
// delete.
func TestKubectl_DryRunServer(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kdry"
	createNamespace(t, d.Clientset(), ns)

	res := d.MustKubectl("create", "configmap", "dry", "-n", ns, "--from-literal=k=v", "--dry-run=server", "-o", "yaml")
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(res.Stdout), &cm); err != nil {
		t.Fatalf("decode -o yaml: %v\n%s", err, res.Stdout)
	}
	if cm.Name != "dry" || cm.Namespace != ns || cm.UID == "" || cm.CreationTimestamp.IsZero() || cm.Data["k"] != "v" {
		t.Errorf("server dry-run create printed %+v, want name, namespace, uid, creationTimestamp and data", cm)
	}
	if cm.ResourceVersion != "" || strings.Contains(res.Stdout, "resourceVersion") {
		t.Errorf("server dry-run create printed a resourceVersion:\n%s", res.Stdout)
	}
	res = d.Kubectl("get", "configmap", "dry", "-n", ns)
	if res.ExitCode == 0 || strings.TrimSpace(res.Stderr) != `Error from server (NotFound): configmaps "dry" not found` {
		t.Errorf("get after a server dry-run create: %s", res)
	}

	wantOutput(t, d.Kubectl("create", "configmap", "keep", "-n", ns, "--from-literal=k=v"), "configmap/keep created\n")
	before := kubectlGetCM(t, d, ns, "keep")
	wantOutput(t, d.Kubectl("delete", "configmap", "keep", "-n", ns, "--dry-run=server"), "configmap \"keep\" deleted from kdry namespace (server dry run)\n")
	if after := kubectlGetCM(t, d, ns, "keep"); after.ResourceVersion != before.ResourceVersion || after.DeletionTimestamp != nil {
		t.Errorf("after a server dry-run delete: rv %s deletionTimestamp %v, want unchanged %s", after.ResourceVersion, after.DeletionTimestamp, before.ResourceVersion)
	}
	// Client-side apply with a server dry run creates nothing either.
	wantOutput(t, d.KubectlStdin(configMapYAML("applied", ns, map[string]string{"a": "1"}), "apply", "--dry-run=server", "-f", "-"),
		"configmap/applied created (server dry run)\n")
	if _, err := d.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), "applied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after a server dry-run apply: %v, want NotFound", err)
	}
}

// TestKubectl_DeleteWithFinalizer deletes an object that has a finalizer:
// kubectl returns, the object stays terminating until the finalizer is
// patched away.
func TestKubectl_DeleteWithFinalizer(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kfin"
	createNamespace(t, d.Clientset(), ns)
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: kfin\n  finalizers:\n  - example.com/hold\ndata:\n  k: v\n"
	wantOutput(t, d.KubectlStdin(manifest, "create", "-f", "-"), "configmap/held created\n")

	wantOutput(t, d.Kubectl("delete", "configmap", "held", "-n", ns, "--wait=false"), "configmap \"held\" deleted from kfin namespace\n")
	cm := kubectlGetCM(t, d, ns, "held")
	if cm.DeletionTimestamp == nil || !reflect.DeepEqual(cm.Finalizers, []string{"example.com/hold"}) {
		t.Errorf("after kubectl delete: deletionTimestamp %v finalizers %v, want a deletionTimestamp and the finalizer", cm.DeletionTimestamp, cm.Finalizers)
	}
	if cm.DeletionGracePeriodSeconds == nil || *cm.DeletionGracePeriodSeconds != 0 {
		t.Errorf("deletionGracePeriodSeconds = %v, want 0", cm.DeletionGracePeriodSeconds)
	}
	// A second delete is accepted and changes nothing.
	wantOutput(t, d.Kubectl("delete", "configmap", "held", "-n", ns, "--wait=false"), "configmap \"held\" deleted from kfin namespace\n")
	if again := kubectlGetCM(t, d, ns, "held"); again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("second delete moved resourceVersion %s → %s", cm.ResourceVersion, again.ResourceVersion)
	}

	wantOutput(t, d.Kubectl("patch", "configmap", "held", "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`), "configmap/held patched\n")
	res := d.Kubectl("get", "configmap", "held", "-n", ns)
	if res.ExitCode == 0 || strings.TrimSpace(res.Stderr) != `Error from server (NotFound): configmaps "held" not found` {
		t.Errorf("get after removing the finalizer: %s", res)
	}
}

// TestKubectl_ShowManagedFields checks that kubectl get hides managedFields
// unless asked, and shows every manager with its operation when asked.
func TestKubectl_ShowManagedFields(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kmf"
	createNamespace(t, d.Clientset(), ns)
	wantOutput(t, d.Kubectl("create", "configmap", "m", "-n", ns, "--from-literal=k=v"), "configmap/m created\n")
	wantOutput(t, d.KubectlStdin(configMapYAML("m", ns, map[string]string{"applied": "1"}), "apply", "--server-side", "--field-manager=ops", "-f", "-"), "configmap/m serverside-applied\n")
	wantOutput(t, d.Kubectl("label", "configmap", "m", "-n", ns, "team=a"), "configmap/m labeled\n")

	plain := d.MustKubectl("get", "configmap", "m", "-n", ns, "-o", "yaml")
	if strings.Contains(plain.Stdout, "managedFields") {
		t.Errorf("get -o yaml without --show-managed-fields shows managedFields:\n%s", plain.Stdout)
	}
	res := d.MustKubectl("get", "configmap", "m", "-n", ns, "-o", "yaml", "--show-managed-fields")
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(res.Stdout), &cm); err != nil {
		t.Fatalf("decode: %v\n%s", err, res.Stdout)
	}
	got := map[string]string{}
	for _, e := range cm.ManagedFields {
		got[e.Manager] = string(e.Operation) + " " + e.APIVersion + " " + e.FieldsType
	}
	want := map[string]string{
		"ops":            "Apply v1 FieldsV1",
		"kubectl-create": "Update v1 FieldsV1",
		"kubectl-label":  "Update v1 FieldsV1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("managedFields managers = %v, want %v\n%s", got, want, res.Stdout)
	}
	for _, line := range []string{"  managedFields:\n", "    manager: ops\n", "    operation: Apply\n", "    fieldsV1:\n", "      f:data:\n"} {
		if !strings.Contains(res.Stdout, line) {
			t.Errorf("--show-managed-fields output lacks %q:\n%s", line, res.Stdout)
		}
	}
}

// TestKubectl_ApplyMigration moves an object from client-side to
// server-side apply (seed 002, "从客户端应用升级到服务器端应用"): with
// kubectl's default field manager there is no conflict, kubectl's apply
// takes over the client-side apply's fields, and a key later dropped from
// the file is removed.
func TestKubectl_ApplyMigration(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kmigrate"
	createNamespace(t, d.Clientset(), ns)

	wantOutput(t, d.KubectlStdin(configMapYAML("mig", ns, map[string]string{"a": "1", "b": "2"}), "apply", "-f", "-"), "configmap/mig created\n")
	wantOutput(t, d.KubectlStdin(configMapYAML("mig", ns, map[string]string{"a": "changed", "b": "2"}), "apply", "--server-side", "-f", "-"), "configmap/mig serverside-applied\n")
	cm := kubectlGetCM(t, d, ns, "mig", "--show-managed-fields")
	if cm.Data["a"] != "changed" {
		t.Errorf("after server-side apply: data %v, want a=changed", cm.Data)
	}
	for _, key := range []string{"a", "b"} {
		if got, want := ownersOf(t, cm, key), []string{"kubectl Apply"}; !reflect.DeepEqual(got, want) {
			t.Errorf("owners of .data.%s after the migration = %v, want %v", key, got, want)
		}
	}
	wantOutput(t, d.KubectlStdin(configMapYAML("mig", ns, map[string]string{"a": "changed"}), "apply", "--server-side", "-f", "-"), "configmap/mig serverside-applied\n")
	if cm := kubectlGetCM(t, d, ns, "mig"); !reflect.DeepEqual(cm.Data, map[string]string{"a": "changed"}) {
		t.Errorf("after dropping b: data %v, want only a=changed", cm.Data)
	}
}

// TestKubectl_Diff runs kubectl diff, which sends server dry-run applies:
// it reports a difference with exit code 1, none with 0, and changes
// nothing.
func TestKubectl_Diff(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const ns = "kdiff"
	createNamespace(t, d.Clientset(), ns)
	wantOutput(t, d.KubectlStdin(configMapYAML("d", ns, map[string]string{"k": "v"}), "apply", "--server-side", "-f", "-"), "configmap/d serverside-applied\n")
	before := kubectlGetCM(t, d, ns, "d")

	res := d.KubectlStdin(configMapYAML("d", ns, map[string]string{"k": "w"}), "diff", "--server-side", "-f", "-")
	if res.ExitCode != 1 || !strings.Contains(res.Stdout, "-  k: v\n") || !strings.Contains(res.Stdout, "+  k: w\n") {
		t.Errorf("diff with a change: want exit 1 and the k: v → k: w lines; got %s", res)
	}
	res = d.KubectlStdin(configMapYAML("d", ns, map[string]string{"k": "v"}), "diff", "--server-side", "-f", "-")
	if res.ExitCode != 0 || res.Stdout != "" {
		t.Errorf("diff without a change: want exit 0 and no output; got %s", res)
	}
	res = d.KubectlStdin(configMapYAML("new", ns, map[string]string{"k": "v"}), "diff", "--server-side", "-f", "-")
	if res.ExitCode != 1 || !strings.Contains(res.Stdout, "+  name: new\n") {
		t.Errorf("diff of a new object: want exit 1 and the new object; got %s", res)
	}
	if after := kubectlGetCM(t, d, ns, "d"); after.ResourceVersion != before.ResourceVersion || after.Data["k"] != "v" {
		t.Errorf("kubectl diff changed the object: rv %s→%s data %v", before.ResourceVersion, after.ResourceVersion, after.Data)
	}
	if res := d.Kubectl("get", "configmap", "new", "-n", ns); res.ExitCode == 0 {
		t.Errorf("kubectl diff created the new object: %s", res)
	}
}
