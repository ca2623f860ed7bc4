package httpapi

// Fuzz targets for the request path: each drives the real handler over a real
// SQLite store and checks properties of every answer, not only that nothing
// panicked:
//   - no answer is a 5xx;
//   - every non-2xx answer is a metav1.Status whose code is the HTTP status,
//     in the representation the response's Content-Type names;
//   - what is accepted round-trips (a created or patched object reads back
//     as answered);
//   - what is refused changes nothing stored.
//
// They run on their seeds in every `go test`; scripts/fuzz runs each one for
// a bounded time with the fuzzing engine.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// fuzzServer is a Server over a real SQLite file, with a namespace "fuzz"
// holding a sentinel ConfigMap "keep" and a patch target "target".
type fuzzServer struct {
	h http.Handler
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	return newFuzzServerWith(f, registry.Builtin(), []fuzzSeedRequest{
		{"POST", "/api/v1/namespaces/fuzz/configmaps", `{"metadata":{"name":"keep","labels":{"a":"b"}},"data":{"k":"v"}}`},
		{"POST", "/api/v1/namespaces/fuzz/configmaps", `{"metadata":{"name":"target"},"data":{"k":"v"}}`},
	})
}

// fuzzSeedRequest is a request a fuzz server's setup sends; it must answer
// 201.
type fuzzSeedRequest struct{ method, path, body string }

// newFuzzServerWith is a Server for reg over a real SQLite file, with a
// namespace "fuzz" and what the setup requests create.
func newFuzzServerWith(f *testing.F, reg *registry.Registry, setup []fuzzSeedRequest) *fuzzServer {
	f.Helper()
	dir := f.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		// fsync on tmpfs is cheap: many more executions per second.
		d, err := os.MkdirTemp("/dev/shm", "edgeapi-fuzz")
		if err == nil {
			dir = d
			f.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	db, err := store.Open(context.Background(), store.Config{Path: dir + "/fuzz.db"})
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(Config{Store: db, Registry: reg})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		_ = s.Close(context.Background())
		_ = db.Close()
	})
	fs := &fuzzServer{h: s.Handler()}
	for _, req := range append([]fuzzSeedRequest{{"POST", "/api/v1/namespaces", `{"metadata":{"name":"fuzz"}}`}}, setup...) {
		if rec := fs.do(req.method, req.path, "application/json", "", []byte(req.body)); rec.Code != http.StatusCreated {
			f.Fatalf("%s %s: %d %s", req.method, req.path, rec.Code, rec.Body)
		}
	}
	return fs
}

func (fs *fuzzServer) do(method, target, contentType, accept string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://edgeapi.test/", bytes.NewReader(body))
	// target is set by hand: httptest.NewRequest panics on what
	// net/http's server would answer with a 400 itself.
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil
	}
	req.URL, req.RequestURI = u, target
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	fs.h.ServeHTTP(rec, req)
	return rec
}

// get returns the body of a GET, which must succeed.
func (fs *fuzzServer) get(t *testing.T, path string) []byte {
	t.Helper()
	rec := fs.do("GET", path, "", "application/json", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// checkAnswer checks the properties every answer has: never a 5xx, and a
// non-2xx is a Status with the HTTP code in the representation its
// Content-Type names. A text/plain 404 is kube-apiserver's answer for paths
// outside any served group.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s: %d %.500s", what, rec.Code, rec.Body)
	}
	if rec.Code < 400 {
		return
	}
	ct := rec.Header().Get("Content-Type")
	var st metav1.Status
	switch {
	case strings.HasPrefix(ct, "text/plain") && rec.Code == http.StatusNotFound:
		return
	case ct == mediaJSON:
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%s: %d body %.300q is not a JSON Status: %v", what, rec.Code, rec.Body, err)
		}
	case ct == mediaYAML:
		if err := yaml.Unmarshal(rec.Body.Bytes(), &st); err != nil {
			t.Fatalf("%s: %d body %.300q is not a YAML Status: %v", what, rec.Code, rec.Body, err)
		}
	case ct == mediaProtobuf:
		obj, _, err := newCodecs().proto.Decode(rec.Body.Bytes(), nil, nil)
		p, ok := obj.(*metav1.Status)
		if err != nil || !ok {
			t.Fatalf("%s: %d body is not a Protobuf Status: %T %v", what, rec.Code, obj, err)
		}
		st = *p
	default:
		if rec.Code == http.StatusMethodNotAllowed && rec.Body.Len() == 0 {
			return // a HEAD
		}
		t.Fatalf("%s: %d with Content-Type %q: %.300q", what, rec.Code, ct, rec.Body)
	}
	if st.Kind != "Status" || int(st.Code) != rec.Code || st.Status != metav1.StatusFailure {
		t.Fatalf("%s: %d answered with Status kind %q code %d status %q", what, rec.Code, st.Kind, st.Code, st.Status)
	}
}

