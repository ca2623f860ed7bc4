package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// wantOutput checks that kubectl exited 0 and printed exactly want.
func wantOutput(t *testing.T, res KubectlResult, want string) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	if res.Stdout != want {
		t.Errorf("kubectl %s: stdout = %q, want %q", strings.Join(res.Args, " "), res.Stdout, want)
	}
}

// table splits kubectl's human-readable output into rows of fields.
func table(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows
}

// wantTable checks the header and, ignoring the AGE column, the rows of
// `kubectl get` output.
func wantTable(t *testing.T, res KubectlResult, header []string, rows ...[]string) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	got := table(res.Stdout)
	if len(got) == 0 {
		t.Fatalf("kubectl %s printed nothing; stderr: %s", strings.Join(res.Args, " "), res.Stderr)
	}
	if !reflect.DeepEqual(got[0], header) {
		t.Errorf("kubectl %s: header = %q, want %q", strings.Join(res.Args, " "), got[0], header)
	}
	age := -1
	for i, h := range header {
		if h == "AGE" {
			age = i
		}
	}
	var gotRows [][]string
	for _, r := range got[1:] {
		if age >= 0 && age < len(r) {
			r = append(append([]string{}, r[:age]...), r[age+1:]...)
		}
		gotRows = append(gotRows, r)
	}
	if !reflect.DeepEqual(gotRows, rows) {
		t.Errorf("kubectl %s: rows (without AGE) = %q, want %q\noutput:\n%s", strings.Join(res.Args, " "), gotRows, rows, res.Stdout)
	}
}

// TestKubectl_ConfigMap walks a ConfigMap through kubectl's everyday
// commands.
func TestKubectl_ConfigMap(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	wantOutput(t, d.Kubectl("create", "namespace", "team"), "namespace/team created\n")
	wantOutput(t, d.Kubectl("create", "configmap", "cm1", "-n", "team", "--from-literal=k=v", "--from-literal=other=x"), "configmap/cm1 created\n")
	wantOutput(t, d.Kubectl("create", "configmap", "cm2", "-n", "team", "--from-literal=k=w"), "configmap/cm2 created\n")

	t.Run("get table", func(t *testing.T) {
		wantTable(t, d.Kubectl("get", "cm", "-n", "team"), []string{"NAME", "DATA", "AGE"},
			[]string{"cm1", "2"}, []string{"cm2", "1"})
	})
	t.Run("get -o jsonpath", func(t *testing.T) {
		wantOutput(t, d.Kubectl("get", "cm", "cm1", "-n", "team", "-o", "jsonpath={.data.k}"), "v")
	})
	t.Run("get -o json", func(t *testing.T) {
		res := d.MustKubectl("get", "configmap", "cm1", "-n", "team", "-o", "json")
		var cm corev1.ConfigMap
		if err := json.Unmarshal([]byte(res.Stdout), &cm); err != nil {
			t.Fatalf("decode: %v\n%s", err, res.Stdout)
		}
		if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Name != "cm1" || cm.Namespace != "team" ||
			!reflect.DeepEqual(cm.Data, map[string]string{"k": "v", "other": "x"}) || cm.UID == "" || cm.ResourceVersion == "" {
			t.Errorf("get -o json = %+v", cm)
		}
	})
	t.Run("get -o yaml", func(t *testing.T) {
		res := d.MustKubectl("get", "cm", "cm1", "-n", "team", "-o", "yaml")
		for _, want := range []string{"apiVersion: v1\n", "kind: ConfigMap\n", "data:\n  k: v\n  other: x\n", "  name: cm1\n", "  namespace: team\n"} {
			if !strings.Contains(res.Stdout, want) {
				t.Errorf("get -o yaml lacks %q:\n%s", want, res.Stdout)
			}
		}
	})
	t.Run("replace -f", func(t *testing.T) {
		res := d.MustKubectl("get", "cm", "cm1", "-n", "team", "-o", "json")
		var cm corev1.ConfigMap
		if err := json.Unmarshal([]byte(res.Stdout), &cm); err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"k": "replaced"}
		data, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "cm1.json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		wantOutput(t, d.Kubectl("replace", "-f", file), "configmap/cm1 replaced\n")
		wantOutput(t, d.Kubectl("get", "cm", "cm1", "-n", "team", "-o", "jsonpath={.data}"), `{"k":"replaced"}`)

		// The file still carries the old resourceVersion: a second replace
		// conflicts.
		res = d.Kubectl("replace", "-f", file)
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, `Operation cannot be fulfilled on configmaps "cm1": the object has been modified; please apply your changes to the latest version and try again`) {
			t.Errorf("stale replace: want a conflict; got %s", res)
		}
	})
	t.Run("label", func(t *testing.T) {
		wantOutput(t, d.Kubectl("label", "cm", "cm1", "-n", "team", "app=x"), "configmap/cm1 labeled\n")
		wantOutput(t, d.Kubectl("get", "cm", "cm1", "-n", "team", "-o", "jsonpath={.metadata.labels.app}"), "x")
		wantTable(t, d.Kubectl("get", "cm", "-n", "team", "-l", "app=x"), []string{"NAME", "DATA", "AGE"}, []string{"cm1", "1"})
		res := d.Kubectl("get", "cm", "-n", "team", "-l", "app=nothing")
		if res.ExitCode != 0 || res.Stdout != "" || strings.TrimSpace(res.Stderr) != "No resources found in team namespace." {
			t.Errorf("get with a selector matching nothing: %s", res)
		}
	})
	t.Run("annotate", func(t *testing.T) {
		wantOutput(t, d.Kubectl("annotate", "cm", "cm1", "-n", "team", "note=hello"), "configmap/cm1 annotated\n")
		wantOutput(t, d.Kubectl("get", "cm", "cm1", "-n", "team", "-o", "jsonpath={.metadata.annotations.note}"), "hello")
	})
	t.Run("delete", func(t *testing.T) {
		wantOutput(t, d.Kubectl("delete", "cm", "cm2", "-n", "team"), "configmap \"cm2\" deleted from team namespace\n")
		res := d.Kubectl("get", "cm", "cm2", "-n", "team")
		if res.ExitCode == 0 || strings.TrimSpace(res.Stderr) != `Error from server (NotFound): configmaps "cm2" not found` {
			t.Errorf("get after delete: %s", res)
		}
	})
}

