// Package bootstrap holds the default ClusterRoles and ClusterRoleBindings
// that kube-apiserver creates and that apply to edgeapi: cluster-admin,
// admin, edit and view (with the system:aggregate-to-* roles whose rules
// the aggregation fills them with), system:basic-user, system:discovery
// system:public-info-viewer and system:monitoring (get on /metrics and the
// health paths), and the bindings of cluster-admin, system:basic-user,
// system:discovery, system:public-info-viewer and system:monitoring (to
// the group of that name).
//
// policy.json is extracted by `go generate ./auth/rbac/bootstrap` (see
// gen/) from the bootstrap policy test fixtures of the Kubernetes release
// named in Module (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
// testdata), which kube-apiserver's own tests keep equal to what it
// creates; a test fails when it no longer equals a fresh extraction.
package bootstrap

import (
	_ "embed" // policy.json
	"encoding/json"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
)

//go:generate go run ./gen

// Module is the Kubernetes module whose bootstrap policy is extracted.
const Module = "k8s.io/kubernetes@v1.36.3"

// FixtureDir is the fixtures' directory inside Module.
const FixtureDir = "plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata"

// ClusterRoleNames and ClusterRoleBindingNames are the objects extracted.
var (
	ClusterRoleNames = []string{
		"cluster-admin", "admin", "edit", "view",
		"system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view",
		"system:basic-user", "system:discovery", "system:public-info-viewer", "system:service-account-issuer-discovery",
		"system:monitoring",
	}
	ClusterRoleBindingNames = []string{"cluster-admin", "system:basic-user", "system:discovery", "system:public-info-viewer", "system:service-account-issuer-discovery",
		"system:monitoring"}
)

// Policy is the extracted data.
type Policy struct {
	// Source names the module and files the data was extracted from.
	Source              string                      `json:"source"`
	ClusterRoles        []rbacv1.ClusterRole        `json:"clusterRoles"`
	ClusterRoleBindings []rbacv1.ClusterRoleBinding `json:"clusterRoleBindings"`
}

//go:embed policy.json
var policyJSON []byte

// Load returns a fresh copy of the bootstrap policy, each object with
// apiVersion and kind set, in ClusterRoleNames and
// ClusterRoleBindingNames order.
func Load() (*Policy, error) {
	var p Policy
	if err := json.Unmarshal(policyJSON, &p); err != nil {
		return nil, fmt.Errorf("decode bootstrap policy: %w", err)
	}
	return &p, nil
}
