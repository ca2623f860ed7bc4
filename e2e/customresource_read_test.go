package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCustomResource_ReadsAcrossSchemaChanges: objects written under
// three successive schemas of one kind read, through GET, LIST and WATCH
// (of the storage version, and of a second version the last adds),
// with the defaults of the schema served now and without the fields it
// dropped, whether they were written before or after each change, before
// and after a restart. Every answer is the same bytes for the same object
// (GET, LIST item, WATCH event) and is spelled as encoding the decoded
// object spells it (sorted keys, no white space), as kube-apiserver's are.
func TestCustomResource_ReadsAcrossSchemaChanges(t *testing.T) {
	dir := t.TempDir()
	schema := func(n int, props, versions string) string {
		path := filepath.Join(dir, fmt.Sprintf("crd-%d.yaml", n))
		doc := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.reads.example.org}
spec:
  group: reads.example.org
  scope: Namespaced
  names: {plural: gizmos, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
` + props + versions
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	s1 := schema(1, "              size: {type: integer, default: 1}\n              old: {type: string}\n", "")
	s2 := schema(2, "              size: {type: integer, default: 1}\n              color: {type: string, default: blue}\n", "")
	// s3 also serves v1beta1, read from the same stored objects.
	s3 := schema(3, "              size: {type: integer, default: 2}\n              color: {type: string, default: red}\n              shape: {type: string, default: round}\n",
		"  - name: v1beta1\n    served: true\n    storage: false\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n")

	const crd = "gizmos.reads.example.org"
	base := "/apis/reads.example.org/v1/namespaces/cr-reads/gizmos"
	dataDir := t.TempDir()
	d := StartDaemon(t, DaemonOptions{DataDir: dataDir})
	// restart restarts the daemon and waits until the kind is served
	// again (the CRD controller serves it shortly after start).
	restart := func(first, spec string) {
		t.Helper()
		if err := d.Stop(); err != nil {
			t.Fatal(err)
		}
		d = StartDaemon(t, DaemonOptions{DataDir: dataDir})
		waitForSpec(t, d, base+"/"+first, spec)
	}
	create := func(name, spec string) {
		t.Helper()
		res := doRaw(t, d, "POST", base, "application/json", "",
			[]byte(`{"apiVersion":"reads.example.org/v1","kind":"Gizmo","metadata":{"name":"`+name+`"},"spec":`+spec+`}`))
		if res.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, res.Status, res.Body)
		}
	}

	applyCRDs(t, d, s1, crd)
	createNamespace(t, d.Clientset(), "cr-reads")
	create("a", `{"old":"x"}`)
	wantReads(t, d, base, map[string]string{"a": `{"old":"x","size":1}`})

	d.MustKubectl("apply", "-f", s2)
	waitForSpec(t, d, base+"/a", `{"color":"blue","size":1}`)
	create("b", `{}`)
	want := map[string]string{
		"a": `{"color":"blue","size":1}`, // written before: defaulted and pruned on read
		"b": `{"color":"blue","size":1}`,
	}
	wantReads(t, d, base, want)
	restart("b", want["b"])
	wantReads(t, d, base, want)

	d.MustKubectl("apply", "-f", s3)
	waitForSpec(t, d, base+"/a", `{"color":"red","shape":"round","size":1}`)
	create("c", `{}`)
	want = map[string]string{
		"a": `{"color":"red","shape":"round","size":1}`,
		"b": `{"color":"blue","shape":"round","size":1}`, // blue was stored
		"c": `{"color":"red","shape":"round","size":2}`,
	}
	beta := strings.Replace(base, "/v1/", "/v1beta1/", 1)
	wantReads(t, d, base, want)
	wantReads(t, d, beta, want)
	restart("c", want["c"])
	wantReads(t, d, beta, want)
	wantReads(t, d, base, want)
}

// waitForSpec polls GET path until the object's spec is spec: the CRD
// controller serves a changed schema shortly after the CRD is updated.
func waitForSpec(t *testing.T, d *Daemon, path, spec string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := rawGet(t, d, path)
		if res.Status == http.StatusOK && strings.Contains(string(res.Body), `"spec":`+spec+`}`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %s; want spec %s once the schema changed", path, res.Status, res.Body, spec)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantReads checks that the objects under base are exactly want (name to
// spec JSON), that GET, the LIST's items and a WATCH's initial events give
// the same bytes for each, and that those bytes are what encoding the
// decoded object gives.
func wantReads(t *testing.T, d *Daemon, base string, want map[string]string) {
	t.Helper()
	got := map[string][]byte{}
	for name, spec := range want {
		res := rawGet(t, d, base+"/"+name)
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", name, res.Status, res.Body)
		}
		if !strings.Contains(string(res.Body), `"spec":`+spec+`}`) {
			t.Errorf("GET %s = %s; want spec %s", name, res.Body, spec)
		}
		wantCanonical(t, "GET "+name, res.Body)
		got[name] = res.Body
	}

	res := rawGet(t, d, base)
	if res.Status != http.StatusOK {
		t.Fatalf("LIST: %d %s", res.Status, res.Body)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(res.Body, &list); err != nil {
		t.Fatalf("LIST: %v: %s", err, res.Body)
	}
	if len(list.Items) != len(want) {
		t.Errorf("LIST has %d items, want %d: %s", len(list.Items), len(want), res.Body)
	}
	for _, item := range list.Items {
		name := objectName(t, item)
		if !bytes.Equal(item, got[name]) {
			t.Errorf("LIST item %s =\n%s\nGET gave\n%s", name, item, got[name])
		}
	}

	w := openRawWatch(t, d, base+"?watch=1&resourceVersion=0")
	defer w.cancel()
	for range want {
		ev := w.MustNext()
		name := objectName(t, ev.Object)
		if ev.Type != "ADDED" || !bytes.Equal(ev.Object, got[name]) {
			t.Errorf("WATCH event %s %s =\n%s\nGET gave\n%s", ev.Type, name, ev.Object, got[name])
		}
	}
}

func objectName(t *testing.T, obj []byte) string {
	t.Helper()
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("decode %s: %v", obj, err)
	}
	return m.Metadata.Name
}

// wantCanonical checks that body is what encoding/json writes for its
// own decoding: map keys sorted, no white space.
func wantCanonical(t *testing.T, what string, body []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v interface{}
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, body) {
		t.Errorf("%s =\n%s\nwant it as encoding writes it\n%s", what, body, again)
	}
}
