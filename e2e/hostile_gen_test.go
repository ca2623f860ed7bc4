package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// This file is TestHostileClients' request generator. Request i is built
// from its own generator, rand.NewPCG(seed, i), so that a logged seed and
// index give the same request again whatever the order the workers sent
// them in.

// Names of the hostile fixture.
const (
	hostileScratch = "hostile-scratch" // creates of possibly valid objects go here only
	hostileNSCount = 3                 // known namespaces hostile-known-0..2
	// hostileGuardUID is a uid no object has: a DeleteOptions precondition
	// with it, or a JSON patch test of metadata.uid against it, must fail.
	hostileGuardUID = "00000000-0000-0000-0000-00000000dead"
)

// hostileKind is one served kind the generator sends requests for.
type hostileKind struct {
	prefix     string // "/api/v1" or "/apis/GROUP/VERSION"
	resource   string
	kind       string
	apiVersion string
	names      []string // the known objects of the kind in every known namespace
}

// hostileKinds are the built-in namespaced kinds (registry/builtin.go);
// events are served twice, by core/v1 and by events.k8s.io/v1, from one
// store.
var hostileKinds = []*hostileKind{
	{prefix: "/api/v1", resource: "configmaps", kind: "ConfigMap", apiVersion: "v1", names: []string{"cm-0", "cm-1", "cm-2", "cm-3"}},
	{prefix: "/api/v1", resource: "secrets", kind: "Secret", apiVersion: "v1", names: []string{"secret-0", "secret-1", "secret-2"}},
	{prefix: "/apis/coordination.k8s.io/v1", resource: "leases", kind: "Lease", apiVersion: "coordination.k8s.io/v1", names: []string{"lease-0", "lease-1"}},
	{prefix: "/api/v1", resource: "events", kind: "Event", apiVersion: "v1", names: []string{"event-0", "event-1"}},
	{prefix: "/apis/events.k8s.io/v1", resource: "events", kind: "Event", apiVersion: "events.k8s.io/v1", names: []string{"event-0", "event-1"}},
	// A custom resource of hostileCRD: unstructured, schema-validated,
	// with a CEL rule and a status subresource.
	{prefix: "/apis/hostile.example.com/v1", resource: "gizmos", kind: "Gizmo", apiVersion: "hostile.example.com/v1", names: []string{"gizmo-0", "gizmo-1"}},
}

// hostileCRD defines the Gizmo custom resource the hostile run holds
// known objects of.
const hostileCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"gizmos.hostile.example.com"},
"spec":{"group":"hostile.example.com","scope":"Namespaced",
 "names":{"plural":"gizmos","singular":"gizmo","kind":"Gizmo","shortNames":["gz"]},
 "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
  "additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}],
  "schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","x-kubernetes-validations":[{"rule":"self.size <= 100","message":"size at most 100"}],
    "properties":{"size":{"type":"integer","default":1},"color":{"type":"string","maxLength":32},
     "tags":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"},
     "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
      "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}}}},
   "status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}]}}`

// hostileCRDPath is the known CRD's URL.
const hostileCRDPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.hostile.example.com"

func hostileNamespace(i int) string { return fmt.Sprintf("hostile-known-%d", i) }

// hostileReq is one request of the hostile run.
type hostileReq struct {
	index    int
	category string
	method   string
	// target is the request-target (path and query), sent byte for byte.
	target string
	header [][2]string // in the order sent
	body   []byte
	// chunked sends the body with Transfer-Encoding: chunked.
	chunked bool
	// raw sends the request on its own TCP connection, written by hand:
	// for targets and framing net/http's client will not send.
	raw bool
	// framing, for raw requests, is how the body is framed (see
	// hostileFrame...).
	framing string
	// rawBytes, when set, is sent instead of a request built from the
	// fields above: a request line net/http cannot even express.
	rawBytes []byte
	// scratch: the target is in the scratch namespace, where writes may
	// succeed.
	scratch bool
	// stream: a watch, which may answer 200 and keep streaming.
	stream bool
	// slow: the body is trickled, or declared longer than sent, so that
	// the daemon's --request-timeout may answer 504 Timeout.
	slow bool
	// huge: a body of megabytes; at most a few are in flight at once.
	huge bool
	// guard says how a write to anything outside the scratch namespace is
	// made to be refused (or not stored).
	guard string
}

func (r *hostileReq) headerValue(name string) string {
	for _, h := range r.header {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

func (r *hostileReq) setHeader(name, value string) {
	for i, h := range r.header {
		if strings.EqualFold(h[0], name) {
			r.header[i][1] = value
			return
		}
	}
	r.header = append(r.header, [2]string{name, value})
}

// mutating reports whether the method may change data.
func (r *hostileReq) mutating() bool {
	switch r.method {
	case "GET", "HEAD", "OPTIONS", "":
		return false
	}
	return true
}

// String describes the request for a failure message.
func (r *hostileReq) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d [%s] %s %s", r.index, r.category, r.method, hostileClip([]byte(r.target), 300))
	for _, h := range r.header {
		fmt.Fprintf(&b, " %s=%s", h[0], hostileClip([]byte(h[1]), 100))
	}
	if r.raw {
		b.WriteString(" raw")
		if r.framing != "" {
			b.WriteString(" framing=" + r.framing)
		}
	}
	if r.chunked {
		b.WriteString(" chunked")
	}
	if r.guard != "" {
		b.WriteString(" guard=" + r.guard)
	}
	fmt.Fprintf(&b, " body(%d bytes)=%s", len(r.body), hostileClip(r.body, 300))
	if r.rawBytes != nil {
		fmt.Fprintf(&b, " bytes=%s", hostileClip(r.rawBytes, 300))
	}
	return b.String()
}

// hostileClip quotes at most n bytes of b.
func hostileClip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q...(%d more)", b[:n], len(b)-n)
	}
	return fmt.Sprintf("%q", b)
}

// hostileGen builds one request. Its fields are read-only but rng.
type hostileGen struct {
	rng *rand.Rand
	fx  *hostileFixture
}

// hostileFixture is what the generator knows of the known data.
type hostileFixture struct {
	namespaces []string
	// uids of known objects by "namespace/resource/name", for owner
	// references and preconditions that look right.
	uids map[string]string
	// validProto encodes a valid object of a kind in Protobuf
	// (k8s\x00 + Unknown); filled by the test.
	validProto func(k *hostileKind, obj map[string]any) []byte
}

// Categories and their weights; slow bodies are sent by their own
// goroutines (see hostileSlow) and counted apart.
var hostileCategories = []struct {
	name   string
	weight int
	gen    func(g *hostileGen, r *hostileReq)
}{
	{"garbage-body", 8, (*hostileGen).garbageBody},
	{"truncated-body", 8, (*hostileGen).truncatedBody},
	{"protobuf", 7, (*hostileGen).protobufBody},
	{"deep-nesting", 4, (*hostileGen).deepNesting},
	{"huge", 1, (*hostileGen).huge},
	{"wrong-type-metadata", 12, (*hostileGen).wrongTypeMeta},
	{"managed-fields", 5, (*hostileGen).managedFields},
	{"yaml-bomb", 3, (*hostileGen).yamlBomb},
	{"json-patch", 7, (*hostileGen).jsonPatch},
	{"merge-patch", 5, (*hostileGen).mergePatch},
	{"strategic-merge-patch", 6, (*hostileGen).strategicPatch},
	{"apply-patch", 6, (*hostileGen).applyPatch},
	{"odd-path", 8, (*hostileGen).oddPath},
	{"headers", 6, (*hostileGen).headers},
	{"query", 10, (*hostileGen).query},
	{"raw-http", 3, (*hostileGen).rawHTTP},
	{"scratch", 6, (*hostileGen).scratchWrite},
	{"crd", 2, (*hostileGen).crdWrite},
	{"impersonation", 4, (*hostileGen).impersonation},
}

// hostileRequest returns request i of the run with seed.
func hostileRequest(fx *hostileFixture, seed uint64, i int) hostileReq {
	g := &hostileGen{rng: rand.New(rand.NewPCG(seed, uint64(i)+1)), fx: fx}
	total := 0
	for _, c := range hostileCategories {
		total += c.weight
	}
	n := g.rng.IntN(total)
	for _, c := range hostileCategories {
		if n < c.weight {
			r := hostileReq{index: i, category: c.name}
			c.gen(g, &r)
			g.finish(&r)
			return r
		}
		n -= c.weight
	}
	panic("unreachable")
}

// --- targets ---------------------------------------------------------------

func (g *hostileGen) pick(n int) int { return g.rng.IntN(n) }

func (g *hostileGen) chance(p float64) bool { return g.rng.Float64() < p }

func pickOf[T any](g *hostileGen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

// hostileTarget is a path the generator aims at.
type hostileTarget struct {
	kind    *hostileKind
	ns      string
	name    string // "" for the collection
	scratch bool
}

func (t hostileTarget) collection() string {
	return t.kind.prefix + "/namespaces/" + t.ns + "/" + t.kind.resource
}

func (t hostileTarget) path() string {
	if t.name == "" {
		return t.collection()
	}
	return t.collection() + "/" + t.name
}

// object picks an object path: mostly a known object, sometimes one that
// does not exist, sometimes one in the scratch namespace.
func (g *hostileGen) object() hostileTarget {
	k := pickOf(g, hostileKinds)
	switch n := g.pick(20); {
	case n < 14:
		return hostileTarget{kind: k, ns: pickOf(g, g.fx.namespaces), name: pickOf(g, k.names)}
	case n < 17:
		return hostileTarget{kind: k, ns: pickOf(g, g.fx.namespaces), name: fmt.Sprintf("absent-%d", g.pick(1000))}
	default:
		return hostileTarget{kind: k, ns: hostileScratch, name: fmt.Sprintf("s-%d", g.pick(200)), scratch: true}
	}
}

// collection picks a collection path.
func (g *hostileGen) collection() hostileTarget {
	k := pickOf(g, hostileKinds)
	if g.chance(0.3) {
		return hostileTarget{kind: k, ns: hostileScratch, scratch: true}
	}
	return hostileTarget{kind: k, ns: pickOf(g, g.fx.namespaces)}
}

// --- bodies ----------------------------------------------------------------

// validObject returns a valid object of kind k named name in ns, as a
// JSON-like map, sometimes with labels, finalizers and owner references.
func (g *hostileGen) validObject(k *hostileKind, ns, name string) map[string]any {
	meta := map[string]any{"name": name, "namespace": ns}
	if g.chance(0.5) {
		meta["labels"] = map[string]any{"app": "hostile", "n": fmt.Sprint(g.pick(10))}
	}
	if g.chance(0.2) {
		meta["annotations"] = map[string]any{"example.com/a": "b"}
	}
	if g.chance(0.2) {
		meta["finalizers"] = []any{"example.com/hostile"}
	}
	if g.chance(0.2) {
		meta["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm-0", "uid": g.someUID()}}
	}
	obj := map[string]any{"apiVersion": k.apiVersion, "kind": k.kind, "metadata": meta}
	switch k.resource {
	case "configmaps":
		obj["data"] = map[string]any{"k": fmt.Sprint("v", g.pick(100))}
	case "secrets":
		obj["data"] = map[string]any{"k": base64.StdEncoding.EncodeToString([]byte("secret"))}
		obj["type"] = "Opaque"
	case "leases":
		obj["spec"] = map[string]any{"holderIdentity": "h", "leaseDurationSeconds": 10}
	case "gizmos":
		obj["spec"] = map[string]any{"size": g.pick(10), "color": "red", "tags": []any{"a", "b"}, "ports": []any{map[string]any{"name": "http", "port": 80}}}
	case "events":
		if k.apiVersion == "v1" {
			obj["involvedObject"] = map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "cm-0"}
			obj["reason"] = "Hostile"
			obj["message"] = "m"
			obj["type"] = "Normal"
		} else {
			obj["eventTime"] = "2024-01-01T00:00:00.000000Z"
			obj["reportingController"] = "example.com/hostile"
			obj["reportingInstance"] = "i"
			obj["action"] = "A"
			obj["reason"] = "Hostile"
			obj["regarding"] = map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "cm-0"}
			obj["type"] = "Normal"
		}
	}
	return obj
}

