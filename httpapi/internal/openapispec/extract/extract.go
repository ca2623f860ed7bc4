// Package extract builds openapispec's data file from the OpenAPI documents
// kube-apiserver serves, as the Kubernetes repository publishes them in
// api/openapi-spec (swagger.json for /openapi/v2, v3/*.json for each
// /openapi/v3 group-version). Those files are generated from k8s.io/api's
// and apimachinery's types by kube's own openapi-gen and checked against a
// running kube-apiserver by kube's verify scripts, so edgeapi serves the
// same schemas, descriptions and extensions without a hand copy.
package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgeapi/edgeapi/registry"
)

// KubernetesModule is the module version whose api/openapi-spec is
// extracted: the kube-apiserver release the golden transcripts in
// ../shared/apidiff were recorded against.
const KubernetesModule = "k8s.io/kubernetes@v1.36.3"

// Data is the content of the data file.
type Data struct {
	// Source names the documents the data was extracted from.
	Source string `json:"source"`
	// V3 holds, per group-version path ("api/v1", "apis/<g>/<v>"), the
	// path items of each served resource and the schemas they reach.
	V3 map[string]*GroupVersion `json:"v3"`
	// V3SecuritySchemes is the components.securitySchemes of every
	// group-version document.
	V3SecuritySchemes Blob `json:"v3SecuritySchemes"`
	// V3Template holds the path items of a custom resource, with
	// placeholders (see Placeholders), and the schemas they reach.
	V3Template *Template `json:"v3Template"`
	// V2 holds the same for /openapi/v2: path items per group-version and
	// resource, and all definitions they reach.
	V2 *Swagger `json:"v2"`
}

// GroupVersion is one group-version's part of the data.
type GroupVersion struct {
	// Resources maps a resource ("configmaps"; "" for the group-version's
	// discovery path) to its path items, keyed by path.
	Resources map[string]map[string]Blob `json:"resources"`
	// Reach maps a resource to the names of the schemas its path items
	// reach, sorted.
	Reach map[string][]string `json:"reach"`
	// Schemas are the components.schemas the path items reach.
	Schemas map[string]Blob `json:"schemas"`
}

// Template is the path items of a custom resource kind.
type Template struct {
	// Namespaced and Cluster map a subresource ("" for the main resource,
	// "status", "scale") to path items keyed by path, for a namespaced and a
	// cluster-scoped kind.
	Namespaced map[string]map[string]Blob `json:"namespaced"`
	Cluster    map[string]map[string]Blob `json:"cluster"`
	// Schemas are the schemas the path items reach, besides the kind's and
	// its list's own (ObjectMeta, Status, DeleteOptions, ...).
	Schemas map[string]Blob `json:"schemas"`
	// ScaleSchemas are the schemas only the scale subresource's path
	// items reach (autoscaling/v1 Scale and its parts).
	ScaleSchemas map[string]Blob `json:"scaleSchemas"`
}

// Swagger is the OpenAPI v2 part of the data.
type Swagger struct {
	// Resources maps a group-version path and a resource to path items.
	Resources map[string]map[string]map[string]Blob `json:"resources"`
	// Reach maps a group-version path and a resource to the names of the
	// definitions its path items reach (through parameters too), sorted.
	Reach map[string]map[string][]string `json:"reach"`
	// Template is the custom resource template, with #/definitions/ refs.
	Template *Template `json:"template"`
	// Parameters are the shared parameters the path items reach.
	Parameters map[string]Blob `json:"parameters"`
	// Definitions are the definitions the path items reach.
	Definitions map[string]Blob `json:"definitions"`
	// SecurityDefinitions and Security are the document's own.
	SecurityDefinitions Blob `json:"securityDefinitions"`
	Security            Blob `json:"security"`
}

// Placeholders in template path items and schemas, replaced at run time.
const (
	PHGroupVersionPath = "__GVPATH__"  // "apis/example.com/v1"
	PHResource         = "__PLURAL__"  // "widgets"
	PHKind             = "__KIND__"    // "Widget"
	PHSchema           = "__SCHEMA__"  // "com.example.v1.Widget"
	PHGroup            = "__GROUP__"   // "example.com"
	PHVersion          = "__VERSION__" // "v1"
	PHOperationGV      = "__OPGV__"    // "ExampleComV1"
	PHTag              = "__TAG__"     // "exampleCom_v1"
)

