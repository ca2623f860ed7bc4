package httpapi

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDecodeApplyPatch checks the JSON fast path against sigs.k8s.io/yaml,
// which kube-apiserver decodes apply patches with.
func TestDecodeApplyPatch(t *testing.T) {
	for _, body := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"1"}},"data":{"k":"v"}}`,
		` {"n":1,"f":1.5,"e":1e3,"big":12345678901234567890,"neg":-0,"t":true,"z":null,"l":[1,"a",{"b":[]}]}`,
		`{"s":"\u00e9\n\t\"q\" \/ é","dup":1,"dup":2}`,
		`{"empty":{},"list":[]}`,
		`{"surrogate":"\ud83d\ude00"}`,
		"{\n\t\"tab\": 1\n}",
		"{\"bad utf8\": \"\xff\"}",
		`{"` + strings.Repeat("k", 1100) + `":"long key","v":"` + strings.Repeat("v", 5000) + `"}`,
		`{"a":[{"` + strings.Repeat("k", 1030) + `":1}]}`,
		`{"k":"` + strings.Repeat("v", 5000) + `","` + strings.Repeat("k", 990) + `":1}`,
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		`{"unterminated":`,
		`[1,2]`,
		``,
		`null`,
	} {
		got := map[string]interface{}{}
		gotErr := decodeApplyPatch([]byte(body), &got)
		want := map[string]interface{}{}
		wantErr := yaml.Unmarshal([]byte(body), &want)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("decodeApplyPatch(%q) error = %v, want %v", body, gotErr, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodeApplyPatch(%q) = %#v, want %#v", body, got, want)
		}
	}
}

func TestWholeFloatsToInts(t *testing.T) {
	tests := []struct {
		in, want interface{}
	}{
		{float64(2), int64(2)},
		{float64(-3), int64(-3)},
		{2.5, 2.5},
		{1e300, 1e300},
		{"2", "2"},
		{map[string]interface{}{"a": float64(1), "b": []interface{}{float64(2), 0.5}}, map[string]interface{}{"a": int64(1), "b": []interface{}{int64(2), 0.5}}},
	}
	for _, tt := range tests {
		if got := wholeFloatsToInts(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("wholeFloatsToInts(%v) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}
