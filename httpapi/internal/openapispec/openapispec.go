// Package openapispec builds the OpenAPI documents edgeapi serves at
// /openapi/v2 and /openapi/v3/<group-version> from the kinds of a registry
// snapshot.
//
// The built-in kinds' path items and schemas are kube-apiserver's own:
// data.json.gz holds, for the kinds of registry.Builtin(), the path items
// and the schemas they reach from the OpenAPI documents the Kubernetes
// release named in extract.KubernetesModule publishes (api/openapi-spec),
// extracted by `go generate ./httpapi/internal/openapispec` (see gen/), and
// a test fails when it no longer equals a fresh extraction. A kind that
// supplies its own schema (registry.Kind.OpenAPISchema, the version schema
// of a CustomResourceDefinition) is published the way kube-apiserver
// publishes a custom resource: its schema with apiVersion, kind and metadata
// added, a list schema, and the path items of a built-in kind of the same
// scope with the names replaced (and without strategic merge patch, which
// custom resources refuse).
package openapispec

import (
	"bytes"
	"compress/gzip"
	_ "embed" // data.json.gz
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/edgeapi/edgeapi/httpapi/internal/openapispec/extract"
	"github.com/edgeapi/edgeapi/registry"
)

//go:generate go run ./gen

// DataGz is the generated data file, gzip-compressed.
//
//go:embed data.json.gz
var DataGz []byte

var (
	dataOnce sync.Once
	data     *extract.Data
	dataErr  error
)

// load decompresses and parses the data file on first use: the documents
// cost nothing until a client asks for one.
func load() (*extract.Data, error) {
	dataOnce.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(DataGz))
		if err != nil {
			dataErr = fmt.Errorf("read openapi data: %w", err)
			return
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			dataErr = fmt.Errorf("read openapi data: %w", err)
			return
		}
		var d extract.Data
		if err := json.Unmarshal(b, &d); err != nil {
			dataErr = fmt.Errorf("parse openapi data: %w", err)
			return
		}
		data = &d
	})
	return data, dataErr
}

const (
	v3Ref = "#/components/schemas/"
	v2Ref = "#/definitions/"
)

// GroupVersionPath is the path of a kind's group-version under
// /openapi/v3: "api/v1" or "apis/<group>/<version>".
func GroupVersionPath(k *registry.Kind) string {
	if k.GVK.Group == "" {
		return "api/" + k.GVK.Version
	}
	return "apis/" + k.GVK.Group + "/" + k.GVK.Version
}

// Info is the document's info object.
type Info struct {
	Title   string `json:"title"`
	Version string `json:"version"`
}

// V3 returns the OpenAPI v3 document of the group-version at gvPath
// ("api/v1", "apis/<group>/<version>") for kinds, or nil when none of the
// kinds is served there. version is the info.version of the document.
func V3(kinds []*registry.Kind, gvPath, version string) ([]byte, error) {
	d, err := load()
	if err != nil {
		return nil, err
	}
	paths := map[string]any{}
	pool := map[string]json.RawMessage{}
	own := map[string]any{}
	builtin := d.V3[gvPath]
	var found bool
	for _, k := range kinds {
		if GroupVersionPath(k) != gvPath {
			continue
		}
		if k.OpenAPISchema == nil && builtin != nil && builtin.Resources[k.Resource] != nil {
			if err := addPaths(paths, builtin.Resources[k.Resource], nil); err != nil {
				return nil, err
			}
			for n, s := range builtin.Schemas {
				pool[n] = s
			}
			found = true
			continue
		}
		kindSchema, listSchema, err := customSchemas(k, false)
		if err != nil {
			continue // kube-apiserver, too, leaves out a kind whose schema does not build
		}
		if err := addTemplate(paths, d.V3Template, k); err != nil {
			return nil, err
		}
		for n, s := range d.V3Template.Schemas {
			pool[n] = s
		}
		name := modelName(k.GVK.Group, k.GVK.Version, k.GVK.Kind)
		own[name] = kindSchema
		own[modelName(k.GVK.Group, k.GVK.Version, k.ListKind)] = listSchema
		found = true
	}
	if !found {
		return nil, nil
	}
	if builtin != nil && builtin.Resources[""] != nil {
		if err := addPaths(paths, builtin.Resources[""], nil); err != nil {
			return nil, err
		}
	}
	roots := []any{paths}
	for _, s := range own {
		roots = append(roots, s)
	}
	schemas, err := reach(roots, pool, v3Ref)
	if err != nil {
		return nil, err
	}
	for n, s := range own {
		schemas[n] = s
	}
	doc := map[string]any{
		"openapi": "3.0.0",
		"info":    Info{Title: "Kubernetes", Version: version},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": d.V3SecuritySchemes,
		},
	}
	return json.Marshal(doc)
}

