package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestArrayLenAt(t *testing.T) {
	var doc interface{}
	if err := json.Unmarshal([]byte(`{"a":{"l":[1,2,3],"m~/k":[[1,2]]},"n":{"0":1}}`), &doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p    string
		want int64
	}{
		{"/a/l/0", 3},
		{"/a/l/4294967296", 3}, // an index past a 32-bit int is an index on armv7 too
		{"/a/l/-", 0},
		{"/a/l", 0},
		{"/a/m~0~1k/0/1", 2},
		{"/n/0", 0},
		{"/missing/0", 99},
		{"/a/l/0/0", 99},
		{"", 0},
	}
	for _, tt := range tests {
		if got := arrayLenAt(doc, tt.p, 99); got != tt.want {
			t.Errorf("arrayLenAt(%q) = %d, want %d", tt.p, got, tt.want)
		}
	}
}

func TestCheckJSONPatchCost(t *testing.T) {
	list := make([]int, 100000)
	cur, _ := json.Marshal(map[string]interface{}{"l": list})
	patchOf := func(n int, path string) ([]byte, jsonpatch.Patch) {
		ops := make([]map[string]interface{}, n)
		for i := range ops {
			ops[i] = map[string]interface{}{"op": "add", "path": path, "value": 1}
		}
		b, _ := json.Marshal(ops)
		p, err := jsonpatch.DecodePatch(b)
		if err != nil {
			t.Fatal(err)
		}
		return b, p
	}
	tests := []struct {
		n       int
		path    string
		refused bool
	}{
		{64, "/l/0", false},    // not checked
		{400, "/l/0", false},   // 40 million
		{1000, "/l/0", true},   // 100 million
		{10000, "/l/-", false}, // appends
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n, tt.path), func(t *testing.T) {
			b, ops := patchOf(tt.n, tt.path)
			if got := checkJSONPatchCost(ops, cur, b) != nil; got != tt.refused {
				t.Errorf("got refused %v, want %v", got, tt.refused)
			}
		})
	}
}

func TestCheckMergePatchCost(t *testing.T) {
	deep := func(depth int) []byte {
		return []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	}
	wide := `{"data":{` + strings.TrimSuffix(strings.Repeat(`"k":"`+strings.Repeat("v", 100)+`",`, 25000), ",") + `}}`
	tests := []struct {
		name  string
		patch []byte
		want  bool // refused
	}{
		{"small", []byte(`{"metadata":{"labels":{"a":null}}}`), false},
		{"3 MB wide", []byte(wide), false},
		{"10,000 deep", deep(10000), true},
		{"braces in strings", []byte(`{"a":"` + strings.Repeat("{[", 1<<20) + `"}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMergePatchCost(tt.patch)
			if got := err != nil; got != tt.want {
				t.Fatalf("got refused %v (%v), want %v", got, err, tt.want)
			}
			if err != nil && !apierrors.IsRequestEntityTooLargeError(err) {
				t.Errorf("got %v, want a 413", err)
			}
		})
	}
}