func (g *hostileGen) someUID() string {
	if len(g.fx.uids) > 0 && g.chance(0.7) {
		keys := make([]string, 0, len(g.fx.uids))
		for k := range g.fx.uids {
			keys = append(keys, k)
		}
		// Map order is random; sort for determinism.
		sortStrings(keys)
		return g.fx.uids[pickOf(g, keys)]
	}
	return fmt.Sprintf("%08x-0000-0000-0000-%012x", g.rng.Uint32(), g.rng.Uint64()&0xffffffffffff)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// encodeAs returns obj as JSON, YAML or (for objects) Protobuf, and the
// Content-Type saying so.
func (g *hostileGen) encode(k *hostileKind, obj map[string]any) ([]byte, string) {
	js := mustMarshal(obj)
	switch g.pick(5) {
	case 0, 1:
		y, err := yaml.JSONToYAML(js)
		if err == nil {
			return y, "application/yaml"
		}
	case 2:
		if k != nil && g.fx.validProto != nil {
			if p := g.fx.validProto(k, obj); p != nil {
				return p, "application/vnd.kubernetes.protobuf"
			}
		}
	}
	return js, "application/json"
}

func (g *hostileGen) randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	return b
}

// tokenSoup is random JSON-looking text.
func (g *hostileGen) tokenSoup(n int) []byte {
	tokens := []string{"{", "}", "[", "]", ":", ",", `"a"`, `"metadata"`, `"name"`, `"kind"`, `"apiVersion"`, `"v1"`, `"ConfigMap"`,
		"1", "-0", "1e999", "0x10", "true", "null", "nul", `"\u0000"`, `"\ud800"`, "\"\xff\xfe\"", `"\"`, "'", " ", "\n", "\t", "//", "/*", "NaN", "Infinity",
		`"labels"`, `"finalizers"`, `"data"`, `"$patch"`, "\xef\xbb\xbf", "---", "- ", "&a", "*a", "!!binary", "? ", "|", ">"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(pickOf(g, tokens))
	}
	return b.Bytes()
}

// --- writes ----------------------------------------------------------------

// write fills r as a write of body to t: POST to the collection, PUT or
// PATCH (of patchType) or DELETE the object.
func (g *hostileGen) write(r *hostileReq, t hostileTarget, body []byte, contentType string) {
	switch {
	case strings.Contains(contentType, "patch"):
		r.method = "PATCH"
		r.target = t.path()
		if t.name == "" {
			r.target = t.collection() + "/" + pickOf(g, t.kind.names)
		}
		if contentType == "application/apply-patch+yaml" {
			r.target += "?fieldManager=hostile"
		}
	default:
		switch g.pick(4) {
		case 0:
			r.method = "POST"
			r.target = t.collection()
		case 1:
			r.method = "DELETE"
			r.target = t.path()
		default:
			r.method = "PUT"
			r.target = t.path()
			if t.name == "" {
				r.target = t.collection() + "/" + pickOf(g, t.kind.names)
			}
		}
	}
	r.scratch = t.scratch
	r.body = body
	if contentType != "" {
		r.setHeader("Content-Type", contentType)
	}
}

var hostileBodyTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
	"application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml", ""}