var fuzzContentTypes = []string{mediaJSON, mediaYAML, mediaProtobuf, "", "text/plain", "application/json; charset=utf-8"}

// FuzzServer_CreateBody posts any body, in any of the body encodings, as a
// ConfigMap. An accepted create reads back as answered.
func FuzzServer_CreateBody(f *testing.F) {
	fs := newFuzzServer(f)
	for _, seed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`,
		`{"metadata":{"generateName":"g-"},"binaryData":{"b":"AAEC"}}`,
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n",
		"a: &a [*a, *a]\nb: &b [*a, *a, *a]\n",
		`{"metadata":{"name":"x","finalizers":["a","a"],"labels":{"bad key!":"x"}}}`,
		`{"metadata":{"name":"x","resourceVersion":"5"}}`,
		`{"metadata":{"name":"x","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u","controller":true},{"apiVersion":"v1","kind":"ConfigMap","name":"p","uid":"v","controller":true}]}}`,
		`{"metadata":{"name":5}}`,
		`{"metadata":[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}`,
		"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret",
		"k8s\x00\xff\xff",
	} {
		for i := range fuzzContentTypes {
			f.Add([]byte(seed), uint8(i))
		}
	}
	keep := fs.get(&testing.T{}, "/api/v1/namespaces/fuzz/configmaps/keep")
	f.Fuzz(func(t *testing.T, body []byte, ct uint8) {
		contentType := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]
		rec := fs.do("POST", "/api/v1/namespaces/fuzz/configmaps", contentType, "application/json", body)
		checkAnswer(t, "POST", rec)
		if rec.Code == http.StatusCreated {
			var created metav1.PartialObjectMetadata
			if err := json.Unmarshal(rec.Body.Bytes(), &created); err != nil {
				t.Fatalf("created: %v", err)
			}
			path := "/api/v1/namespaces/fuzz/configmaps/" + created.Name
			if got := fs.get(t, path); !bytes.Equal(got, rec.Body.Bytes()) {
				t.Fatalf("created object reads back differently:\nanswer %s\nGET    %s", rec.Body, got)
			}
			checkAnswer(t, "DELETE", fs.do("DELETE", path, "", "", nil))
		}
		if got := fs.get(t, "/api/v1/namespaces/fuzz/configmaps/keep"); !bytes.Equal(got, keep) {
			t.Fatalf("a create changed another object:\nbefore %s\nafter  %s", keep, got)
		}
	})
}

var fuzzPatchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

// FuzzServer_Patch sends any patch of the four types to a stored object. An
// accepted patch's answer is what a GET reads afterwards; a refused one
// changes nothing.
func FuzzServer_Patch(f *testing.F) {
	fs := newFuzzServer(f)
	for _, seed := range []struct {
		pt    uint8
		patch string
	}{
		{0, `[{"op":"add","path":"/data/x","value":"y"}]`},
		{0, `[{"op":"test","path":"/data/k","value":"nope"}]`},
		{0, `[{"op":"copy","from":"/data","path":"/metadata/labels"}]`},
		{0, `[{"op":"add","path":"/metadata/finalizers","value":["a","a","a"]}]`},
		{0, `[{"op":"move","from":"/metadata","path":"/metadata/x"}]`},
		{1, `{"data":{"k":null,"n":"1"}}`},
		{1, `{"metadata":{"uid":"other"}}`},
		{2, `{"data":{"$patch":"replace","z":"1"}}`},
		{2, `{"metadata":{"$setElementOrder/finalizers":["a"],"finalizers":["a"]}}`},
		{2, `{"$patch":"delete"}`},
		{3, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\ndata:\n  a: b\n"},
		{3, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"},
		{3, "a: &a [*a, *a]\n"},
	} {
		f.Add([]byte(seed.patch), seed.pt, false)
		f.Add([]byte(seed.patch), seed.pt, true)
	}
	const target = "/api/v1/namespaces/fuzz/configmaps/target"
	f.Fuzz(func(t *testing.T, patch []byte, pt uint8, force bool) {
		contentType := fuzzPatchTypes[int(pt)%len(fuzzPatchTypes)]
		path := target + "?fieldManager=fuzz"
		if force {
			path += "&force=true"
		}
		before := fs.get(t, target)
		rec := fs.do("PATCH", path, contentType, "application/json", patch)
		checkAnswer(t, "PATCH "+contentType, rec)
		after := fs.get(t, target)
		switch {
		case rec.Code == http.StatusOK || rec.Code == http.StatusCreated:
			if !bytes.Equal(after, rec.Body.Bytes()) {
				t.Fatalf("patched object reads back differently:\nanswer %s\nGET    %s", rec.Body, after)
			}
		case !bytes.Equal(before, after):
			t.Fatalf("a refused patch (%d %s) changed the object:\nbefore %s\nafter  %s", rec.Code, rec.Body, before, after)
		}
	})
}

// FuzzServer_ListQuery sends any query to a list: label and field
// selectors, limit and continue, resourceVersion and resourceVersionMatch,
// and whatever else. A 200 is a ConfigMapList.
func FuzzServer_ListQuery(f *testing.F) {
	fs := newFuzzServer(f)
	for _, seed := range []string{
		"labelSelector=a%3Db", "labelSelector=a+in+(b,c),!d", "labelSelector=a%3D%3D%3Db", "labelSelector=" + strings.Repeat("a,", 100),
		"fieldSelector=metadata.name%3Dkeep", "fieldSelector=metadata.name", "fieldSelector=data.k%3Dv",
		"limit=1", "limit=-1", "limit=abc", "limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJmdXp6L2tlZXBcdTAwMDAifQ",
		"continue=garbage", "continue=e30",
		"resourceVersion=0", "resourceVersion=1&resourceVersionMatch=Exact", "resourceVersion=abc", "resourceVersionMatch=NotOlderThan",
		"resourceVersion=4&resourceVersionMatch=Exact", "sendInitialEvents=true", "timeoutSeconds=-1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		// A watch would wait for events; watches are not this target's.
		q.Del("watch")
		// A resourceVersion ahead of the store waits 3 s for it, then is
		// kube-apiserver's 504: keep them at or below the store's (5).
		if rv, err := strconv.ParseUint(q.Get("resourceVersion"), 10, 64); err == nil && rv > 5 {
			q.Set("resourceVersion", "5")
		}
		rec := fs.do("GET", "/api/v1/namespaces/fuzz/configmaps?"+q.Encode(), "", "application/json", nil)
		checkAnswer(t, "GET ?"+q.Encode(), rec)
		if rec.Code == http.StatusOK {
			var l struct {
				Kind  string            `json:"kind"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || l.Kind != "ConfigMapList" {
				t.Fatalf("200 is not a ConfigMapList (%v): %.300s", err, rec.Body)
			}
		}
	})
}