// TestKubectl_Secret creates a generic Secret and prints it.
func TestKubectl_Secret(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	wantOutput(t, d.Kubectl("create", "namespace", "vault"), "namespace/vault created\n")
	wantOutput(t, d.Kubectl("create", "secret", "generic", "s1", "-n", "vault", "--from-literal=user=admin", "--from-literal=pass=p@ss"), "secret/s1 created\n")
	wantTable(t, d.Kubectl("get", "secrets", "-n", "vault"), []string{"NAME", "TYPE", "DATA", "AGE"}, []string{"s1", "Opaque", "2"})
	// base64 of "admin"
	wantOutput(t, d.Kubectl("get", "secret", "s1", "-n", "vault", "-o", "jsonpath={.data.user}"), "YWRtaW4=")
}

// TestKubectl_Namespace creates, lists and deletes a namespace with content.
func TestKubectl_Namespace(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	wantOutput(t, d.Kubectl("create", "namespace", "temp"), "namespace/temp created\n")
	wantOutput(t, d.Kubectl("create", "configmap", "cm", "-n", "temp", "--from-literal=k=v"), "configmap/cm created\n")
	wantOutput(t, d.Kubectl("create", "secret", "generic", "s", "-n", "temp", "--from-literal=k=v"), "secret/s created\n")

	res := d.MustKubectl("get", "ns")
	rows := table(res.Stdout)
	if len(rows) == 0 {
		t.Fatalf("get ns printed nothing: %s", res)
	}
	if got, want := rows[0], []string{"NAME", "STATUS", "AGE"}; !reflect.DeepEqual(got, want) {
		t.Errorf("get ns: header = %q, want %q", got, want)
	}
	status := map[string]string{}
	for _, r := range rows[1:] {
		if len(r) == 3 {
			status[r[0]] = r[1]
		}
	}
	for _, ns := range []string{"default", "kube-system", "kube-public", "temp"} {
		if status[ns] != "Active" {
			t.Errorf("get ns: %s is %q, want Active\n%s", ns, status[ns], res.Stdout)
		}
	}

	// kubectl waits (with a watch) until the namespace is gone.
	wantOutput(t, d.Kubectl("delete", "ns", "temp", "--timeout=60s"), "namespace \"temp\" deleted\n")
	for _, kind := range []string{"configmaps", "secrets"} {
		res := d.Kubectl("get", kind, "-n", "temp")
		if res.ExitCode != 0 || res.Stdout != "" || strings.TrimSpace(res.Stderr) != "No resources found in temp namespace." {
			t.Errorf("get %s in the deleted namespace: %s", kind, res)
		}
	}
	res = d.Kubectl("get", "ns", "temp")
	if res.ExitCode == 0 || strings.TrimSpace(res.Stderr) != `Error from server (NotFound): namespaces "temp" not found` {
		t.Errorf("get deleted namespace: %s", res)
	}
}

