//go:build etcd

package etcdstore

import (
	"strings"

	"github.com/edgeapi/edgeapi/store"
)

// This file maps store keys to etcd keys in kube-apiserver's layout, so
// that a kube-apiserver could read the data: <prefix>/<path>/<namespace>/<name>
// for namespaced objects, <prefix>/<path>/<name> for cluster-scoped ones.

// builtinPaths maps a storage resource (store.Key.Resource) to its path
// under the prefix where the path is not given by the default rule (see
// resourcePath). Checked against kube-apiserver 1.36.3 on etcd 3.6.16.
var builtinPaths = map[string]string{
	"configmaps":                             "configmaps",
	"secrets":                                "secrets",
	"namespaces":                             "namespaces",
	"serviceaccounts":                        "serviceaccounts",
	"events":                                 "events",
	"services":                               "services/specs",
	"leases.coordination.k8s.io":             "leases",
	"events.events.k8s.io":                   "events",
	"roles.rbac.authorization.k8s.io":        "roles",
	"rolebindings.rbac.authorization.k8s.io": "rolebindings",
	"clusterroles.rbac.authorization.k8s.io": "clusterroles",
	"clusterrolebindings.rbac.authorization.k8s.io":  "clusterrolebindings",
	"customresourcedefinitions.apiextensions.k8s.io": "apiextensions.k8s.io/customresourcedefinitions",
}

// builtinResources is builtinPaths reversed, for keys read back from a
// watch. "events" maps back to "events", the resource both event kinds
// store under in edgeapi.
var builtinResources = func() map[string]string {
	m := make(map[string]string, len(builtinPaths))
	for res, path := range builtinPaths {
		if cur, ok := m[path]; ok && len(cur) < len(res) {
			continue // keep the shorter name: "events", not "events.events.k8s.io"
		}
		m[path] = res
	}
	return m
}()

// resourcePath returns the etcd path of a storage resource: the built-in
// table's entry, else "<group>/<plural>" for "<plural>.<group>" (custom
// resources and other grouped kinds), else the resource itself (core).
func resourcePath(resource string) string {
	if p, ok := builtinPaths[resource]; ok {
		return p
	}
	if plural, group, ok := strings.Cut(resource, "."); ok {
		return group + "/" + plural
	}
	return resource
}

// keyer builds and parses etcd keys under one prefix.
type keyer struct {
	// prefix ends without a slash ("/registry").
	prefix string
}

// resourcePrefix is the key prefix of every object of resource, ending
// in '/'.
func (k keyer) resourcePrefix(resource string) string {
	return k.prefix + "/" + resourcePath(resource) + "/"
}

// namespacePrefix is the key prefix of the objects of resource in ns.
func (k keyer) namespacePrefix(resource, ns string) string {
	return k.resourcePrefix(resource) + ns + "/"
}

// key returns the etcd key of key.
func (k keyer) key(key store.Key) string {
	if key.Namespace == "" {
		return k.resourcePrefix(key.Resource) + key.Name
	}
	return k.namespacePrefix(key.Resource, key.Namespace) + key.Name
}

// splitRest splits what follows a resource prefix into namespace and name:
// "ns/name" or, for cluster-scoped objects, "name".
func splitRest(rest string) (ns, name string) {
	if ns, name, ok := strings.Cut(rest, "/"); ok {
		return ns, name
	}
	return "", rest
}

// parse returns the store key of an etcd key under the prefix, for keys
// read from a watch on the whole prefix. ok is false for keys that are
// not objects in this layout.
func (k keyer) parse(etcdKey string) (store.Key, bool) {
	rest, ok := strings.CutPrefix(etcdKey, k.prefix+"/")
	if !ok {
		return store.Key{}, false
	}
	segs := strings.Split(rest, "/")
	// Two-segment paths first: "services/specs" and "<group>/<plural>".
	if len(segs) >= 3 {
		path := segs[0] + "/" + segs[1]
		res, known := builtinResources[path]
		if !known && strings.Contains(segs[0], ".") {
			res, known = segs[1]+"."+segs[0], true
		}
		if known {
			return keyFromSegs(res, segs[2:])
		}
	}
	res, known := builtinResources[segs[0]]
	if !known {
		res = segs[0]
	}
	return keyFromSegs(res, segs[1:])
}

// keyFromSegs makes a key from the one (name) or two (namespace, name)
// segments after the resource path.
func keyFromSegs(resource string, segs []string) (store.Key, bool) {
	switch {
	case len(segs) == 1 && segs[0] != "":
		return store.Key{Resource: resource, Name: segs[0]}, true
	case len(segs) == 2 && segs[0] != "" && segs[1] != "":
		return store.Key{Resource: resource, Namespace: segs[0], Name: segs[1]}, true
	}
	return store.Key{}, false
}

// validKey reports whether key can be stored: a resource and a name, no NUL,
// and no '/' in namespace or name (the layout could not be parsed back;
// Kubernetes' name validation rejects '/' anyway).
func validKey(key store.Key) bool {
	if key.Resource == "" || key.Name == "" {
		return false
	}
	for _, s := range [...]string{key.Resource, key.Namespace, key.Name} {
		if strings.ContainsRune(s, 0) {
			return false
		}
	}
	return !strings.Contains(key.Namespace, "/") && !strings.Contains(key.Name, "/")
}
