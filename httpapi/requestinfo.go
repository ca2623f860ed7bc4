package httpapi

import (
	"net/http"
	"strings"
)

// requestInfo is what a resource URL names, parsed as kube-apiserver's
// RequestInfoFactory parses it.
type requestInfo struct {
	// Prefix is "api" (core group) or "apis".
	Prefix string
	// Group and Version of the request; Group is "" for /api.
	Group, Version string
	// Namespace is the namespace in the path. For /api/v1/namespaces/NAME it
	// is NAME, as in kube-apiserver.
	Namespace string
	// Resource, Name and Subresource as in the URL.
	Resource, Name, Subresource string
	// Verb is one of get, list, watch, create, update, patch, delete,
	// deletecollection.
	Verb string
	// Parts is the number of path segments after the version (0 for a
	// discovery request such as /api/v1).
	Parts int
	// NamespacePath is true when the resource was named below
	// /namespaces/{namespace}/ (Namespace may still be empty: a "//").
	NamespacePath bool
	// WatchPath is true for a path below /watch/.
	WatchPath bool
}

// namespaceSubresources are the subresources of a Namespace object, which
// would otherwise parse as a resource inside that namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo parses a path below /api or /apis. ok is false when the
// path is not of that form (e.g. "/apis" alone: the caller handles
// discovery).
func parseRequestInfo(method, path string, watchParam bool) (ri requestInfo, ok bool) {
	var buf [10]string
	parts := splitPath(path, buf[:0])
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		ri.Prefix, ri.Version = "api", parts[1]
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		ri.Prefix, ri.Group, ri.Version = "apis", parts[1], parts[2]
		parts = parts[3:]
	default:
		return ri, false
	}
	if ri.Version == "" || (ri.Prefix == "apis" && ri.Group == "") {
		return ri, false // "/api//..." names no version
	}
	ri.Parts = len(parts)
	if len(parts) == 0 {
		return ri, true
	}
	watchPrefix := false
	if parts[0] == "watch" {
		watchPrefix = true
		ri.WatchPath = true
		parts = parts[1:]
		if len(parts) == 0 {
			return ri, false
		}
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		ri.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
			ri.NamespacePath = true
		}
	}
	ri.Resource = parts[0]
	if len(parts) > 1 {
		ri.Name = parts[1]
	}
	if len(parts) > 2 {
		ri.Subresource = parts[2]
	}
	if len(parts) > 3 {
		return ri, false
	}
	switch method {
	case http.MethodGet, http.MethodHead, "": // net/http reads "" as GET
		switch {
		case watchPrefix || watchParam:
			ri.Verb = "watch"
		case ri.Name != "":
			ri.Verb = "get"
		default:
			ri.Verb = "list"
		}
	case http.MethodPost:
		ri.Verb = "create"
	case http.MethodPut:
		ri.Verb = "update"
	case http.MethodPatch:
		ri.Verb = "patch"
	case http.MethodDelete:
		if ri.Name != "" {
			ri.Verb = "delete"
		} else {
			ri.Verb = "deletecollection"
		}
	default:
		ri.Verb = strings.ToLower(method)
	}
	return ri, true
}
