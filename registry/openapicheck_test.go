package registry

import (
	"fmt"
	"math/rand"
	"testing"

	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	kjson "sigs.k8s.io/json"
)

// openAPISchemaCheckYAML has a node for each keyword the check evaluates,
// and some it leaves to kube-openapi.
const openAPISchemaCheckYAML = `{type: object, properties: {spec: {type: object, required: [name], maxProperties: 16, properties: {
  name: {type: string, minLength: 1, maxLength: 5},
  mode: {type: string, enum: [a, b]},
  pat: {type: string, pattern: '^x+$'},
  port: {type: integer, minimum: 1, maximum: 10},
  excl: {type: integer, minimum: 0, maximum: 10, exclusiveMinimum: true, exclusiveMaximum: true},
  frac: {type: integer, maximum: 10.5},
  ratio: {type: number, maximum: 2},
  real: {type: number},
  flag: {type: boolean},
  opt: {type: string, nullable: true},
  tags: {type: array, maxItems: 2, minItems: 1, items: {type: string, maxLength: 2}},
  bag: {type: object, additionalProperties: {type: integer, minimum: 0}},
  ios: {x-kubernetes-int-or-string: true},
  when: {type: string, format: date-time},
  any: {x-kubernetes-preserve-unknown-fields: true}}}}}`

// TestOpenAPICheck_Passes: the check says yes only where kube-openapi's
// validator finds no error (so falling back to it keeps every answer),
// and yes for valid objects whose values fall under keywords it
// evaluates (so creates do take the quick path).
func TestOpenAPICheck_Passes(t *testing.T) {
	s, err := newCRSchemaFromYAML(t, openAPISchemaCheckYAML)
	if err != nil {
		t.Fatal(err)
	}
	check := newOpenAPICheck(s.openAPI)
	tests := []struct {
		spec string
		// valid is kube-openapi's verdict; quick, that the check passes.
		valid, quick bool
	}{
		{`{"name":"a"}`, true, true},
		{`{"name":"abcde","mode":"b","pat":"xx","port":10,"excl":9,"ratio":2,"real":-1.5,"flag":false,"opt":null,"tags":["ab"],"bag":{"x":0},"ios":"50%","any":{"z":[1]}}`, true, true},
		{`{"name":"ééééé"}`, true, true},
		{`{"name":"éééééé"}`, false, false},
		{`{"name":""}`, false, false},
		{`{}`, false, false},
		{`{"name":3}`, false, false},
		{`{"name":null}`, false, false},
		{`{"name":"a","mode":"c"}`, false, false},
		{`{"name":"a","mode":null}`, false, false},
		{`{"name":"a","pat":"xy"}`, false, false},
		{`{"name":"a","port":0}`, false, false},
		{`{"name":"a","port":11}`, false, false},
		{`{"name":"a","port":1.0}`, true, false},
		{`{"name":"a","port":1.5}`, false, false},
		{`{"name":"a","port":"1"}`, false, false},
		{`{"name":"a","excl":0}`, false, false},
		{`{"name":"a","excl":10}`, false, false},
		{`{"name":"a","excl":1}`, true, true},
		{`{"name":"a","frac":10}`, false, false}, // kube-openapi refuses a fractional integer bound
		{`{"name":"a","ratio":3}`, false, false},
		{`{"name":"a","ratio":1.5}`, true, false},
		{`{"name":"a","real":2}`, true, true},
		{`{"name":"a","flag":"true"}`, false, false},
		{`{"name":"a","opt":"x"}`, true, true},
		{`{"name":"a","tags":[]}`, false, false},
		{`{"name":"a","tags":["a","b","c"]}`, false, false},
		{`{"name":"a","tags":["abc"]}`, false, false},
		{`{"name":"a","tags":[null]}`, false, false},
		{`{"name":"a","bag":{"x":-1}}`, false, false},
		{`{"name":"a","bag":{"x":"1"}}`, false, false},
		{`{"name":"a","ios":7}`, true, true},
		{`{"name":"a","ios":true}`, false, false},
		{`{"name":"a","when":"2024-01-01T00:00:00Z"}`, true, false},
		{`{"name":"a","when":"yesterday"}`, false, false},
		{`{"name":"a","a1":1,"a2":1,"a3":1,"a4":1,"a5":1,"a6":1,"a7":1,"a8":1,"a9":1,"a10":1,"a11":1,"a12":1,"a13":1,"a14":1,"a15":1,"a16":1}`, false, false},
	}
	for _, tt := range tests {
		obj := specObject(t, tt.spec)
		errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
		if valid := len(errs) == 0; valid != tt.valid {
			t.Errorf("%s: kube-openapi errors %v; the test expects valid=%v", tt.spec, errs, tt.valid)
		}
		passes := check.passes(obj)
		if passes && len(errs) > 0 {
			t.Errorf("%s: check passes, kube-openapi finds %v", tt.spec, errs)
		}
		if passes != tt.quick {
			t.Errorf("%s: check passes = %v, want %v", tt.spec, passes, tt.quick)
		}
	}
}