// FuzzServer_Request sends any method, path, headers and body. Whatever
// the request, the known objects are unchanged unless it succeeded.
func FuzzServer_Request(f *testing.F) {
	fs := newFuzzServer(f)
	for _, seed := range []struct{ method, path, ct, accept, body string }{
		{"GET", "/api/v1/namespaces/fuzz/configmaps/keep", "", "application/yaml", ""},
		{"GET", "/api/v1/namespaces/fuzz/configmaps/keep", "", "application/json;as=Table;v=v1;g=meta.k8s.io", ""},
		{"GET", "/api/v1/namespaces/fuzz/configmaps", "", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", ""},
		{"GET", "/api/v1/namespaces/fuzz/configmaps?includeObject=Bogus", "", "application/json;as=Table;v=v1;g=meta.k8s.io", ""},
		{"GET", "/api/v1/namespaces/fuzz/configmaps/keep", "", "application/vnd.kubernetes.protobuf", ""},
		{"GET", "/api/v1/namespaces/fuzz/configmaps/missing", "", "application/vnd.kubernetes.protobuf, application/json", ""},
		{"DELETE", "/api/v1/configmaps", "", "", ""},
		{"DELETE", "/api/v1/namespaces//configmaps", "", "", ""},
		{"DELETE", "/api/v1/namespaces/fuzz/configmaps/keep", "application/json", "", `{"kind":"ConfigMap","apiVersion":"v1"}`},
		{"PUT", "/api/v1/namespaces/fuzz/configmaps/keep", "application/json", "", `{"metadata":{"name":"keep","uid":"x"}}`},
		{"TRACE", "/version", "", "", ""},
		{"HEAD", "/api/v1/namespaces/fuzz/configmaps", "", "", ""},
		{"GET", "/apis/nope.example.com/v1/things", "", "", ""},
		{"GET", "/api/v1/namespaces/fuzz/configmaps/%2e%2e", "", "", ""},
		{"POST", "/api/v1/namespaces/fuzz/configmaps/keep/status", "application/json", "", `{}`},
		{"GET", "/openapi/v3/api/v1", "", "", ""},
		{"GET", "/version/", "", "application/xml", ""},
	} {
		f.Add(seed.method, seed.path, seed.ct, seed.accept, []byte(seed.body))
	}
	keep := fs.get(&testing.T{}, "/api/v1/namespaces/fuzz/configmaps/keep")
	f.Fuzz(func(t *testing.T, method, path, contentType, accept string, body []byte) {
		if !validMethod(method) || !strings.HasPrefix(path, "/") || strings.Contains(path, "watch") {
			return // net/http refuses these itself; watches wait for events
		}
		rec := fs.do(method, path, contentType, accept, body)
		if rec == nil {
			return
		}
		checkAnswer(t, method+" "+path, rec)
		if rec.Code >= 300 {
			if got := fs.get(t, "/api/v1/namespaces/fuzz/configmaps/keep"); !bytes.Equal(got, keep) {
				t.Fatalf("a refused request (%d) changed an object:\nbefore %s\nafter  %s", rec.Code, keep, got)
			}
		}
		// Put back what a successful request changed.
		if got := fs.get(t, "/api/v1/namespaces/fuzz/configmaps/keep"); !bytes.Equal(got, keep) {
			checkAnswer(t, "restore", fs.do("DELETE", "/api/v1/namespaces/fuzz/configmaps/keep", "", "", nil))
			rec := fs.do("POST", "/api/v1/namespaces/fuzz/configmaps", mediaJSON, "", []byte(`{"metadata":{"name":"keep","labels":{"a":"b"}},"data":{"k":"v"}}`))
			if rec.Code != http.StatusCreated {
				t.Skipf("cannot restore the sentinel: %d %s", rec.Code, rec.Body)
			}
			keep = rec.Body.Bytes()
		}
	})
}

// validMethod reports whether m is an HTTP token, as net/http requires of a
// method before a handler sees it.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) {
			return false
		}
	}
	return true
}