// Template kinds: the custom resource path items are kube-apiserver's path
// items of these built-in kinds with their names replaced. Both have a
// status subresource.
var (
	templateNamespaced = templateKind{gvPath: "api/v1", resource: "services", kind: "Service", schema: "io.k8s.api.core.v1.Service", opGV: "CoreV1", tag: "core_v1", group: "", version: "v1"}
	templateCluster    = templateKind{gvPath: "apis/apiextensions.k8s.io/v1", resource: "customresourcedefinitions", kind: "CustomResourceDefinition", schema: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", opGV: "ApiextensionsV1", tag: "apiextensions_v1", group: "apiextensions.k8s.io", version: "v1"}
	// templateScale gives the scale subresource's path items: no
	// built-in cluster-scoped kind has one, so the cluster-scoped items are
	// the namespaced ones without the namespace (see clusterScale).
	templateScale = templateKind{gvPath: "apis/apps/v1", resource: "deployments", kind: "Deployment", schema: "io.k8s.api.apps.v1.Deployment", opGV: "AppsV1", tag: "apps_v1", group: "apps", version: "v1"}
)

type templateKind struct {
	gvPath, resource, kind, schema, opGV, tag, group, version string
}

// Download returns the directory of KubernetesModule in the module cache,
// downloading it if needed.
func Download() (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", KubernetesModule)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("download %s: %w: %s", KubernetesModule, err, stderr.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("download %s: %w", KubernetesModule, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("download %s: %s", KubernetesModule, info.Error)
	}
	return info.Dir, nil
}

