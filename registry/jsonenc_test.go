package registry

import (
	"encoding/json"
	"math"
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"
)

// jsonEncCases are values whose encodings differ in the details:
// escapes, invalid UTF-8, float forms, nil maps and lists.
func jsonEncCases() []interface{} {
	return []interface{}{
		nil, "", "plain", "<a href=\"x\">&amp;</a>", "tab\tnl\nbs\\ bell\a del\x7f nul\x00 \b\f\r",
		"é ü 世界 😀", "bad \xff\xfe utf8 \xe2\x82", "line\u2028para\u2029", "\u2027\u202a",
		true, false, int64(0), int64(-1), int64(math.MaxInt64), int64(math.MinInt64),
		0.0, -0.0, 1.5, -2.25, 1e20, 1e21, 123456789012345678901234.0, 1e-6, 9.99e-7, 1e-7, 5e-324, math.MaxFloat64, -1e-10, 0.1, 100.0,
		map[string]interface{}(nil), []interface{}(nil), map[string]interface{}{}, []interface{}{},
		map[string]interface{}{"b": int64(1), "a": []interface{}{nil, "x", map[string]interface{}{"<": ">", "": 1.0}}, "é": true, "\xff": "k"},
	}
}

// TestAppendJSON: appendJSON writes what encoding/json.Marshal writes,
// for the values JSON decoding gives.
func TestAppendJSON(t *testing.T) {
	check := func(v interface{}) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendJSON(nil, v)
		if !ok || string(got) != string(want) {
			t.Errorf("appendJSON(%#v) = %s, %v; want %s", v, got, ok, want)
		}
	}
	for _, v := range jsonEncCases() {
		check(v)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			check(f)
		}
		b := make([]byte, rng.Intn(12))
		rng.Read(b)
		check(string(b))
	}
	if _, ok := appendJSON(nil, math.Inf(1)); ok {
		t.Errorf("appendJSON(+Inf) reported ok")
	}
	if _, ok := appendJSON(nil, map[string]interface{}{"a": 1}); ok {
		t.Errorf("appendJSON of an int (not int64) reported ok")
	}
}

// TestKind_EncodeStorage_Unstructured: a custom resource is stored as
// encoding/json writes it, without kind, apiVersion and
// metadata.resourceVersion.
func TestKind_EncodeStorage_Unstructured(t *testing.T) {
	for _, js := range []string{
		`{"apiVersion":"a/v1","kind":"K","metadata":{"name":"n","resourceVersion":"5","labels":{"z":"<"}},"spec":{"x":[1,2.5,"s",null,{"q":true}]},"aaa":1,"zzz":{}}`,
		`{"apiVersion":"a/v1","kind":"K","metadata":{"name":"n"}}`,
		`{"metadata":null,"spec":"\u2028"}`,
		`{"metadata":"odd","spec":1e300}`,
	} {
		var m map[string]interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		want := map[string]interface{}{}
		for k, v := range m {
			if k != "kind" && k != "apiVersion" {
				want[k] = v
			}
		}
		if md, ok := m["metadata"].(map[string]interface{}); ok {
			c := map[string]interface{}{}
			for k, v := range md {
				if k != "resourceVersion" {
					c[k] = v
				}
			}
			want["metadata"] = c
		}
		wantJSON, _ := json.Marshal(want)
		got, err := encodeStoredUnstructured(&unstructured.Unstructured{Object: m})
		if err != nil || string(got) != string(wantJSON) {
			t.Errorf("encodeStoredUnstructured(%s) = %s, %v; want %s", js, got, err, wantJSON)
		}
	}
}

// FuzzAppendJSON: for any JSON document, appendJSON of its decoded form
// (as custom resources decode) is what encoding/json.Marshal writes.
func FuzzAppendJSON(f *testing.F) {
	for _, v := range jsonEncCases() {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte(`{"a":"\ud800","b":1.0,"c":-0,"d":1E400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
			return
		}
		want, err := json.Marshal(v)
		got, ok := appendJSON(nil, v)
		if err != nil {
			if ok {
				t.Fatalf("appendJSON(%s) = %s; encoding/json fails: %v", data, got, err)
			}
			return
		}
		if !ok || string(got) != string(want) {
			t.Fatalf("appendJSON(%s) = %s, %v; want %s", data, got, ok, want)
		}
	})
}