func (g *hostileGen) garbageBody(r *hostileReq) {
	var body []byte
	switch g.pick(4) {
	case 0:
		body = g.randomBytes(g.pick(4096))
	case 1:
		body = g.tokenSoup(g.pick(2048))
	case 2:
		body = append([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":`), g.tokenSoup(g.pick(512))...)
	default:
		body = []byte(pickOf(g, []string{"", " ", "\x00", "{", "}", "[]", "null", "\"\"", "0", "{}{}", "{\"a\":1}garbage", "\xef\xbb\xbf{}", "---\n---\n", "~", "!!str", "%YAML 1.1\n---\n"}))
	}
	g.write(r, g.object(), body, pickOf(g, hostileBodyTypes))
}

func (g *hostileGen) truncatedBody(r *hostileReq) {
	t := g.object()
	obj := g.validObject(t.kind, t.ns, t.name)
	body, ct := g.encode(t.kind, obj)
	if g.chance(0.2) {
		ct = pickOf(g, []string{"application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"})
		body = mustMarshal(obj)
		if ct == "application/apply-patch+yaml" {
			body, _ = yaml.JSONToYAML(body)
		}
	}
	if len(body) > 1 {
		body = body[:1+g.pick(len(body)-1)]
	}
	g.write(r, t, body, ct)
}

func (g *hostileGen) protobufBody(r *hostileReq) {
	t := g.object()
	magic := []byte("k8s\x00")
	var body []byte
	switch g.pick(7) {
	case 0: // garbage after the magic
		body = append(magic, g.randomBytes(g.pick(512))...)
	case 1: // a valid encoding cut short
		if p := g.fx.validProto(t.kind, g.validObject(t.kind, t.ns, t.name)); len(p) > 1 {
			body = p[:1+g.pick(len(p)-1)]
		}
	case 2: // a valid encoding with bytes flipped
		if p := g.fx.validProto(t.kind, g.validObject(t.kind, t.ns, t.name)); len(p) > 4 {
			body = append([]byte(nil), p...)
			for n := 1 + g.pick(4); n > 0; n-- {
				i := 4 + g.pick(len(body)-4)
				body[i] = byte(g.rng.UintN(256))
			}
		}
	case 3: // the Unknown envelope names another kind
		other := pickOf(g, hostileKinds)
		raw := g.fx.validProto(other, g.validObject(other, t.ns, t.name))
		if len(raw) > 4 {
			var u runtime.Unknown
			if err := u.Unmarshal(raw[4:]); err == nil {
				u.Kind = pickOf(g, []string{other.kind, "Pod", "", "Status", "DeleteOptions", "List", "ConfigMapList", strings.Repeat("K", 1000), "Secret", "Namespace"})
				u.APIVersion = pickOf(g, []string{u.APIVersion, "v1", "", "v2", "apps/v1", "meta.k8s.io/v1", "coordination.k8s.io/v1", "a/b/c"})
				b, _ := u.Marshal()
				body = append(magic, b...)
			}
		}
	case 4: // an Unknown around garbage or JSON
		u := runtime.Unknown{Raw: g.randomBytes(g.pick(256))}
		u.APIVersion, u.Kind = t.kind.apiVersion, t.kind.kind
		if g.chance(0.5) {
			u.Raw = mustMarshal(g.validObject(t.kind, t.ns, t.name))
			u.ContentType = pickOf(g, []string{"application/json", "", "application/yaml"})
		}
		if g.chance(0.3) {
			u.ContentEncoding = pickOf(g, []string{"gzip", "junk"})
		}
		b, _ := u.Marshal()
		body = append(magic, b...)
	case 5: // a length prefix claiming far more than follows
		body = append(magic, 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a, 0x02, 'v', '1')
	default: // no magic at all
		body = g.randomBytes(g.pick(64))
	}
	if body == nil {
		body = magic
	}
	ct := "application/vnd.kubernetes.protobuf"
	if g.chance(0.1) {
		ct = "application/vnd.kubernetes.protobuf;stream=watch"
	}
	g.write(r, t, body, ct)
}

func (g *hostileGen) deepNesting(r *hostileReq) {
	depth := pickOf(g, []int{100, 1000, 10000, 10001, 100000, 1000000})
	pair := pickOf(g, [][2]string{{"[", "]"}, {"{\"a\":", "}"}, {"[{\"a\":", "}]"}})
	open, close := pair[0], pair[1]
	var b bytes.Buffer
	prefix := pickOf(g, []string{"", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":`, `{"metadata":{"name":"x"},"data":{"k":`, `[{"op":"add","path":"/metadata/labels","value":`})
	b.WriteString(prefix)
	if g.chance(0.3) && depth <= 10000 {
		// YAML flow or block nesting.
		if g.chance(0.5) {
			b.Reset()
			b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: ")
			b.WriteString(strings.Repeat("[", depth))
			b.WriteString(strings.Repeat("]", depth))
		} else {
			b.Reset()
			d := min(depth, 2000)
			for i := 0; i < d; i++ {
				b.WriteString(strings.Repeat(" ", i))
				b.WriteString("a:\n")
			}
		}
		g.write(r, g.object(), b.Bytes(), pickOf(g, []string{"application/yaml", "application/apply-patch+yaml"}))
		return
	}
	b.WriteString(strings.Repeat(open, depth))
	b.WriteString("1")
	if g.chance(0.7) {
		b.WriteString(strings.Repeat(close, depth))
		if prefix != "" {
			b.WriteString(strings.Repeat("}", strings.Count(prefix, "{")-strings.Count(prefix, "}")))
			if strings.HasPrefix(prefix, "[") {
				b.WriteString("]")
			}
		}
	}
	r.huge = b.Len() > 1<<20
	g.write(r, g.object(), b.Bytes(), pickOf(g, hostileBodyTypes))
}

func (g *hostileGen) huge(r *hostileReq) {
	r.huge = true
	t := g.object()
	obj := g.validObject(t.kind, t.ns, t.name)
	meta := obj["metadata"].(map[string]any)
	size := (1 << 20) + g.pick(3<<20) // 1 to 4 MiB, around the 3 MiB limit
	unit := pickOf(g, []string{"x", "é", "\\u0000", "ab"})
	big := strings.Repeat(unit, size/len(unit))
	switch g.pick(9) {
	case 0:
		obj["data"] = map[string]any{"k": big}
	case 1:
		meta["name"] = big
	case 2:
		meta["labels"] = map[string]any{"k": big}
	case 3:
		meta["annotations"] = map[string]any{"k": big}
	case 4:
		n := size / 12
		f := make([]any, n)
		for i := range f {
			f[i] = fmt.Sprintf("a.b/%x", i%(n/2+1))
		}
		meta["finalizers"] = f
	case 5:
		n := size / 120
		refs := make([]any, n)
		for i := range refs {
			refs[i] = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": fmt.Sprint(i), "controller": i%2 == 0}
		}
		meta["ownerReferences"] = refs
	case 6:
		n := size / 16
		data := make(map[string]any, n)
		for i := 0; i < n; i++ {
			data[fmt.Sprintf("k%x", i)] = "v"
		}
		obj["data"] = data
	case 7:
		n := size / 150
		mf := make([]any, n)
		for i := range mf {
			mf[i] = map[string]any{"manager": fmt.Sprint("m", i), "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{}}}
		}
		meta["managedFields"] = mf
	default:
		// A JSON patch past the operation cap, or with one huge value.
		var ops []any
		if g.chance(0.5) {
			for i := 0; i < 10001; i++ {
				ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/a", "value": "b"})
			}
		} else {
			ops = []any{map[string]any{"op": "add", "path": "/data", "value": map[string]any{"k": big}}}
		}
		g.write(r, t, mustMarshal(ops), "application/json-patch+json")
		return
	}
	ct := pickOf(g, []string{"application/json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/yaml"})
	body := mustMarshal(obj)
	if ct == "application/yaml" {
		if y, _ := yaml.JSONToYAML(body); len(y) <= hostileMaxHugeYAML {
			body = y
		} else {
			ct = "application/json"
		}
	}
	g.write(r, t, body, ct)
}

// hostileMaxHugeYAML bounds the YAML bodies of the huge category. A YAML
// body near the 3 MiB limit holding some 100,000 small values costs the
// daemon over 300 MiB by itself (go-yaml's parser, in sigs.k8s.io/yaml,
// keeps a node for every value: a 2.7 MB ConfigMap of 170,000 keys took it
// to 387 MiB); that is not fixed, and past this bound such bodies are sent
// as JSON instead.
const hostileMaxHugeYAML = 1 << 20

// wrongValues are values of every JSON type, and a few odd ones.
var wrongValues = []any{0, -1, 1.5, 1e300, json.Number("99999999999999999999999999999"), "x", "", true, false, nil,
	[]any{}, []any{1, "a", nil}, map[string]any{}, map[string]any{"a": []any{map[string]any{}}}, "\u0000", "2024-13-45T99:99:99Z", "yesterday",
	strings.Repeat("é", 64), map[string]any{"$patch": "delete"}, []any{[]any{}}}

// wrong returns a copy of one of wrongValues: the request may change it.
func (g *hostileGen) wrong() any { return deepCopyJSON(pickOf(g, wrongValues)) }

func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopyJSON(e)
		}
		return l
	}
	return v
}

// metaFields are every ObjectMeta field; metaSubFields are fields of
// its list items and maps.
var metaFields = []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
	"finalizers", "managedFields"}

var ownerRefFields = []string{"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}

var managedFieldsFields = []string{"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"}

// kindFields are the top-level fields of each kind, for wrong types there
// too.
var kindFields = map[string][]string{
	"configmaps": {"data", "binaryData", "immutable"},
	"secrets":    {"data", "stringData", "type", "immutable"},
	"leases":     {"spec", "spec.holderIdentity", "spec.leaseDurationSeconds", "spec.acquireTime", "spec.renewTime", "spec.leaseTransitions", "spec.strategy", "spec.preferredHolder"},
	"events":     {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type", "eventTime", "series", "action", "related", "reportingComponent", "reportingController", "reportingInstance", "regarding", "note", "deprecatedCount", "deprecatedFirstTimestamp"},
	"gizmos":     {"spec", "spec.size", "spec.color", "spec.tags", "spec.ports", "status"},
}

func (g *hostileGen) wrongTypeMeta(r *hostileReq) {
	t := g.object()
	obj := g.validObject(t.kind, t.ns, t.name)
	meta := obj["metadata"].(map[string]any)
	for n := 1 + g.pick(3); n > 0; n-- {
		v := g.wrong()
		switch g.pick(8) {
		case 0, 1, 2:
			meta[pickOf(g, metaFields)] = v
		case 3:
			meta["labels"] = map[string]any{pickOf(g, []string{"a", "bad key!", "", strings.Repeat("k", 70), "a/b/c"}): v}
		case 4:
			ref := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm-0", "uid": g.someUID()}
			ref[pickOf(g, ownerRefFields)] = v
			meta["ownerReferences"] = []any{ref, g.wrong()}
		case 5:
			meta["finalizers"] = []any{v, "example.com/x"}
		case 6:
			obj[pickOf(g, []string{"apiVersion", "kind", "metadata"})] = v
		default:
			f := pickOf(g, kindFields[t.kind.resource])
			if sub, ok := strings.CutPrefix(f, "spec."); ok {
				spec, _ := obj["spec"].(map[string]any)
				if spec == nil {
					spec = map[string]any{}
					obj["spec"] = spec
				}
				spec[sub] = v
			} else {
				obj[f] = v
			}
		}
	}
	g.writeObject(r, t, obj)
}

// writeObject sends obj as a create, update or one of the patch types.
func (g *hostileGen) writeObject(r *hostileReq, t hostileTarget, obj map[string]any) {
	switch g.pick(5) {
	case 0:
		ct := pickOf(g, []string{"application/merge-patch+json", "application/strategic-merge-patch+json"})
		g.write(r, t, mustMarshal(obj), ct)
	case 1:
		y, _ := yaml.JSONToYAML(mustMarshal(obj))
		g.write(r, t, y, "application/apply-patch+yaml")
	default:
		body, ct := g.encode(t.kind, obj)
		g.write(r, t, body, ct)
		if r.method == "DELETE" {
			r.method = "PUT"
		}
	}
}

func (g *hostileGen) managedFields(r *hostileReq) {
	t := g.object()
	obj := g.validObject(t.kind, t.ns, t.name)
	meta := obj["metadata"].(map[string]any)
	fieldsV1 := []any{
		map[string]any{"f:data": map[string]any{"f:a": map[string]any{}, ".": map[string]any{}}},
		map[string]any{`k:{"x":`: map[string]any{}},
		map[string]any{`v:"`: map[string]any{}},
		map[string]any{"i:-1": map[string]any{}},
		map[string]any{"f:": "str"},
		map[string]any{"x": 1},
		map[string]any{"f:metadata": []any{1, 2}},
		map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:a": map[string]any{"f:b": map[string]any{"f:c": nil}}}}},
		map[string]any{`k:{}`: map[string]any{}, `k:{"uid":1}`: map[string]any{}, `v:[1,2]`: map[string]any{}},
		map[string]any{"f:data": map[string]any{strings.Repeat("f:x", 1000): map[string]any{}}},
		"garbage", nil, []any{}, 7,
	}
	entry := map[string]any{"manager": "m", "operation": "Update", "apiVersion": t.kind.apiVersion, "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": pickOf(g, fieldsV1)}
	if g.chance(0.6) {
		f := pickOf(g, managedFieldsFields)
		entry[f] = pickOf(g, []any{"Apply", "Junk", "FieldsV2", "junk/v1/x", "../", strings.Repeat("m", 300), "2024-99-99", g.wrong()})
	}
	mf := []any{entry}
	if g.chance(0.3) {
		mf = append(mf, entry, map[string]any{"manager": "m", "operation": "Apply"})
	}
	meta["managedFields"] = mf
	g.writeObject(r, t, obj)
}

func (g *hostileGen) yamlBomb(r *hostileReq) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n")
	switch g.pick(5) {
	case 4: // a large string anchor and many aliases: go-yaml counts
		// nodes, not bytes, and lets this through
		r.huge = true
		fmt.Fprintf(&b, "x: &a %q\ndata:\n", strings.Repeat("x", 64<<10+g.pick(1<<20)))
		for i, n := 0, 100+g.pick(3000); i < n; i++ {
			fmt.Fprintf(&b, "  k%d: *a\n", i)
		}
	case 0: // billion laughs
		b.WriteString("x:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
		prev := "a"
		for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
			fmt.Fprintf(&b, "  %s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
			prev = n
		}
		b.WriteString("data:\n  k: *i\n")
	case 1: // a mapping bomb with merge keys
		b.WriteString("x:\n  a: &a {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v, k8: v, k9: v}\n")
		prev := "a"
		for i := 0; i < 8; i++ {
			n := fmt.Sprintf("m%d", i)
			fmt.Fprintf(&b, "  %s: &%s {", n, n)
			for j := 0; j < 10; j++ {
				fmt.Fprintf(&b, "c%d: *%s, ", j, prev)
			}
			b.WriteString("<<: *" + prev + "}\n")
			prev = n
		}
		b.WriteString("metadata2: *" + prev + "\n")
	case 2: // aliases to nothing, in keys, recursive-looking
		b.WriteString(pickOf(g, []string{"data: *nothing\n", "data: &a {k: *a}\n", "data:\n  ? *a\n  : b\n", "data: &a\n  <<: *a\n", "data: !!binary \"@@@\"\n", "data: !!python/object:os.system [ls]\n", "data: &" + strings.Repeat("a", 10000) + " x\n"}))
	default: // many aliases of one large anchor
		fmt.Fprintf(&b, "x: &a %q\ndata:\n", strings.Repeat("x", 10000))
		for i := 0; i < 1000; i++ {
			fmt.Fprintf(&b, "  k%d: *a\n", i)
		}
	}
	t := g.object()
	g.write(r, t, []byte(b.String()), pickOf(g, []string{"application/yaml", "application/apply-patch+yaml"}))
	if r.method == "DELETE" && g.chance(0.5) {
		r.method = "POST"
		r.target = t.collection()
	}
}

var patchPaths = []string{"", "/", "/metadata", "/metadata/labels", "/metadata/labels/a~1b", "/metadata/labels/~2", "/metadata/finalizers/-",
	"/metadata/finalizers/999999999999999999999", "/metadata/finalizers/-1", "/metadata/finalizers/01", "/metadata/finalizers/0",
	"/data/~", "/~", "//", "metadata", "/metadata/name", "/metadata/namespace", "/kind", "/apiVersion", "/metadata/resourceVersion",
	"/metadata/uid", "/metadata/ownerReferences/0/uid", "/metadata/ownerReferences/-", "/metadata/managedFields/0/fieldsV1/f:data",
	"/metadata/managedFields", "/spec/holderIdentity", "/data/k", "/data", "/metadata/creationTimestamp", "/metadata/deletionTimestamp",
	"/\u00e9", "/metadata/labels/" + strings.Repeat("a", 300), strings.Repeat("/a", 5000)}

func (g *hostileGen) jsonPatch(r *hostileReq) {
	var body []byte
	if g.chance(0.1) {
		body = []byte(pickOf(g, []string{"{}", "null", `"add"`, "[null]", "[[]]", "[1]", `[{"op":"add"}]`, `[{"op":"add","path":"/a","value":1}`, "[{}]"}))
	} else {
		var ops []any
		for n := 1 + g.pick(20); n > 0; n-- {
			op := map[string]any{}
			if !g.chance(0.05) {
				op["op"] = pickOf(g, []any{"add", "remove", "replace", "move", "copy", "test", "junk", "", "ADD", nil, 5})
			}
			if !g.chance(0.05) {
				op["path"] = pickOf(g, append([]any{nil, 7, []any{}}, toAny(patchPaths)...))
			}
			if g.chance(0.5) {
				op["from"] = pickOf(g, append([]any{nil, 7}, toAny(patchPaths)...))
			}
			if g.chance(0.8) {
				op["value"] = pickOf(g, []any{g.wrong(), map[string]any{"a": "b"}, []any{"example.com/x"}, "example.com/y"})
			}
			if g.chance(0.05) {
				op["extra"] = "field"
			}
			ops = append(ops, op)
		}
		body = mustMarshal(ops)
	}
	g.write(r, g.object(), body, "application/json-patch+json")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// randomTree is a random JSON value of bounded depth, with nulls and
// odd keys in it.
func (g *hostileGen) randomTree(depth int) any {
	if depth <= 0 || g.chance(0.3) {
		return g.wrong()
	}
	if g.chance(0.3) {
		var l []any
		for n := g.pick(4); n > 0; n-- {
			l = append(l, g.randomTree(depth-1))
		}
		return l
	}
	m := map[string]any{}
	for n := g.pick(4); n > 0; n-- {
		k := pickOf(g, []string{"metadata", "labels", "name", "finalizers", "data", "spec", "ownerReferences", "managedFields", "a", "", "$patch", "$retainKeys", "uid", "resourceVersion", "kind", "apiVersion"})
		m[k] = g.randomTree(depth - 1)
	}
	return m
}

func (g *hostileGen) mergePatch(r *hostileReq) {
	var patch any
	switch g.pick(4) {
	case 0:
		patch = pickOf(g, []any{nil, "x", 1, []any{}, []any{nil}, true})
	case 1:
		patch = map[string]any{"metadata": pickOf(g, []any{nil, map[string]any{"name": nil}, map[string]any{"labels": nil, "finalizers": nil}, map[string]any{"uid": nil, "resourceVersion": nil},
			map[string]any{"ownerReferences": []any{nil}}, map[string]any{"managedFields": []any{nil}}, map[string]any{"namespace": nil}, map[string]any{"creationTimestamp": nil}}),
			pickOf(g, []string{"apiVersion", "kind", "data", "spec"}): nil}
	default:
		patch = g.randomTree(4)
	}
	g.write(r, g.object(), mustMarshal(patch), "application/merge-patch+json")
}

func (g *hostileGen) strategicPatch(r *hostileReq) {
	directives := []any{
		map[string]any{"$patch": pickOf(g, []any{"delete", "replace", "merge", "junk", nil, 1})},
		map[string]any{"metadata": map[string]any{"$patch": pickOf(g, []any{"delete", "replace", "junk", []any{}})}},
		map[string]any{"$retainKeys": pickOf(g, []any{[]any{"data"}, "str", []any{1}, nil, []any{"metadata", "nope"}})},
		map[string]any{"metadata": map[string]any{"$setElementOrder/finalizers": pickOf(g, []any{[]any{"x", "x"}, "str", []any{map[string]any{}}, nil, []any{nil}})}},
		map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": pickOf(g, []any{"x", []any{1, nil}, map[string]any{}})}},
		map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"$patch": "delete"}}}},
		map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": pickOf(g, []any{"x", 1, nil}), "$patch": pickOf(g, []any{"replace", "delete", "junk"})}}}},
		map[string]any{"metadata": map[string]any{"$setElementOrder/ownerReferences": []any{map[string]any{"uid": "x"}, map[string]any{"nouid": 1}, "str"}}},
		map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"$patch": "replace"}}}},
		map[string]any{"metadata": map[string]any{"labels": map[string]any{"$patch": "replace", "a": nil}}},
		map[string]any{"data": map[string]any{"$retainKeys": []any{"k"}, "$patch": "replace"}},
		map[string]any{"metadata": map[string]any{"finalizers": []any{map[string]any{"$patch": "delete"}}}},
		map[string]any{"$setElementOrder/data": []any{"k"}},
		map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/labels": []any{"a"}}},
		// lists and objects where apimachinery expects scalars
		map[string]any{"metadata": map[string]any{"$retainKeys": []any{pickOf(g, []any{[]any{"x"}, map[string]any{}})}}},
		map[string]any{"metadata": map[string]any{"$setElementOrder/finalizers": []any{pickOf(g, []any{[]any{"x"}, map[string]any{}})}}},
		map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": pickOf(g, []any{[]any{"x"}, map[string]any{}})}}}},
		map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []any{pickOf(g, []any{[]any{"x"}, map[string]any{}})}}},
	}
	patch := map[string]any{}
	for n := 1 + g.pick(3); n > 0; n-- {
		for k, v := range pickOf(g, directives).(map[string]any) {
			patch[k] = v
		}
	}
	if g.chance(0.3) {
		patch["spec"] = g.randomTree(3)
	}
	body := mustMarshal(patch)
	if g.chance(0.1) {
		body = mustMarshal(g.randomTree(4))
	}
	g.write(r, g.object(), body, "application/strategic-merge-patch+json")
}