// TestOpenAPICheck_RandomObjects: over random objects of boundary values,
// the check never passes an object kube-openapi refuses.
func TestOpenAPICheck_RandomObjects(t *testing.T) {
	s, err := newCRSchemaFromYAML(t, openAPISchemaCheckYAML)
	if err != nil {
		t.Fatal(err)
	}
	check := newOpenAPICheck(s.openAPI)
	values := []string{`null`, `""`, `"a"`, `"abcdef"`, `"x"`, `"é"`, `"50%"`, `0`, `1`, `-1`, `10`, `11`, `1.0`, `1.5`, `2`, `9007199254740993`,
		`true`, `[]`, `["a"]`, `["abc"]`, `["a","b","c"]`, `[1]`, `{}`, `{"x":1}`, `{"x":-1}`, `{"x":"y"}`}
	// good holds a valid value of each field, drawn half of the time.
	good := map[string]string{"name": `"ab"`, "mode": `"a"`, "pat": `"xxx"`, "port": `5`, "excl": `5`, "frac": `1`, "ratio": `-3`, "real": `0.5`,
		"flag": `true`, "opt": `null`, "tags": `["a"]`, "bag": `{"q":3}`, "ios": `"x"`, "when": `"2024-01-01T00:00:00Z"`, "any": `[]`, "extra": `1`}
	fields := []string{"name", "mode", "pat", "port", "excl", "frac", "ratio", "real", "flag", "opt", "tags", "bag", "ios", "when", "any", "extra"}
	rng := rand.New(rand.NewSource(1))
	passed := 0
	for i := 0; i < 3000; i++ {
		spec := "{"
		for _, f := range fields {
			if rng.Intn(3) == 0 {
				continue
			}
			if len(spec) > 1 {
				spec += ","
			}
			v := good[f]
			if rng.Intn(8) == 0 {
				v = values[rng.Intn(len(values))]
			}
			spec += fmt.Sprintf("%q:%s", f, v)
		}
		spec += "}"
		obj := specObject(t, spec)
		errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
		if check.passes(obj) {
			passed++
			if len(errs) > 0 {
				t.Errorf("%s: check passes, kube-openapi finds %v", spec, errs)
			}
		}
	}
	t.Logf("the check passed %d of 3000 random objects", passed)
	if passed == 0 {
		t.Errorf("the check passed none of the random objects")
	}
}

// specObject is a custom resource with spec js, decoded as custom
// resource bodies are (whole numbers int64).
func specObject(t *testing.T, js string) map[string]interface{} {
	t.Helper()
	var spec interface{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(js), &spec); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return map[string]interface{}{"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": map[string]interface{}{"name": "a"}, "spec": spec}
}
