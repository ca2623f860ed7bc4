package e2e

import (
	"strings"
	"testing"
	"time"
)

// kubectlNilConditions is how kubectl wait fails on an object whose
// status.conditions is null.
const kubectlNilConditions = ".status.conditions accessor error: <nil> is of the type <nil>, expected []interface{}"

// waitEstablished runs `kubectl wait --for condition=established` on the
// named CRDs (with the crd/ prefix added), as a user does right after
// applying them, and fails the test unless it succeeds. A CRD that has
// just been created has status.conditions null until the CRD controller
// writes them, in kube-apiserver as in edgeapi, and kubectl wait fails at
// once if its first read comes before that (kubernetes/kubernetes#66439);
// so on that error alone, it runs kubectl wait again, as users' scripts do.
func waitEstablished(t *testing.T, d *Daemon, timeout string, names ...string) KubectlResult {
	t.Helper()
	args := []string{"wait", "--for", "condition=established", "--timeout=" + timeout}
	for _, n := range names {
		args = append(args, "crd/"+n)
	}
	deadline := time.Now().Add(eventually)
	for {
		res := d.Kubectl(args...)
		if res.ExitCode == 0 {
			return res
		}
		if !strings.Contains(res.Stderr, kubectlNilConditions) || time.Now().After(deadline) {
			t.Fatalf("%s", res)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