func (g *hostileGen) applyPatch(r *hostileReq) {
	t := g.object()
	if t.name == "" {
		t.name = "x"
	}
	obj := g.validObject(t.kind, t.ns, t.name)
	meta := obj["metadata"].(map[string]any)
	switch g.pick(8) {
	case 0:
		delete(obj, pickOf(g, []string{"apiVersion", "kind"}))
	case 1:
		obj["kind"] = pickOf(g, []string{"Secret", "Pod", "Status", "", "configmap"})
	case 2:
		meta["name"] = pickOf(g, []any{"other", "", nil, 5})
	case 3:
		meta["managedFields"] = []any{map[string]any{"manager": "m", "operation": "Apply"}}
	case 4:
		obj["apiVersion"] = pickOf(g, []string{"v2", "apps/v1", "coordination.k8s.io/v1beta1", "/", "a/b/c"})
	case 5:
		meta[pickOf(g, metaFields)] = g.wrong()
	case 6:
		obj[pickOf(g, []string{"unknownField", "status", "data", "spec"})] = g.randomTree(3)
	}
	y, _ := yaml.JSONToYAML(mustMarshal(obj))
	body := y
	switch g.pick(8) {
	case 0:
		body = mustMarshal(obj) // JSON is YAML
	case 1:
		body = append(append(y, "---\n"...), y...)
	case 2:
		body = append([]byte("apiVersion: v1\napiVersion: v2\n"), y...)
	case 3:
		body = bytes.ReplaceAll(y, []byte("  "), []byte("\t"))
	case 4:
		body = []byte(pickOf(g, []string{"", "null", "~", "- a\n- b\n", "just a string", "{", "---", "a: b: c", "? [a, b]\n: c\n"}))
	}
	g.write(r, t, body, "application/apply-patch+yaml")
	q := url.Values{}
	switch g.pick(5) {
	case 0:
		// no fieldManager: required for apply
	case 1:
		q.Set("fieldManager", pickOf(g, []string{"", strings.Repeat("m", 200), "m\x00", "m\n", "\u00e9"}))
	case 2:
		q.Set("fieldManager", "hostile")
		q.Set("force", pickOf(g, []string{"true", "junk", "", "1"}))
	default:
		q.Set("fieldManager", "hostile")
	}
	r.target = t.path() + "?" + q.Encode()
	if t.name == "" {
		r.target = t.collection() + "/x?" + q.Encode()
	}
}

