package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var plainJSONBodies = []string{
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}`,
	" {\r\n \"a\" : [ 1 , -2.5e-3 , 0 , 1E+2 , true , false , null , { } , [ ] ] , \"b\" : { \"c\" : \"\" } } \n",
	`{"dup":1,"dup":{"x":1,"x":[2]}}`,
	`{"n":1e400}`,
	`{"n":01}`,
	`{"n":1.}`,
	`{"n":-}`,
	`{"n":+1}`,
	`{"n":.5}`,
	`{"n":1e}`,
	`{"s":"ctrl` + "\x01" + `"}`,
	`{"a":1,}`,
	`{"a":1}}`,
	`{"a":1} {}`,
	`{"a" 1}`,
	`{"a":tru}`,
	`{"a":nul}`,
	`{"a":[1,]}`,
	`{"é":"ü","<":"&"}`,
	`{}`,
	`{"deep":` + strings.Repeat(`[`, 1500) + strings.Repeat(`]`, 1500) + `}`,
	`{"big":12345678901234567890123}`,
}

// TestDecodePlainJSONObject: what decodePlainJSONObject takes it decodes
// as encoding/json does; what encoding/json refuses it does not take.
func TestDecodePlainJSONObject(t *testing.T) {
	for _, body := range plainJSONBodies {
		checkPlainJSON(t, []byte(body))
	}
	// The common bodies are taken.
	for _, body := range plainJSONBodies[:3] {
		if _, ok := decodePlainJSONObject([]byte(body)); !ok {
			t.Errorf("%s not taken", body)
		}
	}
}

func checkPlainJSON(t *testing.T, body []byte) {
	t.Helper()
	if !plainJSON(body) {
		return
	}
	got, ok := decodePlainJSONObject(body)
	want := map[string]interface{}{}
	err := json.Unmarshal(body, &want)
	if !ok {
		return
	}
	if err != nil {
		t.Errorf("%q: decoded %v, encoding/json refuses it: %v", body, got, err)
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: decoded\n%#v\nwant encoding/json's\n%#v", body, got, want)
	}
}

func FuzzDecodePlainJSONObject(f *testing.F) {
	for _, body := range plainJSONBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkPlainJSON(t, body)
	})
}
