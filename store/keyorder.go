package store

import "strings"

// Key order. kube-apiserver lists in etcd key order: by the bytes of
// "<namespace>/<name>" for a namespaced resource, of "<name>" for a
// cluster-scoped one. Since '-' (0x2D) and '.' (0x2E) sort before '/'
// (0x2F), namespace a-b comes before namespace a, which comes before a0:
// not the order of the pairs (namespace, name).
//
// The SQLite tables store a namespaced object's namespace column as
// namespace+"/" (cluster-scoped objects keep ""), so that the primary key
// (resource, namespace, name) sorts, with SQLite's BINARY collation, as
// the etcd keys do: a namespace holds no '/', so the first difference of
// two namespace+"/" strings is where "<namespace>/<name>" differs too.
// The conversion happens only at the SQL boundary, with sqlNamespace
// where a namespace is bound and plainNamespace where one is scanned;
// Key.Namespace is always the plain namespace. keyLess orders keys the
// same way in Go.

// sqlNamespace is the stored form of namespace: namespace+"/", or "" for
// cluster scope.
func sqlNamespace(namespace string) string {
	if namespace == "" {
		return ""
	}
	return namespace + "/"
}

// plainNamespace is the namespace a stored namespace column holds.
func plainNamespace(stored string) string {
	return strings.TrimSuffix(stored, "/")
}

// namespaceLess reports whether namespace a sorts before namespace b, as
// sqlNamespace(a) before sqlNamespace(b), without building them.
func namespaceLess(a, b string) bool {
	if a == "" || b == "" {
		return a == "" && b != ""
	}
	n := min(len(a), len(b))
	if a[:n] != b[:n] {
		return a[:n] < b[:n]
	}
	// One is a prefix of the other: compare the longer's next byte with
	// the shorter's '/'.
	switch {
	case len(a) < len(b):
		return '/' < b[n]
	case len(a) > len(b):
		return a[n] < '/'
	}
	return false
}

// keyLess orders keys of one resource as etcd orders their keys: by
// namespace (see namespaceLess), then name.
func keyLess(a, b Key) bool {
	if a.Namespace != b.Namespace {
		return namespaceLess(a.Namespace, b.Namespace)
	}
	return a.Name < b.Name
}