// V2 returns the OpenAPI v2 document of kinds.
func V2(kinds []*registry.Kind, version string) ([]byte, error) {
	d, err := load()
	if err != nil {
		return nil, err
	}
	paths := map[string]any{}
	pool := map[string]json.RawMessage{}
	for n, s := range d.V2.Definitions {
		pool[n] = s
	}
	for n, s := range d.V2.Template.Schemas {
		pool[n] = s
	}
	own := map[string]any{}
	gvs := map[string]bool{}
	for _, k := range kinds {
		p := GroupVersionPath(k)
		builtin := d.V2.Resources[p]
		if k.OpenAPISchema == nil && builtin != nil && builtin[k.Resource] != nil {
			if err := addPaths(paths, builtin[k.Resource], nil); err != nil {
				return nil, err
			}
			gvs[p] = true
			continue
		}
		kindSchema, listSchema, err := customSchemas(k, true)
		if err != nil {
			continue
		}
		if err := addTemplate(paths, d.V2.Template, k); err != nil {
			return nil, err
		}
		own[modelName(k.GVK.Group, k.GVK.Version, k.GVK.Kind)] = kindSchema
		own[modelName(k.GVK.Group, k.GVK.Version, k.ListKind)] = listSchema
	}
	for p := range gvs {
		if root := d.V2.Resources[p][""]; root != nil {
			if err := addPaths(paths, root, nil); err != nil {
				return nil, err
			}
		}
	}
	params := map[string]json.RawMessage{}
	var rootParams []any
	if ps, err := reach([]any{paths}, d.V2.Parameters, "#/parameters/"); err != nil {
		return nil, err
	} else {
		for n, p := range ps {
			params[n] = mustRaw(p)
			rootParams = append(rootParams, p)
		}
	}
	roots := append([]any{paths}, rootParams...)
	for _, s := range own {
		roots = append(roots, s)
	}
	defs, err := reach(roots, pool, v2Ref)
	if err != nil {
		return nil, err
	}
	for n, s := range own {
		defs[n] = s
	}
	doc := map[string]any{
		"swagger":             "2.0",
		"info":                Info{Title: "Kubernetes", Version: version},
		"paths":               paths,
		"definitions":         defs,
		"parameters":          params,
		"securityDefinitions": d.V2.SecurityDefinitions,
		"security":            d.V2.Security,
	}
	return json.Marshal(doc)
}

