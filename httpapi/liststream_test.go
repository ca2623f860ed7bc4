package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/edgeapi/edgeapi/registry"
)

// TestServer_ListStreamed serves the same store through a server that
// builds every list in memory and one that streams any list of more than
// a byte, and checks that each list answers the same bytes in JSON, YAML
// and Protobuf: all namespaces, one namespace, limits with continue tokens
// and remaining counts, selectors, past revisions, Tables and metadata
// lists, and an events.k8s.io kind whose stored objects are converted.
func TestServer_ListStreamed(t *testing.T) {
	db := openTestStore(t)
	serve := func(cfg Config) *httptest.Server {
		cfg.Store, cfg.Registry = db, registry.Builtin()
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(func() {
			ts.Close()
			_ = s.Close(context.Background())
		})
		return ts
	}
	buffered := serve(Config{ListBufferBytes: 1 << 30})
	// A streamed Protobuf list keeps the items it encodes up to the list
	// buffer and encodes the rest again: none but the first at 1 byte,
	// some at the others, every one when the Protobuf is that much
	// smaller than the stored JSON.
	var streamedAt []*httptest.Server
	bounds := []int{1, 3000, 9000, 30000}
	for _, n := range bounds {
		streamedAt = append(streamedAt, serve(Config{ListBufferBytes: n}))
	}

	do := func(ts *httptest.Server, method, path, accept, body string) (int, string, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: read body: %v", method, path, err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), b
	}
	create := func(path, body string) {
		t.Helper()
		if code, _, b := do(buffered, "POST", path, "", body); code != http.StatusCreated {
			t.Fatalf("POST %s = %d %s", path, code, b)
		}
	}
	for _, ns := range []string{"a", "b"} {
		create("/api/v1/namespaces", fmt.Sprintf(`{"metadata":{"name":%q}}`, ns))
		for i := range 6 {
			create("/api/v1/namespaces/"+ns+"/configmaps", fmt.Sprintf(
				`{"metadata":{"name":"cm%d","labels":{"even":"%v"}},"data":{"k":%q,"long":%q}}`,
				i, i%2 == 0, strings.Repeat("x", i*300), strings.Repeat("folded words ", i*20)))
			create("/api/v1/namespaces/"+ns+"/events", fmt.Sprintf(
				`{"metadata":{"name":"ev%d"},"involvedObject":{"kind":"ConfigMap","name":"cm%d","namespace":%q},"reason":"R","message":"m %d","type":"Normal"}`,
				i, i, ns, i))
		}
	}
	_, _, b := do(buffered, "GET", "/api/v1/configmaps", "", "")
	past := mustListRV(t, b)
	create("/api/v1/namespaces/a/configmaps", `{"metadata":{"name":"late"}}`)
	_, _, b = do(buffered, "GET", "/api/v1/namespaces/a/configmaps?limit=2", "", "")
	cont := mustContinue(t, b)

	paths := []string{
		"/api/v1/configmaps",
		"/api/v1/namespaces/a/configmaps",
		"/api/v1/configmaps?limit=5",
		"/api/v1/configmaps?limit=13",
		"/api/v1/configmaps?limit=50",
		"/api/v1/configmaps?limit=3&labelSelector=even%3Dtrue",
		"/api/v1/configmaps?labelSelector=even%3Dtrue",
		"/api/v1/namespaces/a/configmaps?limit=2&continue=" + cont,
		"/api/v1/configmaps?resourceVersion=" + past + "&resourceVersionMatch=Exact",
		"/api/v1/configmaps?resourceVersion=" + past + "&resourceVersionMatch=Exact&limit=4",
		"/api/v1/namespaces/b/events",
		"/apis/events.k8s.io/v1/events?limit=7",
		"/api/v1/namespaces/empty/configmaps",
	}
	accepts := []string{
		"",
		"application/yaml",
		"application/vnd.kubernetes.protobuf",
		"application/json;as=Table;v=v1;g=meta.k8s.io",
		"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	}
	before := listsStreamed.Load()
	for _, path := range paths {
		for _, accept := range accepts {
			wantCode, wantType, want := do(buffered, "GET", path, accept, "")
			for i, streamed := range streamedAt {
				if i > 0 && !strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf") {
					continue
				}
				gotCode, gotType, got := do(streamed, "GET", path, accept, "")
				if strings.Contains(accept, "as=Table") {
					// The Age cell moves on when a second passes between
					// the two requests (under qemu, often).
					want, got = tableAge.ReplaceAll(want, []byte(`"AGE"]`)), tableAge.ReplaceAll(got, []byte(`"AGE"]`))
				}
				if gotCode != wantCode || gotType != wantType || !bytes.Equal(got, want) {
					t.Errorf("GET %s (Accept %q), streamed at %d bytes:\n%d %s %q\nbuffered:\n%d %s %q", path, accept, bounds[i], gotCode, gotType, got, wantCode, wantType, want)
				}
			}
			if wantCode != http.StatusOK {
				t.Errorf("GET %s (Accept %q) = %d %s", path, accept, wantCode, want)
			}
			if accept == "application/vnd.kubernetes.protobuf" {
				// Both are written by the transcoder: the typed list,
				// decoded from the JSON list and encoded by the
				// runtime's serializer, is the reference.
				_, _, js := do(buffered, "GET", path, "", "")
				if ref := typedProtoList(t, js); !bytes.Equal(want, ref) {
					t.Errorf("GET %s (Accept %q):\n%q\ntyped list:\n%q", path, accept, want, ref)
				}
			}
		}
	}
	// Every list but the empty one was streamed at 1 byte.
	if got, want := listsStreamed.Load()-before, int64((len(paths)-1)*len(accepts)); got < want {
		t.Errorf("lists streamed = %d, want at least %d", got, want)
	}
}

// typedProtoList decodes a JSON list into its typed list and returns the
// runtime's Protobuf of it, as kube-apiserver writes it.
func typedProtoList(t *testing.T, js []byte) []byte {
	t.Helper()
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		t.Fatalf("list %s: %v", js, err)
	}
	list, err := registry.Scheme.New(tm.GroupVersionKind())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, list); err != nil {
		t.Fatal(err)
	}
	list.GetObjectKind().SetGroupVersionKind(tm.GroupVersionKind())
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(registry.Scheme, registry.Scheme).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustListRV(t *testing.T, body []byte) string {
	t.Helper()
	var l struct {
		Metadata struct{ ResourceVersion string }
	}
	if err := json.Unmarshal(body, &l); err != nil || l.Metadata.ResourceVersion == "" {
		t.Fatalf("list %s: no resourceVersion (%v)", body, err)
	}
	return l.Metadata.ResourceVersion
}

func mustContinue(t *testing.T, body []byte) string {
	t.Helper()
	var l struct {
		Metadata struct{ Continue string }
	}
	if err := json.Unmarshal(body, &l); err != nil || l.Metadata.Continue == "" {
		t.Fatalf("list %s: no continue token (%v)", body, err)
	}
	return l.Metadata.Continue
}

// tableAge is a Table row's last cell, the Age column, in JSON.
var tableAge = regexp.MustCompile(`"(?:[0-9]+[smhdy])+"\]`)