// --- paths -----------------------------------------------------------------

func (g *hostileGen) oddPath(r *hostileReq) {
	t := g.object()
	p := t.path()
	switch g.pick(16) {
	case 0:
		p = strings.Replace(p, "/", "//", 1+g.pick(4))
	case 1:
		p = strings.Replace(p, "/namespaces/", "/namespaces/./", 1)
	case 2:
		p = strings.Replace(p, "/namespaces/", "/namespaces/../namespaces/", 1)
	case 3:
		p = t.collection() + "/" + strings.ReplaceAll(t.name, "-", "%2F")
	case 4:
		p = p + pickOf(g, []string{"%00", "%2e%2e", "%2F", "%252F", "/", "/.", "/..", ";x=y", "%", "%zz", "#frag", "%C0%AF", "%E2%80%AE", "%EF%BC%8F"})
	case 5:
		p = t.collection() + "/" + strings.Repeat(pickOf(g, []string{"a", "%41", "é"}), 1000+g.pick(60000))
	case 6:
		p = t.collection() + "/" + pickOf(g, []string{"é", "名前", "\U0001F600", "a\u200bb", "CM-0", "..", ".", "%2e", "%2e%2e", "a%20b", "a+b", "a%0Ab", url.PathEscape("naïve"), "\xff\xfe", "a b", "a\tb"})
	case 7:
		p = p + pickOf(g, []string{"/status", "/finalize", "/scale", "/a/b/c", "/status/x", "/proxy", "/log", "/eviction"})
	case 8:
		p = pickOf(g, []string{"/api/v2/namespaces/" + t.ns + "/configmaps", "/apis/nonexistent.example.com/v1/things", "/apis/coordination.k8s.io/v2/namespaces/" + t.ns + "/leases",
			"/api", "/apis", "/api/", "/apis/", "/api/v1/", "/apis/events.k8s.io", "/apis/events.k8s.io/", "/api/v1/watch", "/api/v1/watch/", "/api/v1/watch/namespaces",
			"/api/v1/namespaces//configmaps", "/api/v1/namespaces//configmaps/cm-0", "/api/v1/configmaps/cm-0", "/api/v1/namespaces/" + t.ns + "/namespaces/x",
			"/apis//v1/leases", "/api//", "/api/v1/namespaces/" + t.ns + "/configmaps/cm-0/status", "/version/x", "/openapi/v2/x", "/healthz/../api/v1",
			"/readyz/nope", "/%61pi/v1/namespaces", "/API/V1/NAMESPACES", "/api/v1/namespaces/%20", "/apis/" + strings.Repeat("g.", 5000) + "x/v1",
			"/api/v1/namespaces/" + t.ns + "/configmaps?", "/.well-known/openid-configuration", "/metrics", "/debug/pprof/", "/", ""})
	case 9:
		p = strings.Replace(p, "/namespaces/", "/watch/namespaces/", 1)
	case 10:
		p = strings.ToUpper(p)
	case 11:
		p = "//" + strings.TrimPrefix(p, "/")
	case 12:
		p = strings.ReplaceAll(p, "/", "\\")
	case 13:
		p = "http://" + pickOf(g, []string{"127.0.0.1", "example.com", "[::1]", "a@b"}) + p // absolute-form
	case 14:
		p = "*"
	default:
		p = strings.Replace(p, t.ns, pickOf(g, []string{"", " ", "%00", "..", "-", strings.Repeat("n", 64), "Known", "default", "kube-system", hostileScratch + "/.."}), 1)
	}
	r.method = pickOf(g, []string{"GET", "GET", "GET", "GET", "HEAD", "OPTIONS", "DELETE", "PUT", "PATCH", "POST", "TRACE", "FOO", "get"})
	r.target = p
	if strings.ContainsAny(p, " \t\n\x00\\") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "http:") || p == "*" || p == "" || !isASCII(p) || g.chance(0.1) {
		r.raw = true
	}
	if r.mutating() {
		body, ct := g.encode(t.kind, g.validObject(t.kind, t.ns, t.name))
		if r.method == "PATCH" {
			ct = "application/merge-patch+json"
			body = []byte(`{"metadata":{"labels":{"odd":"path"}}}`)
		}
		r.body = body
		r.setHeader("Content-Type", ct)
	}
	// Odd paths are never the scratch namespace's: every write is guarded.
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// --- headers ---------------------------------------------------------------