// Build extracts the data of the kinds in reg from the kubernetes module
// at dir and returns the data file's bytes.
func Build(dir string, reg *registry.Registry) ([]byte, error) {
	specDir := filepath.Join(dir, "api", "openapi-spec")
	d := &Data{Source: KubernetesModule + " api/openapi-spec", V3: map[string]*GroupVersion{}}
	byGV := map[string][]*registry.Kind{}
	for _, k := range reg.Kinds() {
		p := gvPath(k.GVK.Group, k.GVK.Version)
		byGV[p] = append(byGV[p], k)
	}
	v3docs := map[string]map[string]any{}
	for _, p := range []string{templateNamespaced.gvPath, templateCluster.gvPath, templateScale.gvPath} {
		if _, ok := byGV[p]; !ok {
			byGV[p] = nil // the template kinds' documents are read too
		}
	}
	for p, kinds := range byGV {
		doc, err := readJSON(filepath.Join(specDir, "v3", strings.ReplaceAll(p, "/", "__")+"_openapi.json"))
		if err != nil {
			return nil, err
		}
		v3docs[p] = doc
		if p == "api/v1" {
			d.V3SecuritySchemes = raw(doc["components"].(map[string]any)["securitySchemes"])
		}
		if len(kinds) == 0 {
			continue
		}
		paths, _ := doc["paths"].(map[string]any)
		schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
		gv := &GroupVersion{Resources: map[string]map[string]Blob{}, Reach: map[string][]string{}}
		var kept []any
		byRes := map[string][]any{}
		for path, item := range paths {
			res, ok := classify(path, p, kinds)
			if !ok {
				continue
			}
			if gv.Resources[res] == nil {
				gv.Resources[res] = map[string]Blob{}
			}
			gv.Resources[res][path] = raw(item)
			kept = append(kept, item)
			byRes[res] = append(byRes[res], item)
		}
		gv.Schemas, err = closure(kept, schemas, "#/components/schemas/")
		if err != nil {
			return nil, fmt.Errorf("schemas of %s: %w", p, err)
		}
		for res, items := range byRes {
			if gv.Reach[res], err = names(items, schemas, "#/components/schemas/"); err != nil {
				return nil, err
			}
		}
		d.V3[p] = gv
	}
	var err error
	d.V3Template, err = buildTemplate(v3docs, "#/components/schemas/", func(doc map[string]any) map[string]any {
		return doc["components"].(map[string]any)["schemas"].(map[string]any)
	})
	if err != nil {
		return nil, err
	}

	swagger, err := readJSON(filepath.Join(specDir, "swagger.json"))
	if err != nil {
		return nil, err
	}
	d.V2 = &Swagger{Resources: map[string]map[string]map[string]Blob{}, Reach: map[string]map[string][]string{}, SecurityDefinitions: raw(swagger["securityDefinitions"]), Security: raw(swagger["security"])}
	defs := swagger["definitions"].(map[string]any)
	params := swagger["parameters"].(map[string]any)
	var kept []any
	byRes := map[[2]string][]any{}
	for path, item := range swagger["paths"].(map[string]any) {
		for p, kinds := range byGV {
			if len(kinds) == 0 {
				continue
			}
			res, ok := classify(path, p, kinds)
			if !ok {
				continue
			}
			if d.V2.Resources[p] == nil {
				d.V2.Resources[p] = map[string]map[string]Blob{}
			}
			if d.V2.Resources[p][res] == nil {
				d.V2.Resources[p][res] = map[string]Blob{}
			}
			d.V2.Resources[p][res][path] = raw(item)
			kept = append(kept, item)
			byRes[[2]string{p, res}] = append(byRes[[2]string{p, res}], item)
		}
	}
	for key, items := range byRes {
		ps, err := closure(items, params, "#/parameters/")
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			var v any
			if err := unmarshal(p, &v); err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		if d.V2.Reach[key[0]] == nil {
			d.V2.Reach[key[0]] = map[string][]string{}
		}
		if d.V2.Reach[key[0]][key[1]], err = names(items, defs, "#/definitions/"); err != nil {
			return nil, err
		}
	}
	if d.V2.Parameters, err = closure(kept, params, "#/parameters/"); err != nil {
		return nil, fmt.Errorf("v2 parameters: %w", err)
	}
	for _, p := range d.V2.Parameters {
		var v any
		if err := unmarshal(p, &v); err != nil {
			return nil, err
		}
		kept = append(kept, v)
	}
	if d.V2.Definitions, err = closure(kept, defs, "#/definitions/"); err != nil {
		return nil, fmt.Errorf("v2 definitions: %w", err)
	}
	one := map[string]map[string]any{templateNamespaced.gvPath: swagger, templateCluster.gvPath: swagger, templateScale.gvPath: swagger}
	if d.V2.Template, err = buildTemplate(one, "#/definitions/", func(doc map[string]any) map[string]any {
		return doc["definitions"].(map[string]any)
	}); err != nil {
		return nil, err
	}
	return Encode(d)
}

func gvPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

// classify reports which served resource of kinds (at group-version path
// gv) a document path belongs to: "" for the group-version's discovery
// path. Paths of subresources a kind does not serve (services/proxy) and
// of resources not served are left out.
func classify(path, gv string, kinds []*registry.Kind) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/"+gv+"/")
	if !ok {
		return "", false
	}
	if rest == "" {
		return "", true
	}
	segs := strings.Split(rest, "/")
	if segs[0] == "watch" {
		segs = segs[1:]
	}
	for _, k := range kinds {
		s := segs
		if k.Namespaced && len(s) >= 3 && s[0] == "namespaces" && s[1] == "{namespace}" {
			s = s[2:]
		}
		if len(s) == 0 || s[0] != k.Resource {
			continue
		}
		switch {
		case len(s) <= 2:
			return k.Resource, true
		case len(s) == 3 && s[2] == "status" && k.StatusSubresource:
			return k.Resource, true
		case len(s) == 3 && s[2] == "finalize" && k.FinalizeSubresource:
			return k.Resource, true
		case len(s) == 3 && s[2] == "token" && k.TokenSubresource:
			return k.Resource, true
		}
	}
	return "", false
}

