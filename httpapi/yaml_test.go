package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"
)

func TestCheckYAMLExpansion(t *testing.T) {
	const limit = 1 << 20
	aliases := func(anchor, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "x: &a %q\ndata:\n", strings.Repeat("x", anchor))
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  k%d: *a\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name string
		body string
		want bool // refused
	}{
		{"no alias", "a: b\nc: [1, 2]\n", false},
		{"star in a string", "a: \"*.example.com\"\n", false},
		{"aliases within the limit", aliases(1000, 100), false},
		{"aliases of a large string", aliases(64<<10, 20), true},
		{"aliases of a large map", "x: &a {k: v, s: " + strings.Repeat("s", 100<<10) + "}\ny: [" + strings.Repeat("*a, ", 20) + "*a]\n", true},
		{"merge keys", "x: &a {k: " + strings.Repeat("v", 600<<10) + "}\ny: {<<: *a}\nz: {<<: *a}\n", true},
		{"not YAML", "a: *nothing\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkYAMLExpansion([]byte(tt.body), limit)
			if got := err != nil; got != tt.want {
				t.Fatalf("got refused %v (%v), want %v", got, err, tt.want)
			}
			if err != nil && !apierrors.IsRequestEntityTooLargeError(err) {
				t.Errorf("got %v, want a 413", err)
			}
			if err == nil {
				// What is let through converts to JSON within the limit
				// (or fails to convert).
				if js, err := yaml.YAMLToJSON([]byte(tt.body)); err == nil && len(js) > limit {
					t.Errorf("let through a body that expands to %d bytes", len(js))
				}
			}
		})
	}
}

func TestJSONToYAML(t *testing.T) {
	long := strings.Repeat("f:x", 700) // past YAML's 1,024-character simple keys
	tests := []struct {
		name string
		json string
		// sigsFails: sigs.k8s.io/yaml.JSONToYAML alone fails on it.
		sigsFails bool
	}{
		{"object", `{"kind":"ConfigMap","data":{"a":"b","n":"1"},"list":[1,2.5,true,null]}`, false},
		{"numbers", `{"i":-0,"big":12345678901234567890,"neg":-9223372036854775808,"f":1e21,"g":0.000001,"h":1.0,"k":[1e-7,123456789.5]}`, false},
		{"strings YAML reads as other types", `{"a":"true","b":"null","c":"1","d":"1.5","e":"~","f":"","g":"yes","h":"0x10","i":"- x","j":"a: b","k":"#c","l":"multi\nline\n","m":" lead","n":"\u00e9\t","o":"*a","p":"&a","q":"2024-01-01T00:00:00Z"}`, false},
		{"nesting", `{"items":[{"metadata":{"name":"a","labels":{"x":"y"}},"data":{}},{"metadata":{"finalizers":["a/b","c/d"]},"list":[[],[1,[2]],{}]}],"empty":[],"obj":{}}`, false},
		{"long key", `{"metadata":{"managedFields":[{"fieldsV1":{"` + long + `":{}}}]},"n":12345678901234567890}`, true},
		{"long key in a list", `{"items":[{"` + long + `":"v"}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y, err := jsonToYAML([]byte(tt.json))
			if err != nil {
				t.Fatalf("jsonToYAML: %v", err)
			}
			want, err := yaml.JSONToYAML([]byte(tt.json))
			if got := err != nil; got != tt.sigsFails {
				t.Fatalf("sigs.k8s.io/yaml.JSONToYAML failed %v (%v), want %v", got, err, tt.sigsFails)
			}
			if err == nil && string(y) != string(want) {
				t.Errorf("got\n%s\nwant sigs.k8s.io/yaml's\n%s", y, want)
			}
			// The YAML reads back as the JSON.
			back, err := yaml.YAMLToJSON(y)
			if err != nil {
				t.Fatalf("read back %q: %v", y, err)
			}
			var gotV, wantV interface{}
			if err := json.Unmarshal(back, &gotV); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.json), &wantV); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("read back %v, want %v", gotV, wantV)
			}
		})
	}
}

func TestJSONToYAML_Lists(t *testing.T) {
	long := strings.Repeat("word ", 40) // folded by go-yaml past 80 columns
	items := []string{
		`{"metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"` + long + `","multi":"a\nb\n","n":"1"}}`,
		`{"metadata":{"name":"b","finalizers":["a/b","c/d"]},"list":[[],[1,[2]],{}],"f":1.5}`,
		`{}`, `"` + long + `"`, `[1,2]`, `null`,
	}
	for n := 0; n <= len(items); n++ {
		t.Run(fmt.Sprint(n, " items"), func(t *testing.T) {
			list := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"12","continue":"abc"},"items":[` + strings.Join(items[:n], ",") + `],` +
				`"rows":[` + strings.Join(items[:n], ",") + `],"zeta":[1]}`
			got, err := jsonToYAML([]byte(list))
			if err != nil {
				t.Fatal(err)
			}
			want, err := yaml.JSONToYAML([]byte(list))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}
