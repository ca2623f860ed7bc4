package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
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