// FuzzDecodeContinue checks that any continue token decodes without a panic
// and that a token that decodes re-encodes to one that decodes the same.
func FuzzDecodeContinue(f *testing.F) {
	f.Add(encodeContinue(5, "ns", "name"))
	f.Add(encodeContinue(-1, "", ""))
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiIifQ")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, tok string) {
		rev, ns, name, err := decodeContinue(tok)
		if err != nil {
			return
		}
		rev2, ns2, name2, err := decodeContinue(encodeContinue(rev, ns, name))
		if err != nil || rev2 != rev || ns2 != ns || name2 != name {
			t.Fatalf("token %q: decoded (%d %q %q), re-encoded and decoded (%d %q %q, %v)", tok, rev, ns, name, rev2, ns2, name2, err)
		}
	})
}

// FuzzNegotiateOutput checks content negotiation on any Accept header: no
// panic, and a Status is always in an encoding that can carry one.
func FuzzNegotiateOutput(f *testing.F) {
	for _, seed := range []string{
		"application/json", "application/yaml;q=0.5, application/vnd.kubernetes.protobuf",
		"application/json;as=Table;v=v1;g=meta.k8s.io, application/json", "*/*;q=0", "text/html,application/xml;q=0.9,*/*;q=0.8",
		"application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io", ";;;,,,=", "application/json;q=NaN",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		rep, ok := negotiateOutput(accept)
		if !ok && rep != (representation{}) {
			t.Fatalf("%q: refused with a representation %+v", accept, rep)
		}
		switch enc := negotiateStatus(accept); enc {
		case encJSON, encYAML, encProtobuf:
		default:
			t.Fatalf("%q: Status encoding %d", accept, enc)
		}
	})
}

// FuzzParseRequestInfo checks request-path parsing on any method and path:
// no panic, and what parses names its parts without slashes.
func FuzzParseRequestInfo(f *testing.F) {
	for _, seed := range []string{
		"/api/v1/namespaces/a/configmaps/b", "/apis/coordination.k8s.io/v1/watch/namespaces/a/leases", "/api/v1/namespaces//configmaps",
		"/api/v1/namespaces/a/finalize", "/api", "/apis/x", "//api//v1//", "/api/v1/namespaces/a/configmaps/b/c/d",
	} {
		f.Add("GET", seed, false)
		f.Add("DELETE", seed, true)
	}
	f.Fuzz(func(t *testing.T, method, path string, watch bool) {
		ri, ok := parseRequestInfo(method, path, watch)
		if !ok {
			return
		}
		for _, part := range []string{ri.Group, ri.Version, ri.Namespace, ri.Resource, ri.Name, ri.Subresource} {
			if strings.Contains(part, "/") {
				t.Fatalf("%s %q: a part with a slash: %+v", method, path, ri)
			}
		}
		if ri.Parts > 0 && ri.Verb == "" {
			t.Fatalf("%s %q: no verb: %+v", method, path, ri)
		}
	})
}
