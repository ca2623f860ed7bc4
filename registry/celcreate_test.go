package registry

import (
	"context"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// TestCELCreateCheck_Passes: the create check says yes only where
// apiextensions-apiserver's cel.Validator finds no error (so falling back
// to it keeps every answer), and says yes for valid objects of the
// schemas it handles (so creates do take the quick path).
func TestCELCreateCheck_Passes(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		// usable: the check decides for this schema at all.
		usable bool
		// objects maps a JSON object to whether cel.Validator accepts it.
		objects map[string]bool
	}{
		{
			name: "rules on spec and root",
			schema: `{type: object, x-kubernetes-validations: [{rule: "self.metadata.name.startsWith('a')"}, {rule: "self.kind == 'Thing'"}],
			  properties: {spec: {type: object, x-kubernetes-validations: [{rule: "self.num <= 10", message: "n too big"}, {rule: "!has(self.str) || self.str.size() > 0"}],
			    properties: {num: {type: integer}, str: {type: string}}}}}`,
			usable: true,
			objects: map[string]bool{
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":{"num":3}}`:           true,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":{"num":3,"str":"x"}}`: true,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":{"num":11}}`:          false,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":{"num":3,"str":""}}`:  false,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"b1"},"spec":{"num":3}}`:           false,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":{}}`:                  false, // no such key
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":{"num":1.5}}`:         false,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"}}`:                            true,
				`{"apiVersion":"x.example.com/v1","kind":"Thing","metadata":{"name":"a1"},"spec":null}`:                true,
			},
		},
		{
			name: "items, additionalProperties, embedded resources, escaped names",
			schema: `{type: object, properties: {spec: {type: object, properties: {
			    list: {type: array, items: {type: object, x-kubernetes-validations: [{rule: "self.v >= 0"}], properties: {v: {type: integer}}}},
			    bag: {type: object, additionalProperties: {type: string, x-kubernetes-validations: [{rule: "self != 'bad'"}]}},
			    emb: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-validations: [{rule: "self.kind == 'Pod' && self.metadata.name != ''"}]},
			    dash-name: {type: string, x-kubernetes-validations: [{rule: "self.size() < 5"}]},
			    ios: {x-kubernetes-int-or-string: true, x-kubernetes-validations: [{rule: "type(self) == string || self > 0"}]}}}}}`,
			usable: true,
			objects: map[string]bool{
				`{"spec":{"list":[{"v":1},{"v":2}],"bag":{"a":"ok"},"emb":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}},"dash-name":"abc","ios":"x"}}`: true,
				`{"spec":{"list":[{"v":1},{"v":-2}]}}`:                                      false,
				`{"spec":{"bag":{"a":"ok","b":"bad"}}}`:                                     false,
				`{"spec":{"emb":{"apiVersion":"v1","kind":"Svc","metadata":{"name":"p"}}}}`: false,
				`{"spec":{"dash-name":"abcdef"}}`:                                           false,
				`{"spec":{"ios":0}}`:                                                        false,
				`{"spec":{"ios":4}}`:                                                        true,
			},
		},
		{
			name: "transition rules are not run on create",
			schema: `{type: object, properties: {spec: {type: object, x-kubernetes-validations: [{rule: "self.num == oldSelf.num"}, {rule: "self.num > 0"}],
			  properties: {num: {type: integer}}}}}`,
			usable:  true,
			objects: map[string]bool{`{"spec":{"num":1}}`: true, `{"spec":{"num":0}}`: false},
		},
		{
			name: "per-call cost limit",
			schema: `{type: object, properties: {spec: {type: object, properties: {l: {type: array, items: {type: string}}},
			  x-kubernetes-validations: [{rule: "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != 'never')))"}]}}}`,
			usable:  true,
			objects: map[string]bool{`{"spec":{"l":["a","b"]}}`: true, `{"spec":{"l":` + bigList(300) + `}}`: false},
		},
		{
			name:    "optionalOldSelf",
			schema:  `{type: object, properties: {spec: {type: object, x-kubernetes-validations: [{rule: "!oldSelf.hasValue() || self.num > 0", optionalOldSelf: true}], properties: {num: {type: integer}}}}}`,
			usable:  false,
			objects: map[string]bool{`{"spec":{"num":1}}`: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newCRSchemaFromYAML(t, tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			check := newCELCreateCheck(s.structural, celconfig.PerCallLimit)
			if check.usable != tt.usable {
				t.Errorf("usable = %v, want %v", check.usable, tt.usable)
			}
			v := cel.NewValidator(s.structural, true, celconfig.PerCallLimit)
			for js, want := range tt.objects {
				var obj map[string]interface{}
				if err := json.Unmarshal([]byte(js), &obj); err != nil {
					t.Fatal(err)
				}
				intsFromFloats(obj)
				var errs []string
				if v != nil {
					got, _ := v.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
					for _, e := range got {
						errs = append(errs, e.Error())
					}
				}
				if valid := len(errs) == 0; valid != want {
					t.Errorf("%s: cel.Validator errors %q; the test expects valid=%v", js, errs, want)
				}
				passes := check.passes(context.Background(), obj, celconfig.RuntimeCELCostBudget)
				if passes && len(errs) > 0 {
					t.Errorf("%s: check passes, cel.Validator finds %q", js, errs)
				}
				if tt.usable && want && !passes {
					t.Errorf("%s: check does not pass a valid object", js)
				}
			}
		})
	}
}

// newCRSchemaFromYAML builds the crSchema parts of an openAPIV3Schema.
func newCRSchemaFromYAML(t *testing.T, y string) (*crSchemaParts, error) {
	crd := newCronTabCRD(t)
	setSchema(0, y)(t, crd)
	s, err := newCRSchema(crd, &crd.Spec.Versions[0])
	if err != nil {
		return nil, err
	}
	return s.built()
}

// intsFromFloats turns whole float64s into int64s, as custom resource
// bodies decode.
func intsFromFloats(v interface{}) {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, e := range v {
			if f, ok := e.(float64); ok && f == float64(int64(f)) {
				v[k] = int64(f)
				continue
			}
			intsFromFloats(e)
		}
	case []interface{}:
		for i, e := range v {
			if f, ok := e.(float64); ok && f == float64(int64(f)) {
				v[i] = int64(f)
				continue
			}
			intsFromFloats(e)
		}
	}
}

func bigList(n int) string {
	b := []byte{'['}
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"abcdefgh"`...)
	}
	return string(append(b, ']'))
}

// TestNewCELCreateCheck_AllOfRules: rules under allOf (which structural
// schemas forbid, and cel.Validator would run) leave the check unusable.
func TestNewCELCreateCheck_AllOfRules(t *testing.T) {
	s, err := newCRSchemaFromYAML(t, `{type: object, properties: {spec: {type: object, properties: {num: {type: integer}}, allOf: [{required: [num]}]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if check := newCELCreateCheck(s.structural, celconfig.PerCallLimit); !check.usable {
		t.Fatalf("a schema with allOf and no rules: check not usable")
	}
	spec := s.structural.Properties["spec"]
	spec.ValueValidation.AllOf[0].ValidationExtensions.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.num > 0"}}
	s.structural.Properties["spec"] = spec
	if check := newCELCreateCheck(s.structural, celconfig.PerCallLimit); check.usable {
		t.Errorf("rules under allOf: check usable")
	}
}
