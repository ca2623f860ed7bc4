// Package openapispec builds the OpenAPI documents edgeapi serves at
// /openapi/v2 and /openapi/v3/<group-version> from the kinds of a registry
// snapshot.
//
// The built-in kinds' path items and schemas are kube-apiserver's own:
// data.bin.gz holds, for the kinds of registry.Builtin(), the path items
// and the schemas they reach from the OpenAPI documents the Kubernetes
// release named in extract.KubernetesModule publishes (api/openapi-spec),
// extracted by `go generate ./httpapi/internal/openapispec` (see gen/), and
// a test fails when it no longer equals a fresh extraction. A kind that
// supplies its own schema (registry.Kind.OpenAPISchema, the version schema
// of a CustomResourceDefinition) is published the way kube-apiserver
// publishes a custom resource: its schema with apiVersion, kind and metadata
// added, a list schema, and the path items of a built-in kind of the same
// scope with the names replaced (without /watch/ paths, strategic merge
// patch, Protobuf and CBOR, as kube-apiserver's CRD builder publishes
// them).
package openapispec

import (
	"bytes"
	"compress/gzip"
	_ "embed" // data.bin.gz
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
//go:embed data.bin.gz
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
		data, dataErr = extract.Decode(b)
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

// Builder builds documents and keeps the parts of each kind that is not
// built in (its schemas, converted, and its path items) between builds, so
// that a document costs about as much as writing its bytes: the built-in
// parts are copied as they are stored. Safe for concurrent use.
type Builder struct {
	mu     sync.Mutex
	custom map[customKey]*parts
}

type customKey struct {
	kind *registry.Kind
	v2   bool
}

// parts are the path items and schemas of one kind.
type parts struct {
	paths, schemas map[string]extract.Blob
	err            error
}

// Forget drops the parts of kinds not in keep (those of a registry
// snapshot), so that kinds removed from the registry are not kept.
func (b *Builder) Forget(keep []*registry.Kind) {
	live := make(map[*registry.Kind]bool, len(keep))
	for _, k := range keep {
		live[k] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.custom {
		if !live[key.kind] {
			delete(b.custom, key)
		}
	}
}

// customParts returns k's parts, built on first use.
func (b *Builder) customParts(t *extract.Template, k *registry.Kind, v2 bool) *parts {
	key := customKey{k, v2}
	b.mu.Lock()
	p := b.custom[key]
	b.mu.Unlock()
	if p != nil {
		return p
	}
	p = &parts{paths: map[string]extract.Blob{}, schemas: map[string]extract.Blob{}}
	p.err = addCustom(p.paths, p.schemas, t, k, v2)
	b.mu.Lock()
	if b.custom == nil {
		b.custom = map[customKey]*parts{}
	}
	b.custom[key] = p
	b.mu.Unlock()
	return p
}

func (p *parts) addTo(paths, schemas map[string]extract.Blob) {
	for n, v := range p.paths {
		paths[n] = v
	}
	for n, v := range p.schemas {
		schemas[n] = v
	}
}

// V3 is Builder.V3 without keeping parts.
func V3(kinds []*registry.Kind, gvPath, version string) ([]byte, error) {
	return new(Builder).V3(kinds, gvPath, version)
}

// V2 is Builder.V2 without keeping parts.
func V2(kinds []*registry.Kind, version string) ([]byte, error) {
	return new(Builder).V2(kinds, version)
}

// V3 returns the OpenAPI v3 document of the group-version at gvPath
// ("api/v1", "apis/<group>/<version>") for kinds, or nil when none of the
// kinds is served there. version is the info.version of the document.
func (b *Builder) V3(kinds []*registry.Kind, gvPath, version string) ([]byte, error) {
	d, err := load()
	if err != nil {
		return nil, err
	}
	paths := map[string]extract.Blob{}
	schemas := map[string]extract.Blob{}
	builtin := d.V3[gvPath]
	addBuiltin := func(res string) {
		for p, item := range builtin.Resources[res] {
			paths[p] = item
		}
		for _, n := range builtin.Reach[res] {
			schemas[n] = builtin.Schemas[n]
		}
	}
	var found, anyBuiltin bool
	for _, k := range kinds {
		if GroupVersionPath(k) != gvPath {
			continue
		}
		if k.OpenAPISchema == nil && builtin != nil && builtin.Resources[k.Resource] != nil {
			addBuiltin(k.Resource)
			found, anyBuiltin = true, true
			continue
		}
		p := b.customParts(d.V3Template, k, false)
		if p.err != nil {
			continue // kube-apiserver, too, leaves out a kind whose schema does not build
		}
		p.addTo(paths, schemas)
		found = true
	}
	if !found {
		return nil, nil
	}
	if anyBuiltin {
		addBuiltin("")
	}
	var buf bytes.Buffer
	buf.WriteString(`{"components":{"schemas":`)
	writeObject(&buf, schemas)
	buf.WriteString(`,"securitySchemes":`)
	buf.Write(d.V3SecuritySchemes)
	buf.WriteString(`},"info":`)
	writeInfo(&buf, version)
	buf.WriteString(`,"openapi":"3.0.0","paths":`)
	writeObject(&buf, paths)
	buf.WriteString("}")
	return buf.Bytes(), nil
}

// V2 returns the OpenAPI v2 document of kinds.
func (b *Builder) V2(kinds []*registry.Kind, version string) ([]byte, error) {
	d, err := load()
	if err != nil {
		return nil, err
	}
	paths := map[string]extract.Blob{}
	defs := map[string]extract.Blob{}
	addBuiltin := func(gvPath, res string) {
		for p, item := range d.V2.Resources[gvPath][res] {
			paths[p] = item
		}
		for _, n := range d.V2.Reach[gvPath][res] {
			defs[n] = d.V2.Definitions[n]
		}
	}
	gvs := map[string]bool{}
	for _, k := range kinds {
		p := GroupVersionPath(k)
		if k.OpenAPISchema == nil && d.V2.Resources[p][k.Resource] != nil {
			addBuiltin(p, k.Resource)
			gvs[p] = true
			continue
		}
		if p := b.customParts(d.V2.Template, k, true); p.err == nil { // left out on error, as in V3
			p.addTo(paths, defs)
		}
	}
	for p := range gvs {
		addBuiltin(p, "")
	}
	var buf bytes.Buffer
	buf.WriteString(`{"definitions":`)
	writeObject(&buf, defs)
	buf.WriteString(`,"info":`)
	writeInfo(&buf, version)
	buf.WriteString(`,"parameters":`)
	writeObject(&buf, d.V2.Parameters)
	buf.WriteString(`,"paths":`)
	writeObject(&buf, paths)
	buf.WriteString(`,"security":`)
	buf.Write(d.V2.Security)
	buf.WriteString(`,"securityDefinitions":`)
	buf.Write(d.V2.SecurityDefinitions)
	buf.WriteString(`,"swagger":"2.0"}`)
	return buf.Bytes(), nil
}

// addCustom adds the path items and schemas of a kind that is not built
// in: the template's, with k's names, and k's own schemas.
func addCustom(paths, schemas map[string]extract.Blob, t *extract.Template, k *registry.Kind, v2 bool) error {
	kindSchema, listSchema, err := customSchemas(k, v2)
	if err != nil {
		return err
	}
	ks, err := json.Marshal(kindSchema)
	if err != nil {
		return fmt.Errorf("schema of %s: %w", k.GVK, err)
	}
	ls, err := json.Marshal(listSchema)
	if err != nil {
		return fmt.Errorf("schema of %s: %w", k.GVK, err)
	}
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
	subs := []string{""}
	if k.StatusSubresource {
		subs = append(subs, "status")
	}
	if k.Scale != nil {
		subs = append(subs, "scale")
	}
	for _, sub := range subs {
		for p, item := range items[sub] {
			paths[r.Replace(p)] = extract.Blob(r.Replace(string(item)))
		}
	}
	for n, s := range t.Schemas {
		schemas[n] = s
	}
	if k.Scale != nil {
		for n, s := range t.ScaleSchemas {
			schemas[n] = s
		}
	}
	schemas[modelName(k.GVK.Group, k.GVK.Version, k.GVK.Kind)] = ks
	schemas[modelName(k.GVK.Group, k.GVK.Version, k.ListKind)] = ls
	return nil
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
		props["metadata"] = describedRef(ref+"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", metav1.PartialObjectMetadata{}.SwaggerDoc()["metadata"], v2)
		addEmbedded(kindSchema, ref, v2)
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
			"metadata": describedRef(ref+"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", metav1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"], v2),
		},
		"x-kubernetes-group-version-kind": []any{gvk(k.GVK.Group, k.GVK.Version, k.ListKind)},
	}
	return kindSchema, listSchema, nil
}

// Descriptions kube-apiserver's CRD builder gives the apiVersion and kind
// of an embedded resource (x-kubernetes-embedded-resource); a test
// compares the published schema with the builder's.
const (
	embeddedAPIVersionDescription = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	embeddedKindDescription       = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

// addEmbedded gives every node of s marked x-kubernetes-embedded-resource
// the apiVersion, kind and metadata properties and requires apiVersion and
// kind, as kube-apiserver publishes them; in v2 not under nodes that
// preserve unknown fields.
func addEmbedded(s map[string]any, ref string, v2 bool) {
	props, _ := s["properties"].(map[string]any)
	for _, p := range props {
		if m, ok := p.(map[string]any); ok {
			addEmbedded(m, ref, v2)
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if m, ok := s[key].(map[string]any); ok {
			addEmbedded(m, ref, v2)
		}
	}
	if v2 && s["x-kubernetes-preserve-unknown-fields"] == true {
		return
	}
	if s["x-kubernetes-embedded-resource"] != true {
		return
	}
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props["apiVersion"] = map[string]any{"type": "string", "description": embeddedAPIVersionDescription}
	props["kind"] = map[string]any{"type": "string", "description": embeddedKindDescription}
	props["metadata"] = describedRef(ref+"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", metav1.PartialObjectMetadata{}.SwaggerDoc()["metadata"], v2)
	req, _ := s["required"].([]any)
	for _, name := range []string{"kind", "apiVersion"} {
		found := false
		for _, r := range req {
			if r == name {
				found = true
			}
		}
		if !found {
			req = append(req, name)
		}
	}
	s["required"] = req
}

// describedRef is a reference with a description: v2 puts them side by
// side, v3 (where $ref has no siblings) wraps the reference in allOf, as
// kube-openapi's v3 builder does.
func describedRef(ref, description string, v2 bool) map[string]any {
	if v2 {
		return map[string]any{"$ref": ref, "description": description}
	}
	return map[string]any{"allOf": []any{map[string]any{"$ref": ref}}, "description": description}
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

// writeObject writes m as a JSON object with its keys sorted. The values
// are compact JSON already (the data file's, or encoding/json's output), so
// they are copied as they are.
func writeObject(buf *bytes.Buffer, m map[string]extract.Blob) {
	keys := make([]string, 0, len(m))
	n := 2
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	sort.Strings(keys)
	buf.Grow(n)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(m[k])
	}
	buf.WriteByte('}')
}

func writeInfo(buf *bytes.Buffer, version string) {
	b, _ := json.Marshal(Info{Title: "Kubernetes", Version: version})
	buf.Write(b)
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
