// Command gen writes policy.json: the ClusterRoles and ClusterRoleBindings
// of bootstrap.ClusterRoleNames and bootstrap.ClusterRoleBindingNames,
// copied from the bootstrap policy fixtures of bootstrap.Module. Run it
// with `go generate ./auth/rbac/bootstrap` after changing the names or
// the Kubernetes version.
package main

import (
	"fmt"
	"os"

	"github.com/edgeapi/edgeapi/auth/rbac/bootstrap/extract"
)

func main() {
	out, err := extract.Extract()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("policy.json", out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