// TestKubectl_CreateGenerateName creates from a manifest with generateName,
// which `kubectl create` (unlike apply) accepts.
func TestKubectl_CreateGenerateName(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	manifest := `apiVersion: v1
kind: ConfigMap
metadata:
  generateName: gen-
  namespace: default
  labels:
    app: x
data:
  k: v
`
	seen := map[string]bool{}
	re := regexp.MustCompile(`^configmap/(gen-[a-z0-9]{5}) created\n$`)
	for i := 0; i < 2; i++ {
		res := d.KubectlStdin(manifest, "create", "-f", "-")
		if res.ExitCode != 0 {
			t.Fatalf("%s", res)
		}
		m := re.FindStringSubmatch(res.Stdout)
		if m == nil {
			t.Fatalf("create -f: stdout = %q, want configmap/gen-XXXXX created", res.Stdout)
		}
		seen[m[1]] = true
	}
	if len(seen) != 2 {
		t.Errorf("two creates gave names %v, want two different names", seen)
	}
	res := d.MustKubectl("get", "cm", "-l", "app=x", "-o", "name")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		got = append(got, strings.TrimPrefix(l, "configmap/"))
	}
	for name := range seen {
		if !strings.Contains(res.Stdout, "configmap/"+name+"\n") {
			t.Errorf("get cm -l app=x -o name = %q, want %s listed", got, name)
		}
	}
	if len(got) != 2 {
		t.Errorf("get cm -l app=x -o name = %q, want exactly the two generated names", got)
	}
}

// TestKubectl_Discovery checks api-resources and api-versions.
func TestKubectl_Discovery(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)

	t.Run("api-resources", func(t *testing.T) {
		res := d.MustKubectl("api-resources")
		rows := table(res.Stdout)
		if len(rows) == 0 {
			t.Fatalf("api-resources printed nothing: %s", res)
		}
		if got, want := rows[0], []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}; !reflect.DeepEqual(got, want) {
			t.Errorf("header = %q, want %q", got, want)
		}
		have := map[string]bool{}
		for _, r := range rows[1:] {
			have[strings.Join(r, " ")] = true
		}
		for _, want := range []string{
			"configmaps cm v1 true ConfigMap",
			"events ev v1 true Event",
			"namespaces ns v1 false Namespace",
			"secrets v1 true Secret",
			"leases coordination.k8s.io/v1 true Lease",
			"events ev events.k8s.io/v1 true Event",
		} {
			if !have[want] {
				t.Errorf("api-resources lacks %q:\n%s", want, res.Stdout)
			}
		}
	})
	t.Run("api-versions", func(t *testing.T) {
		res := d.MustKubectl("api-versions")
		have := map[string]bool{}
		for _, l := range strings.Split(res.Stdout, "\n") {
			have[l] = true
		}
		for _, want := range []string{"v1", "coordination.k8s.io/v1", "events.k8s.io/v1"} {
			if !have[want] {
				t.Errorf("api-versions lacks %q:\n%s", want, res.Stdout)
			}
		}
	})
}