// buildTemplate takes the template kinds' path items from docs and
// replaces their names with placeholders.
func buildTemplate(docs map[string]map[string]any, refPrefix string, schemasOf func(map[string]any) map[string]any) (*Template, error) {
	t := &Template{}
	var kept []any
	for _, tk := range []templateKind{templateNamespaced, templateCluster} {
		doc := docs[tk.gvPath]
		out := map[string]map[string]Blob{}
		kind := &registry.Kind{Resource: tk.resource, Namespaced: tk == templateNamespaced, StatusSubresource: true}
		for path, item := range doc["paths"].(map[string]any) {
			res, ok := classify(path, tk.gvPath, []*registry.Kind{kind})
			if !ok || res == "" || strings.Contains(path, "/watch/") {
				// kube-apiserver publishes no /watch/ paths for custom
				// resources
				continue
			}
			sub := ""
			if strings.HasSuffix(path, "/status") {
				sub = "status"
			}
			b, err := templatize(path, item, tk, refPrefix)
			if err != nil {
				return nil, err
			}
			newPath := strings.Replace(strings.Replace(path, "/"+tk.gvPath+"/", "/"+PHGroupVersionPath+"/", 1), "/"+tk.resource, "/"+PHResource, 1)
			if out[sub] == nil {
				out[sub] = map[string]Blob{}
			}
			out[sub][newPath] = b
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, err
			}
			kept = append(kept, v)
		}
		if tk == templateNamespaced {
			t.Namespaced = out
		} else {
			t.Cluster = out
		}
	}
	var scaleKept []any
	scalePath := "/" + templateScale.gvPath + "/namespaces/{namespace}/" + templateScale.resource + "/{name}/scale"
	for path, item := range docs[templateScale.gvPath]["paths"].(map[string]any) {
		if path != scalePath {
			continue
		}
		b, err := templatize(path, item, templateScale, refPrefix)
		if err != nil {
			return nil, err
		}
		newPath := strings.Replace(strings.Replace(path, "/"+templateScale.gvPath+"/", "/"+PHGroupVersionPath+"/", 1), "/"+templateScale.resource, "/"+PHResource, 1)
		cb, err := clusterScale(b)
		if err != nil {
			return nil, fmt.Errorf("scale template: %w", err)
		}
		t.Namespaced["scale"] = map[string]Blob{newPath: b}
		t.Cluster["scale"] = map[string]Blob{strings.Replace(newPath, "/namespaces/{namespace}", "", 1): cb}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		scaleKept = append(scaleKept, v)
	}
	if t.Namespaced["scale"] == nil {
		return nil, fmt.Errorf("scale template: no %s/scale path in %s", templateScale.resource, templateScale.gvPath)
	}
	// The template's schemas: everything the path items reach but the
	// kind's own, and the list's metadata.
	// The meta types are in every document, with the document's own
	// x-kubernetes-group-version-kind lists: the cluster-scoped template's
	// (apiextensions.k8s.io/v1, the documents of custom resources' own
	// group) win.
	all := map[string]any{}
	for _, p := range []string{templateScale.gvPath, templateNamespaced.gvPath, templateCluster.gvPath} {
		for k, v := range schemasOf(docs[p]) {
			all[k] = v
		}
	}
	for _, name := range []string{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"} {
		kept = append(kept, map[string]any{"$ref": refPrefix + name})
	}
	var err error
	if t.Schemas, err = closure(kept, all, refPrefix); err != nil {
		return nil, err
	}
	scale, err := closure(scaleKept, all, refPrefix)
	if err != nil {
		return nil, err
	}
	t.ScaleSchemas = map[string]Blob{}
	for n, b := range scale {
		if _, ok := t.Schemas[n]; !ok {
			t.ScaleSchemas[n] = b
		}
	}
	return t, nil
}