var hostileAccepts = []string{"", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/xml", "text/html", "*/*",
	"*/*;q=abc", "application/json;q=0", "application/json;q=NaN", "application/json;q=1e309", "application/json;as=Table;g=meta.k8s.io;v=v1",
	"application/json;as=Table;g=meta.k8s.io;v=v1beta1", "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
	"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
	"application/yaml;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "application/json;as=Table;g=meta.k8s.io;v=v2", "application/json;as=Junk;g=meta.k8s.io;v=v1",
	"application/json;as=Table", "application/yaml;stream=watch", "application/json;stream=watch", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
	";;;", ",,,", "application/", "/json", "application/json;charset=utf-16", "application/json, application/yaml;q=0.9, */*;q=0.1",
	strings.Repeat("application/json;q=0.5,", 1000), "application/json;" + strings.Repeat("a=b;", 500)}

var hostileContentTypes = []string{"", "text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
	";;;", "application/json; charset=utf-16", "application/json; charset=junk", "application/json;;", "application/json, application/yaml",
	"application/JSON", "APPLICATION/YAML", "application/vnd.kubernetes.protobuf;stream=watch", "application/json-patch+json", "application/merge-patch+json",
	"application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/apply-patch+json", "application/x-patch", "*/*",
	strings.Repeat("a", 5000) + "/json", "application/json\x7f"}

func (g *hostileGen) headers(r *hostileReq) {
	if g.chance(0.5) {
		t := g.object()
		r.method = pickOf(g, []string{"GET", "GET", "HEAD"})
		r.target = t.path()
		if g.chance(0.3) {
			r.target = g.collection().path()
		}
		r.scratch = t.scratch
	} else {
		t := g.object()
		body, ct := g.encode(t.kind, g.validObject(t.kind, t.ns, t.name))
		g.write(r, t, body, ct)
		r.setHeader("Content-Type", pickOf(g, hostileContentTypes))
	}
	if g.chance(0.7) {
		r.setHeader("Accept", pickOf(g, hostileAccepts))
	}
	switch g.pick(10) {
	case 0:
		r.setHeader("Content-Encoding", pickOf(g, []string{"gzip", "deflate", "br", "junk"}))
	case 1:
		r.setHeader("Expect", pickOf(g, []string{"100-continue", "junk"}))
	case 2:
		r.setHeader("X-HTTP-Method-Override", pickOf(g, []string{"DELETE", "PUT", "PATCH"}))
	case 3:
		r.setHeader("User-Agent", strings.Repeat("u", 1+g.pick(100000)))
	case 4:
		r.header = append(r.header, [2]string{"Content-Type", pickOf(g, hostileContentTypes)}, [2]string{"Accept", pickOf(g, hostileAccepts)})
	case 5:
		r.setHeader("Accept-Encoding", pickOf(g, []string{"gzip", "gzip;q=0", "*", "junk"}))
	case 6:
		r.setHeader("Impersonate-User", "system:admin")
		r.setHeader("Authorization", "Bearer "+strings.Repeat("x", g.pick(1000)))
	case 7:
		r.chunked = true
	case 8:
		for n := g.pick(200); n > 0; n-- {
			r.header = append(r.header, [2]string{fmt.Sprintf("X-H%d", n), strings.Repeat("v", g.pick(100))})
		}
	}
}

// impersonation sends a read or write as someone else: the hostile daemon's
// clients are system:masters (the insecure listener), who may impersonate
// anyone, so the request is then authorized by RBAC as that user, who has
// no bindings: the impersonation filter, the authorizer and their 400 and
// 403 answers are what it exercises. The headers are malformed, huge or
// repeated as often as not.
func (g *hostileGen) impersonation(r *hostileReq) {
	t := g.object()
	if g.chance(0.5) {
		r.method = pickOf(g, []string{"GET", "GET", "DELETE"})
		r.target = t.path()
		if g.chance(0.3) {
			r.target = t.collection()
		}
		r.scratch = t.scratch
	} else {
		body, ct := g.encode(t.kind, g.validObject(t.kind, t.ns, t.name))
		g.write(r, t, body, ct)
	}
	users := []string{"alice", "", " ", "system:anonymous", "system:serviceaccount:" + t.ns + ":sa", "system:serviceaccount:bad",
		"system:serviceaccount::", "\x00", "é", strings.Repeat("u", 1+g.pick(20000))}
	if g.chance(0.9) {
		r.setHeader("Impersonate-User", pickOf(g, users))
	}
	for n := g.pick(4); n > 0; n-- {
		switch g.pick(4) {
		case 0:
			groups := []string{"devs", "system:authenticated", "system:unauthenticated", "", strings.Repeat("g", 1+g.pick(5000))}
			for m := 1 + g.pick(3); m > 0; m-- {
				r.header = append(r.header, [2]string{"Impersonate-Group", pickOf(g, groups)})
			}
		case 1:
			r.setHeader("Impersonate-Uid", pickOf(g, []string{"", "1", strings.Repeat("9", 1+g.pick(20000))}))
		case 2:
			key := pickOf(g, []string{"scopes", "a%2Fb", "%zz", "A", "%", "", strings.Repeat("k", 1+g.pick(3000))})
			r.header = append(r.header, [2]string{"Impersonate-Extra-" + key, pickOf(g, []string{"v", "", strings.Repeat("v", 1+g.pick(3000))})})
		case 3:
			// Many values: past the bounds after the first ones.
			for m := 100 + g.pick(900); m > 0; m-- {
				r.header = append(r.header, [2]string{"Impersonate-Group", fmt.Sprintf("g%d", m)})
			}
		}
	}
}

