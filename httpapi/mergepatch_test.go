package httpapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// mergePatchDocs are documents, which the tests take in their
// encoding/json form as applyPatchKind gives them.
var mergePatchDocs = []string{
	`{"apiVersion":"v1","data":{"k":"v","n":"1"},"kind":"ConfigMap","metadata":{"creationTimestamp":null,"name":"a","namespace":"ns","labels":{"z":"1","a":"2"}}}`,
	`{"a":{"b":{"c":[1,{"d":null},"x"]}},"e":null,"f":"<&>","g":[],"h":{},"i":1.5e3,"j":true}`,
	`{"data":{"a\u003cb":"x","é":"y"},"s":"quote \" and \\ and \u2028"}`,
	`{}`,
}

// mergePatchPatches cover the library's cases: new keys, nulls (deleted,
// pruned from new objects at any depth, kept in arrays), objects merged,
// objects replaced by other values and the reverse, duplicate keys,
// whitespace and HTML characters to compact and escape, keys the fast
// path leaves to the library, and patches that are not objects.
var mergePatchPatches = []string{
	`{"data":{"n":"2"}}`,
	`{"data":{"k":null}}`,
	`{"data":null}`,
	`{"metadata":{"labels":{"a":null,"b":"3"},"annotations":{"x":"y","nul":null}}}`,
	`{"new":{"a":null,"b":{"c":null,"d":[null,{"e":null,"f":1}]}}}`,
	`{"e":{"x":null,"y":1}}`,
	`{"f":{"x":null}}`,
	`{"a":"replaced","g":{"x":1},"h":[1,null]}`,
	`{"a":{"b":{"c":{"now":"object","gone":null}}}}`,
	`{"a":{"b":[{"x":null}]}}`,
	`{"j":{"k":null}}`,
	"{ \"data\" : { \"n\" : \"<b> & </b>\" } ,\n\t\"x\" : [ 1 , 2 ] }",
	`{"dup":1,"dup":{"a":null,"b":2}}`,
	`{"data":{"a<b":"y"}}`,
	`{"data":{"a\u003cb":"z"}}`,
	`{"data":{"é":"z"}}`,
	`{"data":{"new":"\u2028 \u0000"}}`,
	`{"s":{"t":1}}`,
	`{}`,
	`[]`,
	`[{"a":null},null,1]`,
	`"string"`,
	`null`,
	`1`,
	`{"unterminated":`,
	``,
	`{"a":1} trailing`,
}

// TestMergePatch: mergePatch answers what json-patch v4's MergePatch
// answers, byte for byte, errors included.
func TestMergePatch(t *testing.T) {
	for _, doc := range mergePatchDocs {
		var v map[string]interface{}
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		canonical, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, patch := range mergePatchPatches {
			checkMergePatch(t, canonical, []byte(patch))
		}
	}
}

func checkMergePatch(t *testing.T, doc, patch []byte) {
	t.Helper()
	want, wantErr := jsonpatch.MergePatch(doc, patch)
	got, gotErr := mergePatch(doc, patch)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || string(got) != string(want) {
		t.Errorf("mergePatch(%s, %s) =\n%s, %v\nwant the library's\n%s, %v", doc, patch, got, gotErr, want, wantErr)
	}
}

// TestMergePatch_Random: the same on random documents and patches.
func TestMergePatch_Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		docValue := randomJSONObject(r, 3)
		doc, err := json.Marshal(docValue)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := json.Marshal(randomJSONObject(r, 3))
		if err != nil {
			t.Fatal(err)
		}
		checkMergePatch(t, doc, patch)
	}
}

// randomJSONObject is an object of a few members from a small set of
// keys, so that patches meet the document's keys.
func randomJSONObject(r *rand.Rand, depth int) map[string]interface{} {
	keys := []string{"a", "b", "c", "d", "<", "é"}
	m := map[string]interface{}{}
	for range r.IntN(4) {
		k := keys[r.IntN(len(keys)-2)]
		if r.IntN(20) == 0 {
			k = keys[len(keys)-2+r.IntN(2)]
		}
		m[k] = randomJSONValue(r, depth-1)
	}
	return m
}

func randomJSONValue(r *rand.Rand, depth int) interface{} {
	n := 5
	if depth > 0 {
		n = 7
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return "s&<" + fmt.Sprint(r.IntN(3))
	case 2:
		return r.IntN(3)
	case 3:
		return r.IntN(2) == 0
	case 4:
		return 1.5
	case 5:
		l := make([]interface{}, r.IntN(3))
		for i := range l {
			l[i] = randomJSONValue(r, depth-1)
		}
		return l
	}
	return randomJSONObject(r, depth-1)
}

// FuzzMergePatch: mergePatch answers what the library answers for any
// object document (in its encoding/json form) and any patch.
func FuzzMergePatch(f *testing.F) {
	for _, doc := range mergePatchDocs {
		for _, patch := range mergePatchPatches {
			f.Add([]byte(doc), []byte(patch))
		}
	}
	f.Fuzz(func(t *testing.T, docIn, patch []byte) {
		var v map[string]interface{}
		if json.Unmarshal(docIn, &v) != nil || v == nil {
			return
		}
		doc, err := json.Marshal(v)
		if err != nil {
			return
		}
		checkMergePatch(t, doc, patch)
	})
}

// TestFastMergePatch_Taken: the patches clients send (plain keys) take
// the fast path; keys with escapes or other than ASCII go to the library.
func TestFastMergePatch_Taken(t *testing.T) {
	doc := []byte(`{"apiVersion":"v1","data":{"k":"v","x\u003cy":"1"},"kind":"ConfigMap","metadata":{"labels":{"é":"1"},"name":"a"}}`)
	for _, tt := range []struct {
		patch string
		fast  bool
	}{
		{`{"metadata":{"name":"a"},"kind":"ConfigMap"}`, true},
		{`{"metadata":{"annotations":{"a":"b"}}}`, true},
		{`{"spec":{"replicas":3,"template":{"x":null}}}`, true},
		{`{"data":{"n":"2"}}`, false},
		{`{"metadata":{"labels":{"a":"2"}}}`, false},
		{`{"data\u0041":1}`, false},
		{`[]`, false},
	} {
		if _, fast := fastMergePatch(doc, []byte(tt.patch)); fast != tt.fast {
			t.Errorf("patch %s: fast path %v, want %v", tt.patch, fast, tt.fast)
		}
	}
}