// clusterScale turns a namespaced scale path item into the cluster-scoped
// one, as kube-apiserver's CRD builder makes it: without the namespace
// parameter and with "Namespaced" left out of the operation IDs.
func clusterScale(item Blob) (Blob, error) {
	var m map[string]any
	if err := unmarshal(item, &m); err != nil {
		return nil, err
	}
	isNamespace := func(p any) bool {
		pm, _ := p.(map[string]any)
		ref, _ := pm["$ref"].(string)
		return pm["name"] == "namespace" || strings.Contains(ref, "/namespace-")
	}
	for k, v := range m {
		switch k {
		case "parameters":
			var keep []any
			for _, p := range v.([]any) {
				if !isNamespace(p) {
					keep = append(keep, p)
				}
			}
			m[k] = keep
		default:
			op, ok := v.(map[string]any)
			if !ok {
				continue
			}
			if id, ok := op["operationId"].(string); ok {
				op["operationId"] = strings.Replace(id, "Namespaced", "", 1)
			}
		}
	}
	return json.Marshal(m)
}

// notForCustomResources are the media types of built-in kinds' operations
// that custom resources do not have: strategic merge patch (refused with
// 415), and Protobuf and CBOR (kube-apiserver's CRD builder lists JSON and
// YAML only).
var notForCustomResources = map[string]bool{
	"application/strategic-merge-patch+json":           true,
	"application/apply-patch+cbor":                     true,
	"application/cbor":                                 true,
	"application/cbor-seq":                             true,
	"application/vnd.kubernetes.protobuf":              true,
	"application/vnd.kubernetes.protobuf;stream=watch": true,
}

// templatize replaces a template kind's names in one path item.
func templatize(path string, item any, tk templateKind, refPrefix string) (Blob, error) {
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			if key == "x-kubernetes-group-version-kind" {
				return map[string]any{"group": PHGroup, "version": PHVersion, "kind": PHKind}
			}
			for k, e := range x {
				if notForCustomResources[k] {
					delete(x, k)
					continue
				}
				x[k] = walk(k, e)
			}
			return x
		case []any:
			var out []any
			for _, e := range x {
				if m, ok := e.(string); ok && (key == "consumes" || key == "produces") && notForCustomResources[m] {
					continue
				}
				out = append(out, walk("", e))
			}
			return out
		case string:
			switch key {
			case "$ref":
				if x == refPrefix+tk.schema {
					return refPrefix + PHSchema
				}
				if x == refPrefix+tk.schema+"List" {
					return refPrefix + PHSchema + "List"
				}
				return x
			case "operationId":
				return strings.ReplaceAll(strings.ReplaceAll(x, tk.opGV, PHOperationGV), tk.kind, PHKind)
			case "description":
				return strings.ReplaceAll(x, tk.kind, PHKind)
			}
			if x == tk.tag {
				return PHTag
			}
			return x
		}
		return v
	}
	b, err := json.Marshal(item)
	if err != nil {
		return nil, err
	}
	var c any
	if err := unmarshal(b, &c); err != nil {
		return nil, err
	}
	out, err := json.Marshal(walk("", c))
	if err != nil {
		return nil, fmt.Errorf("templatize %s: %w", path, err)
	}
	if bytes.Contains(out, []byte(tk.resource)) && tk.resource != "services" {
		return nil, fmt.Errorf("templatize %s: %s left in %s", path, tk.resource, out)
	}
	return out, nil
}

// closure returns the schemas named by $ref in roots, and those they
// reach, from all.
func closure(roots []any, all map[string]any, refPrefix string) (map[string]Blob, error) {
	out := map[string]Blob{}
	var missing []string
	var visit func(v any)
	visit = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && strings.HasPrefix(ref, refPrefix) {
				name := strings.TrimPrefix(ref, refPrefix)
				if _, done := out[name]; !done && !strings.HasPrefix(name, PHSchema) {
					s, ok := all[name]
					if !ok {
						if len(missing) < 10 {
							missing = append(missing, name)
						}
					} else {
						out[name] = raw(s)
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
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("schemas not found: %v", missing)
	}
	return out, nil
}

// names returns the sorted names of the closure of roots in all.
func names(roots []any, all map[string]any, refPrefix string) ([]string, error) {
	c, err := closure(roots, all, refPrefix)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func readJSON(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read openapi document: %w", err)
	}
	var m map[string]any
	if err := unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return m, nil
}

// unmarshal decodes with numbers kept as written.
func unmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func raw(v any) Blob {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
