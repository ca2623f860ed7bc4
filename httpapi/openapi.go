package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/edgeapi/edgeapi/registry"
)

// edgeapi serves OpenAPI documents that describe its paths and operations
// (which kinds, which verbs, which query parameters) but not the kinds'
// schemas. That is what kubectl reads them for: whether the server does
// field validation itself (it does), and, when a schema is missing, kubectl
// falls back to the Go types it was built with for strategic merge patches.

type oapiParam struct {
	Name        string `json:"name"`
	In          string `json:"in"`
	Description string `json:"description,omitempty"`
	Schema      struct {
		Type string `json:"type"`
	} `json:"schema"`
}

type oapiOperation struct {
	OperationID string            `json:"operationId"`
	Parameters  []oapiParam       `json:"parameters,omitempty"`
	Action      string            `json:"x-kubernetes-action"`
	GVK         map[string]string `json:"x-kubernetes-group-version-kind"`
}

func queryParams(names ...string) []oapiParam {
	out := make([]oapiParam, len(names))
	for i, n := range names {
		out[i] = oapiParam{Name: n, In: "query"}
		out[i].Schema.Type = "string"
	}
	return out
}

// openAPIV3Doc is the OpenAPI v3 document of one group/version.
func openAPIV3Doc(reg *registry.Snapshot, gvPath string) map[string]interface{} {
	paths := map[string]interface{}{}
	for _, k := range reg.Kinds() {
		if groupVersionPath(k) != gvPath {
			continue
		}
		gvk := map[string]string{"group": k.GVK.Group, "version": k.GVK.Version, "kind": k.GVK.Kind}
		base := "/" + gvPath
		if k.Namespaced {
			base += "/namespaces/{namespace}"
		}
		item := base + "/" + k.Resource + "/{name}"
		op := func(action, id string, params ...string) oapiOperation {
			return oapiOperation{OperationID: id + k.GVK.Kind, Action: action, GVK: gvk, Parameters: queryParams(params...)}
		}
		paths[base+"/"+k.Resource] = map[string]interface{}{
			"get":  op("list", "list", "labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "resourceVersionMatch", "watch", "allowWatchBookmarks", "sendInitialEvents", "timeoutSeconds"),
			"post": op("post", "create", "dryRun", "fieldManager", "fieldValidation"),
		}
		paths[item] = map[string]interface{}{
			"get":    op("get", "read", "resourceVersion"),
			"put":    op("put", "replace", "dryRun", "fieldManager", "fieldValidation"),
			"patch":  op("patch", "patch", "dryRun", "fieldManager", "fieldValidation", "force"),
			"delete": op("delete", "delete", "dryRun", "gracePeriodSeconds", "propagationPolicy"),
		}
	}
	return map[string]interface{}{
		"openapi":    "3.0.0",
		"info":       map[string]string{"title": "Kubernetes", "version": Version.GitVersion},
		"paths":      paths,
		"components": map[string]interface{}{"schemas": map[string]interface{}{}},
	}
}

func groupVersionPath(k *registry.Kind) string {
	if k.GVK.Group == "" {
		return "api/" + k.GVK.Version
	}
	return "apis/" + k.GVK.Group + "/" + k.GVK.Version
}

func (s *Server) serveOpenAPIV3(c echo.Context) error {
	sub := strings.Trim(strings.TrimPrefix(c.Request().URL.Path, "/openapi/v3"), "/")
	if sub == "" {
		index := map[string]map[string]map[string]string{"paths": {}}
		snap := s.cfg.Registry.Snapshot()
		for _, k := range snap.Kinds() {
			p := groupVersionPath(k)
			b, _ := json.Marshal(openAPIV3Doc(snap, p))
			sum := sha256.Sum256(b)
			index["paths"][p] = map[string]string{"serverRelativeURL": "/openapi/v3/" + p + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
		}
		b, err := json.Marshal(index)
		if err != nil {
			return s.writeError(c, err)
		}
		return c.Blob(http.StatusOK, "text/plain; charset=utf-8", b)
	}
	doc := openAPIV3Doc(s.cfg.Registry.Snapshot(), sub)
	if len(doc["paths"].(map[string]interface{})) == 0 {
		return s.notFound(c)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return s.writeError(c, err)
	}
	return c.Blob(http.StatusOK, mediaJSON, b)
}

// serveOpenAPIV2 serves an OpenAPI v2 document without paths, in JSON
// only; clients that ask for the protobuf form get 406 and fall back.
func (s *Server) serveOpenAPIV2(c echo.Context) error {
	accept := c.Request().Header.Get("Accept")
	if accept != "" && !strings.Contains(accept, "json") && !strings.Contains(accept, "*/*") {
		return s.writeError(c, errNotAcceptable())
	}
	doc := map[string]interface{}{
		"swagger":     "2.0",
		"info":        map[string]string{"title": "Kubernetes", "version": Version.GitVersion},
		"paths":       map[string]interface{}{},
		"definitions": map[string]interface{}{},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return s.writeError(c, err)
	}
	return c.Blob(http.StatusOK, mediaJSON, b)
}