// GroupVersionPaths returns the group-version paths of kinds, sorted.
func GroupVersionPaths(kinds []*registry.Kind) []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range kinds {
		p := GroupVersionPath(k)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// addPaths decodes path items into paths, replacing placeholders with r
// when r is not nil.
func addPaths(paths map[string]any, items map[string]json.RawMessage, r *strings.Replacer) error {
	for p, item := range items {
		if r != nil {
			p = r.Replace(p)
			item = json.RawMessage(r.Replace(string(item)))
		}
		v, err := decode(item)
		if err != nil {
			return fmt.Errorf("decode path item %s: %w", p, err)
		}
		paths[p] = v
	}
	return nil
}

// addTemplate adds the template's path items for k.
func addTemplate(paths map[string]any, t *extract.Template, k *registry.Kind) error {
	items := t.Cluster
	if k.Namespaced {
		items = t.Namespaced
	}
	r := strings.NewReplacer(
		extract.PHGroupVersionPath, GroupVersionPath(k),
		extract.PHResource, k.Resource,
		extract.PHSchema, modelName(k.GVK.Group, k.GVK.Version, k.GVK.Kind),
		extract.PHKind, k.GVK.Kind,
		extract.PHGroup, k.GVK.Group,
		extract.PHVersion, k.GVK.Version,
		extract.PHOperationGV, operationGV(k.GVK.Group, k.GVK.Version),
		extract.PHTag, tag(k.GVK.Group, k.GVK.Version),
	)
	if err := addPaths(paths, items[""], r); err != nil {
		return err
	}
	if k.StatusSubresource {
		return addPaths(paths, items["status"], r)
	}
	return nil
}

// modelName is kube-apiserver's schema name of a custom resource kind: the
// group's labels reversed, the version and the kind
// ("com.example.stable.v1.CronTab").
func modelName(group, version, kind string) string {
	labels := strings.Split(group, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + version + "." + kind
}

// operationGV is the group-version part of an operation ID
// ("stable.example.com", "v1": "StableExampleComV1").
func operationGV(group, version string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	b.WriteString(strings.ToUpper(version[:1]) + version[1:])
	return b.String()
}

// tag is an operation's tag ("stable.example.com", "v1":
// "stableExampleCom_v1").
func tag(group, version string) string {
	g := operationGV(group, "x")
	g = g[:len(g)-1]
	if g != "" {
		g = strings.ToLower(g[:1]) + g[1:]
	}
	return g + "_" + version
}

// customSchemas returns the schema of a kind that is not built in, and of
// its list, as kube-apiserver's CRD OpenAPI builder makes them: the kind's
// own schema (or an object when it has none) with apiVersion, kind and
// metadata set, x-kubernetes-group-version-kind added; for v2 with what v2
// cannot say removed.
func customSchemas(k *registry.Kind, v2 bool) (kindSchema, listSchema map[string]any, err error) {
	ref := v3Ref
	if v2 {
		ref = v2Ref
	}
	kindSchema = map[string]any{"type": "object"}
	var src map[string]any
	if k.OpenAPISchema != nil {
		b, err := k.OpenAPISchema()
		if err != nil {
			return nil, nil, fmt.Errorf("schema of %s: %w", k.GVK, err)
		}
		v, err := decode(b)
		if err != nil {
			return nil, nil, fmt.Errorf("schema of %s: %w", k.GVK, err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("schema of %s: not an object", k.GVK)
		}
		src = m
	}
	preserve := src != nil && src["x-kubernetes-preserve-unknown-fields"] == true
	if src != nil && !(v2 && preserve) {
		if v2 {
			toV2(src)
		}
		kindSchema = src
		props, _ := kindSchema["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			kindSchema["properties"] = props
		}
		typeMeta := metav1.TypeMeta{}.SwaggerDoc()
		props["apiVersion"] = map[string]any{"type": "string", "description": typeMeta["apiVersion"]}
		props["kind"] = map[string]any{"type": "string", "description": typeMeta["kind"]}
		props["metadata"] = map[string]any{
			"$ref":        ref + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
			"description": metav1.PartialObjectMetadata{}.SwaggerDoc()["metadata"],
		}
	}
	kindSchema["x-kubernetes-group-version-kind"] = []any{gvk(k.GVK.Group, k.GVK.Version, k.GVK.Kind)}
	typeMeta := metav1.TypeMeta{}.SwaggerDoc()
	listSchema = map[string]any{
		"type":        "object",
		"description": fmt.Sprintf("%s is a list of %s", k.ListKind, k.GVK.Kind),
		"required":    []any{"items"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"type": "string", "description": typeMeta["apiVersion"]},
			"kind":       map[string]any{"type": "string", "description": typeMeta["kind"]},
			"items": map[string]any{
				"type":        "array",
				"description": fmt.Sprintf("List of %s. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", k.Resource),
				"items":       map[string]any{"$ref": ref + modelName(k.GVK.Group, k.GVK.Version, k.GVK.Kind)},
			},
			"metadata": map[string]any{
				"$ref":        ref + "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
				"description": metav1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"],
			},
		},
		"x-kubernetes-group-version-kind": []any{gvk(k.GVK.Group, k.GVK.Version, k.ListKind)},
	}
	return kindSchema, listSchema, nil
}

func gvk(group, version, kind string) map[string]any {
	return map[string]any{"group": group, "version": version, "kind": kind}
}

// toV2 removes from a structural schema what OpenAPI v2 cannot say, with
// the rules of kube-apiserver's CRD publishing (allOf, oneOf, anyOf and not
// dropped; a nullable or unknown-field-preserving node loses its type's
// structure; a nullable property is no longer required).
func toV2(s map[string]any) {
	delete(s, "allOf")
	delete(s, "oneOf")
	delete(s, "anyOf")
	delete(s, "not")
	if s["nullable"] == true {
		delete(s, "type")
		delete(s, "nullable")
		delete(s, "items")
		delete(s, "properties")
	}
	if s["x-kubernetes-preserve-unknown-fields"] == true {
		delete(s, "items")
		delete(s, "properties")
		if s["type"] == "object" {
			delete(s, "type")
		}
	}
	if s["type"] == "array" && s["items"] == nil {
		delete(s, "type")
	}
	props, _ := s["properties"].(map[string]any)
	if req, ok := s["required"].([]any); ok {
		var kept []any
		for _, r := range req {
			name, _ := r.(string)
			if p, ok := props[name].(map[string]any); ok && p["nullable"] == true {
				continue
			}
			kept = append(kept, r)
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok && ap["nullable"] == true {
			kept = nil
		}
		if kept == nil {
			delete(s, "required")
		} else {
			s["required"] = kept
		}
	}
	for _, p := range props {
		if m, ok := p.(map[string]any); ok {
			toV2(m)
		}
	}
	if m, ok := s["items"].(map[string]any); ok {
		toV2(m)
	}
	if m, ok := s["additionalProperties"].(map[string]any); ok {
		toV2(m)
	}
}

// reach returns the entries of pool named by $ref (with prefix) in roots,
// and those they reach, decoded.
func reach(roots []any, pool map[string]json.RawMessage, prefix string) (map[string]any, error) {
	out := map[string]any{}
	var err error
	var visit func(v any)
	visit = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, prefix) {
				name := ref[len(prefix):]
				if _, done := out[name]; !done {
					if raw, ok := pool[name]; ok {
						s, e := decode(raw)
						if e != nil && err == nil {
							err = e
						}
						out[name] = s
						visit(s)
					}
				}
			}
			for _, e := range x {
				visit(e)
			}
		case []any:
			for _, e := range x {
				visit(e)
			}
		}
	}
	for _, r := range roots {
		visit(r)
	}
	return out, err
}

// decode decodes JSON with numbers kept as written.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