// --- query parameters ------------------------------------------------------

var hostileQueryValues = map[string][]string{
	"labelSelector": {"a in (", "!!!", "a=b,", "a==b==c", "a notin ()", "a in (b,,c)", "=", "!", ",", "a!=", "a=" + strings.Repeat("b", 70), "a,b,c", "é=é",
		strings.TrimSuffix(strings.Repeat("a=b,", 5000), ","), "a in (" + strings.Repeat("b,", 5000) + "c)", "a>1", "a<x", "a=b\x00", "(a)", "a in (b) c"},
	"fieldSelector": {"metadata.name==", "spec.x=y", "metadata.name=a,metadata.name!=", "metadata.name\\=x", "metadata.name=\\", "=", "metadata.name",
		"metadata.namespace=" + strings.Repeat("n", 300), "type=Opaque", "involvedObject.name=cm-0", "a=b=c", "metadata.name in (a)", "metadata.uid=x"},
	"limit":                {"-1", "abc", "1e10", "9999999999999999999999", "0", "1", "1.5", "", "0x10", " 1"},
	"continue":             {"", "abc", "====", base64.StdEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":-5,"start":"\u0000"}`)), base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"../../x"}`)), base64.StdEncoding.EncodeToString([]byte("junk")), strings.Repeat("A", 10000)},
	"resourceVersion":      {"abc", "-1", "99999999999999999999", "0", "", "1", "1.5", " 1", "0x10", "9223372036854775807", "-0"},
	"resourceVersionMatch": {"Junk", "Exact", "NotOlderThan", "", "exact"},
	"timeoutSeconds":       {"abc", "-5", "0", "1", "99999999999999999999", "1.5", ""},
	"timeout":              {"abc", "-5s", "0", "1ns", "1h", "", "5", "9999999999h"},
	"watch":                {"yes", "2", "true", "1", "false", "", "TRUE"},
	"allowWatchBookmarks":  {"junk", "true", "1"},
	"sendInitialEvents":    {"junk", "true", "false"},
	"dryRun":               {"Maybe", "", "All,All", "all", "None", strings.Repeat("All", 100)},
	"fieldManager":         {"", strings.Repeat("m", 200), "m\x00", "m\n", "\u00e9", "kubectl"},
	"fieldValidation":      {"Loose", "", "strict", "Strict", "Ignore", "Warn", "junk"},
	"propagationPolicy":    {"Sometimes", "", "Orphan", "Foreground", "Background"},
	"gracePeriodSeconds":   {"abc", "-1", "99999999999999999999", "0"},
	"orphanDependents":     {"junk", "true"},
	"pretty":               {"junk", "true"},
	"includeObject":        {"Junk", "Object", "None", "Metadata"},
	"force":                {"junk", "true"},
	"":                     {"x"},
	"%zz":                  {"%zz"},
	"a":                    {strings.Repeat("b", 20000)},
}

func (g *hostileGen) query(r *hostileReq) {
	keys := make([]string, 0, len(hostileQueryValues))
	for k := range hostileQueryValues {
		keys = append(keys, k)
	}
	sortStrings(keys)
	var parts []string
	for n := 1 + g.pick(4); n > 0; n-- {
		k := pickOf(g, keys)
		v := pickOf(g, hostileQueryValues[k])
		switch {
		case k == "%zz":
			parts = append(parts, "%zz=%zz")
		case k == "resourceVersion" && v == "99999999999999999999" && !g.chance(0.05):
			// A resourceVersion ahead of the store waits 3 s for a
			// 504; send few of them.
			parts = append(parts, k+"=abc")
		default:
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
		if g.chance(0.05) {
			parts = append(parts, k) // without "="
		}
	}
	q := strings.Join(parts, "&")
	var t hostileTarget
	switch g.pick(10) {
	case 0, 1, 2, 3:
		t = g.collection()
		r.method = "GET"
	case 4, 5:
		t = g.object()
		r.method = "GET"
	case 6:
		t = g.collection()
		r.method = "DELETE" // deletecollection
	default:
		t = g.object()
		body, ct := g.encode(t.kind, g.validObject(t.kind, t.ns, t.name))
		g.write(r, t, body, ct)
		if r.method == "POST" && g.chance(0.5) {
			r.method = "PATCH"
			r.target = t.path()
			r.body = []byte(`{"metadata":{"labels":{"q":"x"}}}`)
			r.setHeader("Content-Type", "application/merge-patch+json")
		}
	}
	if r.target == "" {
		r.target = t.path()
	}
	if t.scratch {
		r.scratch = true
	}
	if strings.Contains(r.target, "?") {
		r.target += "&" + q
	} else {
		r.target += "?" + q
	}
	if r.method == "GET" && g.chance(0.2) {
		r.setHeader("Accept", pickOf(g, hostileAccepts))
	}
}

// --- raw HTTP --------------------------------------------------------------

// Framings of a raw request's body.
const (
	hostileFrameShort     = "content-length-longer-than-body"
	hostileFrameChunkJunk = "bad-chunked"
	hostileFrameDupCL     = "duplicate-content-length"
	hostileFrameCLChunked = "content-length-and-chunked"
	hostileFrameNegCL     = "negative-content-length"
)

func (g *hostileGen) rawHTTP(r *hostileReq) {
	r.raw = true
	t := g.object()
	switch g.pick(3) {
	case 0: // a request line or header block net/http's client cannot send
		r.rawBytes = []byte(pickOf(g, []string{
			"GET\r\n\r\n", "GET /api/v1\r\n\r\n", "GET /api/v1 HTTP/1.1\r\n\r\n",
			"GET /api/v1 HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", "GET /api/v1 HTTP/1.1\r\nHost: x\r\n folded: header\r\n\r\n",
			"GET /api/v1 HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
			"GET /api/v1 HTTP/1.1\nHost: x\n\n", "GET  /api/v1  HTTP/1.1\r\nHost: x\r\n\r\n", "G\x00T / HTTP/1.1\r\nHost: x\r\n\r\n",
			"GET /api/v1 HTTP/1.0\r\n\r\n", "GET " + t.path() + " HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n12345GET / HTTP/1.1\r\n\r\n",
			"GET /api/v1 HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", "GET /api/v1 HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 20000) + "\r\n",
			string(g.randomBytes(200)),
		}))
	default:
		body, ct := g.encode(t.kind, g.validObject(t.kind, t.ns, t.name))
		g.write(r, t, body, ct)
		r.framing = pickOf(g, []string{hostileFrameShort, hostileFrameChunkJunk, hostileFrameDupCL, hostileFrameCLChunked, hostileFrameNegCL})
		if r.framing == hostileFrameShort || r.framing == hostileFrameChunkJunk {
			r.slow = true // the daemon waits out --request-timeout
		}
	}
}

// --- the scratch namespace -------------------------------------------------

func (g *hostileGen) scratchWrite(r *hostileReq) {
	k := pickOf(g, hostileKinds)
	t := hostileTarget{kind: k, ns: hostileScratch, name: fmt.Sprintf("s-%d", g.pick(200)), scratch: true}
	obj := g.validObject(k, t.ns, t.name)
	switch g.pick(8) {
	case 0, 1, 2:
		body, ct := g.encode(k, obj)
		r.method, r.target, r.body = "POST", t.collection(), body
		r.setHeader("Content-Type", ct)
		if g.chance(0.3) {
			meta := obj["metadata"].(map[string]any)
			delete(meta, "name")
			meta["generateName"] = pickOf(g, []string{"g-", "", "G", strings.Repeat("g", 300)})
			r.body = mustMarshal(obj)
			r.setHeader("Content-Type", "application/json")
		}
	case 3:
		body, ct := g.encode(k, obj)
		r.method, r.target, r.body = "PUT", t.path(), body
		r.setHeader("Content-Type", ct)
	case 4:
		y, _ := yaml.JSONToYAML(mustMarshal(obj))
		r.method, r.target, r.body = "PATCH", t.path()+"?fieldManager=hostile&force=true", y
		r.setHeader("Content-Type", "application/apply-patch+yaml")
	case 5:
		r.method, r.target = "DELETE", t.path()+"?"+pickOf(g, []string{"", "propagationPolicy=Foreground", "propagationPolicy=Orphan", "gracePeriodSeconds=0"})
	case 6:
		r.method, r.target = "DELETE", t.collection()+"?labelSelector="+url.QueryEscape(pickOf(g, []string{"n=1", "app=hostile", "n in (2,3)", "!n"}))
	default:
		r.method, r.target, r.body = "PATCH", t.path(), mustMarshal(g.randomTree(3))
		r.setHeader("Content-Type", pickOf(g, []string{"application/merge-patch+json", "application/strategic-merge-patch+json"}))
	}
	r.scratch = true
}

// crdWrite sends CustomResourceDefinitions, mostly invalid ones: schemas
// that are not structural, deeply nested or huge, CEL rules that do not
// compile or cost too much, names that do not match, and garbage patches
// of the known CRD (guarded like any write to known data). A valid CRD is
// stored only under one of a few scratch names, so the run holds a
// bounded number of them; most creates are dry runs.
func (g *hostileGen) crdWrite(r *hostileReq) {
	const coll = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	plural := pickOf(g, []string{"widgets", "things", "gadgets"})
	group := fmt.Sprintf("scratch%d.example.com", g.pick(2))
	crd := map[string]any{}
	if err := json.Unmarshal([]byte(hostileCRD), &crd); err != nil {
		panic(err)
	}
	crd["metadata"] = map[string]any{"name": plural + "." + group}
	spec := crd["spec"].(map[string]any)
	spec["group"] = group
	spec["names"] = map[string]any{"plural": plural, "kind": strings.ToUpper(plural[:1]) + plural[1:len(plural)-1]}
	version := spec["versions"].([]any)[0].(map[string]any)
	schema := version["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	specProps := schema["properties"].(map[string]any)["spec"].(map[string]any)
	switch g.pick(10) {
	case 0: // a property without a type: not structural
		specProps["properties"].(map[string]any)["bad"] = map[string]any{"description": "no type"}
	case 1: // a rule that does not compile, or one over the cost budget
		specProps["x-kubernetes-validations"] = []any{map[string]any{"rule": pickOf(g, []string{"self.size >", "self.nope == 1",
			"self.tags.all(a, self.tags.all(b, self.tags.all(c, a + b + c != '')))", strings.Repeat("(", 500) + "true" + strings.Repeat(")", 500)})}}
	case 2: // deep nesting
		leaf := map[string]any{"type": "string"}
		for range 200 + g.pick(300) {
			leaf = map[string]any{"type": "object", "properties": map[string]any{"x": leaf}}
		}
		specProps["properties"].(map[string]any)["deep"] = leaf
	case 3: // many properties (a 650 KB CRD of 9,000 costs the daemon about 40 MiB while it is created and served: kept below that here)
		props := specProps["properties"].(map[string]any)
		for i := range 500 + g.pick(2500) {
			props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", g.pick(100))}
		}
	case 4: // the name does not match, or two storage versions
		if g.chance(0.5) {
			crd["metadata"] = map[string]any{"name": "wrong.example.com"}
		} else {
			v2 := map[string]any{}
			for k, v := range version {
				v2[k] = v
			}
			v2["name"] = "v2"
			spec["versions"] = []any{version, v2}
		}
	case 5: // wrong types anywhere
		g.setRandomPath(crd, g.wrong())
	case 6: // a garbage patch of the known CRD (guarded)
		r.method, r.target, r.body = "PATCH", hostileCRDPath, mustMarshal(g.randomTree(3))
		r.setHeader("Content-Type", pickOf(g, []string{"application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"}))
		return
	case 7: // delete a scratch CRD
		r.method, r.target = "DELETE", coll+"/"+plural+"."+group
		r.scratch = true
		return
	}
	r.method, r.target, r.body = "POST", coll, mustMarshal(crd)
	if g.chance(0.7) {
		r.target += "?dryRun=All"
	}
	r.setHeader("Content-Type", "application/json")
	r.scratch = true
}

// setRandomPath replaces a random value somewhere in v with val.
func (g *hostileGen) setRandomPath(v map[string]any, val any) {
	cur := v
	for range 6 {
		keys := make([]string, 0, len(cur))
		for k := range cur {
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			break
		}
		sortStrings(keys)
		k := pickOf(g, keys)
		next, ok := cur[k].(map[string]any)
		if !ok || g.chance(0.3) {
			cur[k] = val
			return
		}
		cur = next
	}
}

// --- guards ----------------------------------------------------------------

// finish sets what every request needs after its category built it: the
// stream flag, an Accept header sometimes, and, for a write anywhere but
// the scratch namespace, a guard that has it refused (or not stored) so
// that the known data cannot change whatever the daemon makes of the
// input.
func (g *hostileGen) finish(r *hostileReq) {
	if strings.Contains(r.target, "watch") {
		r.stream = true
	}
	if r.headerValue("Accept") == "" && g.chance(0.2) {
		r.setHeader("Accept", pickOf(g, []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/json;as=Table;g=meta.k8s.io;v=v1"}))
	}
	if r.headerValue("Accept-Encoding") == "" && g.chance(0.3) {
		r.setHeader("Accept-Encoding", "gzip") // as Go's transport asks
	}
	if r.rawBytes != nil {
		return // a request line no server can take for a write
	}
	if len(r.body) > 256<<10 {
		r.huge = true
	}
	if hostileNeedsRaw(r) {
		r.raw = true // net/http's client refuses control bytes in headers
	}
	if !r.mutating() {
		return
	}
	if r.scratch {
		r.guard = "scratch"
		return
	}
	ct := r.headerValue("Content-Type")
	jsonBody := ct == "" || ct == "application/json" ||
		(r.method == "PATCH" && (ct == "application/merge-patch+json" || ct == "application/strategic-merge-patch+json" || ct == "application/json-patch+json"))
	if jsonBody && len(bytes.TrimSpace(r.body)) > 0 && !json.Valid(r.body) && r.framing == "" && !r.chunked &&
		r.headerValue("Content-Encoding") == "" && headerCount(r, "Content-Type") <= 1 {
		r.guard = "malformed-json"
		return
	}
	named := hostileObjectName(r.target)
	switch g.pick(3) {
	case 0:
		var ops []json.RawMessage
		if r.method == "PATCH" && ct == "application/json-patch+json" && json.Unmarshal(r.body, &ops) == nil && ops != nil {
			ops = append(ops, json.RawMessage(`{"op":"test","path":"/metadata/uid","value":"`+hostileGuardUID+`"}`))
			r.body = mustMarshal(ops)
			r.guard = "failing-test-op"
			return
		}
	case 1:
		var m map[string]any
		if jsonBody && json.Unmarshal(r.body, &m) == nil && m != nil && named {
			switch r.method {
			case "PUT", "PATCH":
				meta, isMap := m["metadata"].(map[string]any)
				if _, has := m["metadata"]; !has {
					meta, isMap = map[string]any{}, true
					m["metadata"] = meta
				}
				if _, set := meta["resourceVersion"]; isMap && !set && ct != "application/json-patch+json" {
					meta["resourceVersion"] = "1"
					r.body = mustMarshal(m)
					r.guard = "stale-resourceVersion"
					return
				}
			case "DELETE":
				if _, has := m["preconditions"]; !has {
					m["preconditions"] = map[string]any{"uid": hostileGuardUID}
					r.body = mustMarshal(m)
					r.guard = "uid-precondition"
					return
				}
			}
		}
	}
	if strings.Contains(r.target, "?") {
		r.target += "&dryRun=All"
	} else {
		r.target += "?dryRun=All"
	}
	r.guard = "dryRun"
}

func headerCount(r *hostileReq, name string) int {
	n := 0
	for _, h := range r.header {
		if strings.EqualFold(h[0], name) {
			n++
		}
	}
	return n
}

// hostileObjectName reports whether target's last path segment names an
// object the generator uses (not a collection).
func hostileObjectName(target string) bool {
	p, _, _ := strings.Cut(target, "?")
	last := p[strings.LastIndex(p, "/")+1:]
	if strings.HasPrefix(last, "absent-") || strings.HasPrefix(last, "s-") || strings.HasPrefix(last, "slow-") {
		return true
	}
	for _, k := range hostileKinds {
		if slices.Contains(k.names, last) {
			return true
		}
	}
	return false
}
