// Package extract reads kube-apiserver's bootstrap policy fixtures from
// the module cache and selects the objects edgeapi bootstraps.
package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/auth/rbac/bootstrap"
)

// Download returns the directory of bootstrap.Module in the module cache,
// downloading it when needed.
func Download() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", bootstrap.Module)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("download %s: %w: %s", bootstrap.Module, err, stderr.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return "", fmt.Errorf("download %s: %w", bootstrap.Module, err)
	}
	if info.Error != "" {
		return "", fmt.Errorf("download %s: %s", bootstrap.Module, info.Error)
	}
	return info.Dir, nil
}

// Extract returns policy.json's bytes, extracted from a fresh download.
func Extract() ([]byte, error) {
	dir, err := Download()
	if err != nil {
		return nil, err
	}
	fixtures := filepath.Join(dir, bootstrap.FixtureDir)
	var roles struct {
		listMeta
		Items []rbacv1.ClusterRole `json:"items"`
	}
	if err := readYAML(filepath.Join(fixtures, "cluster-roles.yaml"), &roles); err != nil {
		return nil, err
	}
	var bindings struct {
		listMeta
		Items []rbacv1.ClusterRoleBinding `json:"items"`
	}
	if err := readYAML(filepath.Join(fixtures, "cluster-role-bindings.yaml"), &bindings); err != nil {
		return nil, err
	}
	p := bootstrap.Policy{Source: bootstrap.Module + " " + bootstrap.FixtureDir + "/cluster-roles.yaml, cluster-role-bindings.yaml"}
	for _, name := range bootstrap.ClusterRoleNames {
		found := false
		for _, r := range roles.Items {
			if r.Name == name {
				p.ClusterRoles = append(p.ClusterRoles, r)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("extract: no ClusterRole %q in the fixtures", name)
		}
	}
	for _, name := range bootstrap.ClusterRoleBindingNames {
		found := false
		for _, b := range bindings.Items {
			if b.Name == name {
				p.ClusterRoleBindings = append(p.ClusterRoleBindings, b)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("extract: no ClusterRoleBinding %q in the fixtures", name)
		}
	}
	out, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// listMeta is the fixtures' v1 List header.
type listMeta struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
}

func readYAML(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read fixture: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}
