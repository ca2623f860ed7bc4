package registry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kubevalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/edgeapi/edgeapi/registry/internal/crdvalidation"
)

// oracleCase is a create or update whose causes only kube-apiserver's own
// validation package states: TestCRDValidation_MatchesKubeMore requires
// edgeapi's to be the same. rejects says whether kube-apiserver refuses
// it, so that a case cannot pass by exercising nothing.
type oracleCase struct {
	name      string
	mutateOld func(t *testing.T, old *apiextensionsv1.CustomResourceDefinition) // nil: a create
	mutate    func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition)
	rejects   bool
}

// onSpec wraps y as the schema of the CronTab's spec property (version 0,
// which has the status subresource).
func onSpec(y string) func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {
	return setSchema(0, `{type: object, properties: {status: {type: object, x-kubernetes-preserve-unknown-fields: true}, spec: `+y+`}}`)
}

func setConversion(c *apiextensionsv1.CustomResourceConversion) func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {
	return func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = c }
}

func webhook(cc apiextensionsv1.WebhookClientConfig, versions ...string) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &cc, ConversionReviewVersions: versions}}
}

// testCA returns a freshly made self-signed CA certificate in PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// expensiveRule is a spec schema with a rule over the per-rule cost limit
// (3.1 times) but not over the limit of the whole schema: a regular
// expression on every item of an unbounded list.
const expensiveRule = `{type: object, properties: {l: {type: array, items: {type: string, maxLength: 64}}}, x-kubernetes-validations: [{rule: "self.l.all(x, x.matches('^a+$'))"}]}`

func oracleCases() []oracleCase {
	established := func(_ *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
		old.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	nineFields := func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
		var props []string
		crd.Spec.Versions[0].SelectableFields = nil
		for _, f := range "abcdefghi" {
			props = append(props, string(f)+": {type: string}")
			crd.Spec.Versions[0].SelectableFields = append(crd.Spec.Versions[0].SelectableFields, apiextensionsv1.SelectableField{JSONPath: ".spec." + string(f)})
		}
		onSpec(`{type: object, properties: {`+strings.Join(props, ", ")+`}}`)(t, crd)
	}
	return []oracleCase{
		// Defaults.
		{name: "default over maxLength, enum, maxItems, pattern", mutate: onSpec(`{type: object, properties: {
			a: {type: string, maxLength: 2, default: abc},
			b: {type: string, enum: [x, y], default: z},
			c: {type: array, maxItems: 1, items: {type: string}, default: [p, q]},
			d: {type: string, pattern: "^[0-9]+$", default: abc},
			e: {type: object, required: [x], properties: {x: {type: string}}, default: {}},
			f: {type: integer, minimum: 3, default: 1},
			g: {type: object, maxProperties: 1, x-kubernetes-preserve-unknown-fields: true, default: {a: 1, b: 2}}}}`), rejects: true},
		{name: "valid defaults", mutate: onSpec(`{type: object, properties: {
			a: {type: string, maxLength: 5, default: abc},
			b: {type: object, x-kubernetes-preserve-unknown-fields: true, default: {any: thing}},
			c: {type: array, items: {type: object, properties: {k: {type: string, default: x}}}, default: [{k: "yes"}]},
			d: {x-kubernetes-int-or-string: true, default: 5}}}`)},
		{name: "default with unknown field deep down", mutate: onSpec(`{type: object, properties: {a: {type: array, items: {type: object, properties: {b: {type: string}}}, default: [{b: x, c: y}]}}}`), rejects: true},
		{name: "default of an embedded resource with a bad name", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, default: {apiVersion: v1, kind: Foo, metadata: {name: "a/b"}}}}}`), rejects: true},
		{name: "default of an embedded resource without kind", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, default: {metadata: {name: ok}}}}}`), rejects: true},
		{name: "default inside embedded metadata", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, properties: {
			metadata: {type: object, properties: {name: {type: string, default: "a/b"}, namespace: {type: string, default: ok}}},
			kind: {type: string, default: "Bad Kind"}}}}}`), rejects: true},
		{name: "default under additionalProperties in embedded metadata", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, properties: {
			metadata: {type: object, properties: {labels: {type: object, additionalProperties: {type: string, default: x}}}}}}}}`), rejects: true},
		{name: "default in top-level kind", mutate: setSchema(1, `{type: object, properties: {kind: {type: string, default: Foo}}}`), rejects: true},
		{name: "defaults under additionalProperties outside metadata", mutate: onSpec(`{type: object, additionalProperties: {type: string, default: x}}`)},

		{name: "valid embedded resource default", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, default: {apiVersion: v1, kind: Foo, metadata: {name: ok, labels: {a: b}}}}}}`)},
		{name: "embedded resource default with bad labels and apiVersion", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, default: {apiVersion: "a/b/c", kind: Foo, metadata: {labels: {"bad key!": b}}}}}}`), rejects: true},
		// An int-or-string node has no type to check a default against.
		{name: "int-or-string defaults", mutate: onSpec(`{type: object, properties: {a: {x-kubernetes-int-or-string: true, default: "50%"}, b: {x-kubernetes-int-or-string: true, default: true}}}`)},
		{name: "default under preserve-unknown-fields keeps unknown fields", mutate: onSpec(`{type: object, properties: {a: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {b: {type: string}}, default: {b: x, c: y}}}}`)},
		{name: "default inside a list item in embedded metadata", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, properties: {
			metadata: {type: object, properties: {finalizers: {type: array, items: {type: string, default: "bad finalizer!"}}}}}}}}`), rejects: true},
		{name: "default in top-level metadata name", mutate: setSchema(1, `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, default: x}}}}}`), rejects: true},
		// Structure.
		{name: "value validation in anyOf with types", mutate: onSpec(`{type: object, properties: {a: {type: string, anyOf: [{type: integer}, {maxLength: 3}]}}}`), rejects: true},
		{name: "not with $ref and items as an array", mutate: onSpec(`{type: object, properties: {a: {type: string, not: {$ref: "#/x"}}, b: {type: array, items: [{type: string}]}}}`), rejects: true},
		{name: "definitions, patternProperties, dependencies, additionalItems", mutate: onSpec(`{type: object, definitions: {d: {type: string}}, patternProperties: {"^a": {type: string}}, dependencies: {a: [b]}, additionalItems: false}`), rejects: true},
		{name: "embedded resource inside metadata", mutate: setSchema(1, `{type: object, properties: {metadata: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}`), rejects: true},
		{name: "embedded resource with its own metadata", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, properties: {metadata: {type: object, properties: {labels: {type: object, additionalProperties: {type: string}}}}}}}}`)},
		{name: "int-or-string with anyOf", mutate: onSpec(`{type: object, properties: {a: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}, b: {x-kubernetes-int-or-string: true, anyOf: [{type: boolean}]}}}`), rejects: true},
		{name: "nullable items of set and map lists, nullable map key", mutate: onSpec(`{type: object, properties: {
			s: {type: array, x-kubernetes-list-type: set, items: {type: string, nullable: true}},
			m: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k, j], items: {type: object, required: [k], properties: {k: {type: string, nullable: true}, j: {type: string, default: x}}}}}}`), rejects: true},
		{name: "map list keys not scalar, unknown, repeated", mutate: onSpec(`{type: object, properties: {
			m: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k, k, z], items: {type: object, required: [k], properties: {k: {type: object}}}},
			n: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: string}}}}`), rejects: true},
		{name: "set of nested lists and atomic objects", mutate: onSpec(`{type: object, properties: {
			s: {type: array, x-kubernetes-list-type: set, items: {type: array, x-kubernetes-list-type: set, items: {type: string}}},
			t: {type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic}}}}`), rejects: true},
		{name: "map-type without a type", mutate: onSpec(`{type: object, properties: {a: {x-kubernetes-map-type: atomic}, b: {x-kubernetes-list-type: atomic}}}`), rejects: true},
		{name: "root with status: enum not allowed", mutate: setSchema(0, `{type: object, enum: [{}], properties: {spec: {type: object}}}`), rejects: true},
		{name: "root with status: description and validations allowed", mutate: setSchema(0, `{type: object, description: d, x-kubernetes-validations: [{rule: "true"}], properties: {spec: {type: object}}}`)},
		{name: "unknown type only", mutate: onSpec(`{type: object, properties: {a: {type: int}}}`), rejects: true},

		{name: "root with status: no type", mutate: setSchema(0, `{properties: {spec: {type: object}}}`), rejects: true},
		{name: "root with status: embedded resource and nullable", mutate: setSchema(0, `{type: object, nullable: true, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}`), rejects: true},
		{name: "root without status: anyOf allowed", mutate: setSchema(1, `{type: object, properties: {a: {type: string}}, anyOf: [{required: [a]}]}`)},
		{name: "forbidden generics in allOf", mutate: onSpec(`{type: object, allOf: [{description: d, type: object, nullable: true, default: {}}]}`), rejects: true},
		{name: "additionalProperties false with properties", mutate: onSpec(`{type: object, properties: {a: {type: string}}, additionalProperties: false}`), rejects: true},
		{name: "additionalProperties true with properties", mutate: onSpec(`{type: object, properties: {a: {type: string}}, additionalProperties: true}`)},
		// x-kubernetes-validations.
		{name: "validation rule fieldPath", mutate: onSpec(`{type: object, properties: {a: {type: string}, m: {type: object, additionalProperties: {type: string}}}, x-kubernetes-validations: [
			{rule: "true", fieldPath: ".a"},
			{rule: "true", fieldPath: ".nope"},
			{rule: "true", fieldPath: "['a']"},
			{rule: "true", fieldPath: ".m.anykey"},
			{rule: "true", fieldPath: ".m['x\\'y']"},
			{rule: "true", fieldPath: ".m['bad\\q']"},
			{rule: "true", fieldPath: "a"},
			{rule: "true", fieldPath: ".a\n"},
			{rule: "true", fieldPath: "  "},
			{rule: "true", fieldPath: ".a["},
			{rule: "true", fieldPath: ".m['x'"},
			{rule: "true", fieldPath: ".m[x]"},
			{rule: "true", messageExpression: "  "},
			{rule: "a\nb"},
			{rule: "true", message: "a\nb"}]}`), rejects: true},

		// x-kubernetes-validations compiled.
		{name: "rules that do not compile", mutate: onSpec(`{type: object, properties: {a: {type: integer}, b: {type: string}}, x-kubernetes-validations: [
			{rule: "self.a >"},
			{rule: "self.nope == 1"},
			{rule: "self.a"},
			{rule: "self.a == 'x'"},
			{rule: "self.b.startsWith(1)"},
			{rule: "size(self.b) < 3 && self.a > 0"}]}`), rejects: true},
		{name: "messageExpression errors", mutate: onSpec(`{type: object, properties: {a: {type: integer}}, x-kubernetes-validations: [
			{rule: "self.a > 0", messageExpression: "self.a"},
			{rule: "self.a > 0", messageExpression: "'a is ' +"},
			{rule: "self.a >", messageExpression: "'never compiled' +"},
			{rule: "self.a > 0", messageExpression: "'a is ' + string(self.a)"}]}`), rejects: true},
		{name: "rule over the per-expression cost budget", mutate: onSpec(`{type: object, properties: {
			l: {type: array, items: {type: string}},
			m: {type: array, items: {type: string, x-kubernetes-validations: [{rule: "self.matches('^a+$')"}]}}},
			x-kubernetes-validations: [{rule: "self.l.all(x, self.l.all(y, x == y))"}]}`), rejects: true},
		{name: "the same rules made cheap with maxItems and maxLength", mutate: onSpec(`{type: object, properties: {
			l: {type: array, maxItems: 10, items: {type: string, maxLength: 10}},
			m: {type: array, maxItems: 10, items: {type: string, maxLength: 10, x-kubernetes-validations: [{rule: "self.matches('^a+$')"}]}}},
			x-kubernetes-validations: [{rule: "self.l.all(x, self.l.all(y, x == y))"}]}`)},
		{name: "messageExpression over the cost budget", mutate: onSpec(`{type: object, properties: {l: {type: array, items: {type: string}}},
			x-kubernetes-validations: [{rule: "size(self.l) < 5", messageExpression: "self.l.filter(x, self.l.exists(y, x == y)).join(',')"}]}`), rejects: true},
		{name: "total cost over budget with many rules", mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			var rules []string
			for range 30 {
				rules = append(rules, `{rule: "self.l.all(x, x.matches('^a+$'))"}`)
			}
			onSpec(`{type: object, properties: {l: {type: array, items: {type: string, maxLength: 10}}}, x-kubernetes-validations: [`+strings.Join(rules, ", ")+`]}`)(t, crd)
		}, rejects: true},
		{name: "oldSelf under uncorrelatable lists and maps", mutate: onSpec(`{type: object, properties: {
			l: {type: array, items: {type: object, properties: {a: {type: string}}, x-kubernetes-validations: [{rule: "self.a == oldSelf.a"}]}},
			s: {type: array, x-kubernetes-list-type: set, items: {type: string, x-kubernetes-validations: [{rule: "self == oldSelf"}]}},
			nested: {type: array, items: {type: array, items: {type: string, x-kubernetes-validations: [{rule: "self == oldSelf"}]}}},
			m: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, required: [k], properties: {k: {type: string}}, x-kubernetes-validations: [{rule: "self.k == oldSelf.k"}]}},
			o: {type: object, additionalProperties: {type: string, x-kubernetes-validations: [{rule: "self == oldSelf"}]}}}}`), rejects: true},
		{name: "optionalOldSelf without oldSelf", mutate: onSpec(`{type: object, properties: {a: {type: integer}}, x-kubernetes-validations: [
			{rule: "self.a > 0", optionalOldSelf: true},
			{rule: "self.a > 0", optionalOldSelf: false},
			{rule: "oldSelf.hasValue()", optionalOldSelf: true},
			{rule: "self.a >", optionalOldSelf: true},
			{rule: "!oldSelf.hasValue() || self.a >= oldSelf.value().a", optionalOldSelf: true}]}`), rejects: true},
		{name: "rules are not compiled where the schema is wrong", mutate: onSpec(`{type: object, properties: {
			a: {type: object, properties: {b: {type: string, maxLength: -1}}, x-kubernetes-validations: [{rule: "self.b >"}]},
			c: {type: string, x-kubernetes-validations: [{rule: "self >"}]}}}`), rejects: true},
		{name: "rules in allOf and not are not compiled", mutate: onSpec(`{type: object, properties: {a: {type: string}}, allOf: [{x-kubernetes-validations: [{rule: "self >"}]}], not: {x-kubernetes-validations: [{rule: "self.a >"}]}}`), rejects: true},
		{name: "rule just over the cost limit", mutate: onSpec(`{type: object, properties: {l: {type: array, items: {type: string, maxLength: 22}}}, x-kubernetes-validations: [{rule: "self.l.all(x, x.matches('^a+$'))"}]}`), rejects: true},
		{name: "rules on an embedded resource and int-or-string", mutate: onSpec(`{type: object, properties: {
			e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-validations: [{rule: "self.kind == 'Foo'"}, {rule: "self.metadata.name.size() > 1"}, {rule: "self.spec > 1"}]},
			i: {x-kubernetes-int-or-string: true, x-kubernetes-validations: [{rule: "type(self) == int || self.endsWith('%')"}, {rule: "self > 1"}]},
			p: {type: object, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-validations: [{rule: "self.anything == 1"}]}}}`), rejects: true},
		{name: "rule on the root with status", mutate: setSchema(0, `{type: object, x-kubernetes-validations: [{rule: "self.metadata.name.size() < 5"}, {rule: "self.metadata.labels.size() > 0"}, {rule: "self.spec.x == 1"}, {rule: "has(self.status)"}],
			properties: {spec: {type: object, properties: {x: {type: integer}}}, status: {type: object}}}`), rejects: true},
		{name: "rules in both versions", mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			setSchema(1, `{type: object, x-kubernetes-validations: [{rule: "self.a >"}], properties: {a: {type: integer}}}`)(t, crd)
			onSpec(`{type: object, x-kubernetes-validations: [{rule: "1"}]}`)(t, crd)
		}, rejects: true},
		{name: "rule under a property CEL cannot name", mutate: onSpec(`{type: object, properties: {"a/b": {type: object, properties: {c: {type: integer}}, x-kubernetes-validations: [{rule: "self.c > 0"}, {rule: "self.d > 0"}]}}, x-kubernetes-validations: [{rule: "has(self.a__slash__b)"}]}`), rejects: true},

		// Defaults run through the rules of their node and below.
		{name: "default refused by its rule", mutate: onSpec(`{type: object, properties: {a: {type: integer, default: 3, x-kubernetes-validations: [{rule: "self > 5"}]}}}`), rejects: true},
		{name: "default with a rule that does not compile", mutate: onSpec(`{type: object, properties: {a: {type: integer, default: 3, x-kubernetes-validations: [{rule: "self >"}]}}}`), rejects: true},
		{name: "default refused by rules below it and with messageExpression", mutate: onSpec(`{type: object, properties: {o: {type: object, default: {num: 1, s: ab}, properties: {
			num: {type: integer, x-kubernetes-validations: [{rule: "self > 1", messageExpression: "'num is ' + 'small'"}]},
			s: {type: string, maxLength: 5, x-kubernetes-validations: [{rule: "self.startsWith('x')", message: "must start with x", reason: FieldValueForbidden}]}}}}}`), rejects: true},
		{name: "defaults that pass their rules", mutate: onSpec(`{type: object, properties: {
			a: {type: integer, default: 7, x-kubernetes-validations: [{rule: "self > 5"}, {rule: "self == oldSelf"}]},
			b: {type: array, maxItems: 3, items: {type: string, maxLength: 3}, default: [x, z], x-kubernetes-validations: [{rule: "self.all(i, i.size() == 1)"}]}}}`)},
		{name: "default and optionalOldSelf", mutate: onSpec(`{type: object, properties: {
			a: {type: integer, default: 3, x-kubernetes-validations: [{rule: "!oldSelf.hasValue()", optionalOldSelf: true}]},
			b: {type: integer, default: 3, x-kubernetes-validations: [{rule: "oldSelf.hasValue()", optionalOldSelf: true}]}}}`), rejects: true},
		{name: "default of an embedded resource and its rules", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true,
			default: {apiVersion: v1, kind: Foo, metadata: {name: ok}}, x-kubernetes-validations: [{rule: "self.kind == 'Bar'"}, {rule: "self.metadata.name == 'ok'"}]}}}`), rejects: true},
		{name: "default inside embedded metadata and its rule", mutate: onSpec(`{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, properties: {
			kind: {type: string, default: Foo, x-kubernetes-validations: [{rule: "self == 'Bar'"}]}}}}}`), rejects: true},
		// Selectable fields.
		{name: "nine selectable fields", mutate: nineFields, rejects: true},
		{name: "selectable fields: map keys, brackets, metadata", mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			setSchema(0, `{type: object, properties: {metadata: {type: object, properties: {name: {type: string}}}, status: {type: object}, spec: {type: object, properties: {
				m: {type: object, additionalProperties: {type: string}}, n: {type: number}, b: {type: boolean}, e: {type: string, enum: [x]}, f: {type: string, format: date}}}}}`)(t, crd)
			crd.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.m.k"}, {JSONPath: ".spec['m']"}, {JSONPath: ".metadata.name"}, {JSONPath: ".spec.n"}, {JSONPath: ".spec.b"}, {JSONPath: ".spec.e"}, {JSONPath: ".spec.f"}, {JSONPath: "spec"}}
		}, rejects: true},
		{name: "selectable fields without a schema", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Schema = nil
			crd.Spec.Versions[1].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.a"}}
		}, rejects: true},

		// Versions and names.
		{name: "deprecation warnings", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Deprecated, crd.Spec.Versions[0].DeprecationWarning = true, ptr.To(strings.Repeat("x", 257))
			crd.Spec.Versions[1].Deprecated, crd.Spec.Versions[1].DeprecationWarning = true, ptr.To("")
			v := *crd.Spec.Versions[1].DeepCopy()
			v.Name, v.DeprecationWarning = "v2", ptr.To("tab\there")
			crd.Spec.Versions = append(crd.Spec.Versions, v)
		}, rejects: true},
		{name: "deprecation warning not UTF-8", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Deprecated, crd.Spec.Versions[1].DeprecationWarning = true, ptr.To("old \xff")
		}, rejects: true},
		{name: "first version name invalid", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Name = "1"
			crd.Status.StoredVersions = []string{"1"}
		}, rejects: true},
		{name: "singular and plural missing", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.Singular, crd.Spec.Names.ListKind = "", "crontablist"
		}, rejects: true},
		{name: "storage version listed twice, unknown ones twice", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Status.StoredVersions = []string{"v0", "v1", "v0", "v1", "x"}
		}, rejects: true},
		{name: "cluster scoped", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = apiextensionsv1.ClusterScoped
		}},
		{name: "approved protected group", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Group = "crontabs.x.kubernetes.io", "x.kubernetes.io"
			crd.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "https://github.com/kubernetes/kubernetes/pull/1"}
		}},
		{name: "unapproved protected group", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name, crd.Spec.Group = "crontabs.k8s.io", "k8s.io"
			crd.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: "unapproved, testing"}
		}},
		{name: "metadata name and labels", mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Labels = map[string]string{"bad key!": "v"}
			crd.Namespace = "default"
		}, rejects: true},

		// Conversion.
		{name: "webhook: valid url with a CA", mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://conv.example.com/convert"), CABundle: testCA(t)}, "v1"))(t, crd)
		}},
		{name: "webhook: url that does not parse", mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://[::1")}, "v1")), rejects: true},
		{name: "webhook: url and service", mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a"), Service: &apiextensionsv1.ServiceReference{Name: "n", Namespace: "ns"}}, "v1")), rejects: true},
		{name: "webhook: service paths", mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Name: "n", Namespace: "ns", Port: ptr.To[int32](70000), Path: ptr.To("//")}}, "v1")), rejects: true},
		{name: "webhook: service path segments", mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Name: "n", Namespace: "ns", Path: ptr.To("/ok/Not_OK/")}}, "v1")), rejects: true},
		{name: "webhook: good service path", mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Name: "n", Namespace: "ns", Path: ptr.To("/convert/v1/"), Port: ptr.To[int32](443)}}, "v1beta1", "v1"))},
		{name: "webhook: review versions unknown and invalid", mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a")}, "v3", "V_4")), rejects: true},
		{name: "webhook with preserveUnknownFields", mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a")}, "v1"))(t, crd)
			crd.Spec.PreserveUnknownFields = true
		}, rejects: true},

		// Updates.
		{name: "update: bad caBundle once established", mutateOld: established,
			mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a"), CABundle: []byte("junk")}, "v1")), rejects: true},
		{name: "update: good caBundle once established", mutateOld: established, mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a"), CABundle: testCA(t)}, "v1"))(t, crd)
		}},
		{name: "update: caBundle with a certificate that does not parse", mutateOld: established,
			mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a"), CABundle: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")}, "v1")), rejects: true},
		{name: "update: bad caBundle before established", mutateOld: func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {},
			mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a"), CABundle: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")}, "v1"))},
		{name: "update: a broken stored caBundle may stay broken", mutateOld: func(t *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
			established(t, old)
			setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a"), CABundle: []byte("junk")}, "v1"))(t, old)
		}, mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://b"), CABundle: []byte("other junk")}, "v1"))},
		{name: "update: unknown review versions may stay", mutateOld: func(t *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
			setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a")}, "v3"))(t, old)
		}, mutate: setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://b")}, "v3"))},
		{name: "update: nine selectable fields may stay", mutateOld: nineFields, mutate: func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {}},
		{name: "update: nine selectable fields may not appear", mutateOld: func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {}, mutate: nineFields, rejects: true},
		{name: "update: non-atomic set items may stay", mutateOld: onSpec(`{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: object}}}}`),
			mutate: onSpec(`{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: object}}, t: {type: string}}}`)},
		{name: "update: nullable set items may stay", mutateOld: onSpec(`{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: string, nullable: true}}}}`),
			mutate: onSpec(`{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: string, nullable: true}}, t: {type: string}}}`)},
		{name: "update: unpruned defaults may stay", mutateOld: onSpec(`{type: object, properties: {a: {type: object, properties: {b: {type: string}}, default: {b: x, c: y}}}}`),
			mutate: onSpec(`{type: object, properties: {a: {type: object, properties: {b: {type: string}}, default: {b: x, c: y}}, t: {type: string}}}`)},
		{name: "update: unknown type may stay", mutateOld: onSpec(`{type: object, properties: {a: {type: int}}}`),
			mutate: onSpec(`{type: object, properties: {a: {type: int}, b: {type: string}}}`)},
		{name: "update: a schema may go missing from an unserved version if one already was", mutateOld: func(_ *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
			old.Spec.Versions[1].Schema = nil
		}, mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Schema, crd.Spec.Versions[1].Served = nil, false
		}},
		{name: "update: a served version still needs a schema", mutateOld: func(_ *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
			old.Spec.Versions[1].Schema = nil
		}, mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Schema = nil
		}, rejects: true},
		{name: "update: metadata name is immutable", mutateOld: func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {}, mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Name = "other.stable.example.com"
		}, rejects: true},
		// Updates of rules: a rule over the cost limit in a schema the
		// update leaves alone stays; a schema that changes is checked
		// again, and a new rule always is.
		{name: "update: a rule over the cost limit may stay in an unchanged schema", mutateOld: onSpec(expensiveRule), mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Labels = map[string]string{"a": "b"}
		}},
		{name: "update: a rule over the cost limit in a changed schema", mutateOld: onSpec(expensiveRule), mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "changed"
		}, rejects: true},
		{name: "update: a new rule over the cost limit", mutateOld: func(*testing.T, *apiextensionsv1.CustomResourceDefinition) {}, mutate: onSpec(expensiveRule), rejects: true},
		{name: "update: a rule that does not compile is rejected even when stored", mutateOld: onSpec(`{type: object, properties: {a: {type: integer}}, x-kubernetes-validations: [{rule: "self.a >"}]}`),
			mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Labels = map[string]string{"a": "b"}
			}, rejects: true},
		{name: "update: total over budget is checked in an unchanged schema", mutateOld: func(t *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
			onSpec(`{type: object, properties: {l: {type: array, items: {type: string}}}, x-kubernetes-validations: [{rule: "self.l.all(x, self.l.all(y, x == y))"}, {rule: "self.l.all(x, x.size() > 0)"}]}`)(t, old)
		}, mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Labels = map[string]string{"a": "b"}
		}, rejects: true},
		{name: "update: an unchanged version keeps its rule while another changes", mutateOld: setSchema(1, expensiveRule), mutate: onSpec(`{type: object, properties: {x: {type: string}}}`)},
		{name: "update: the same rule moved to another version is checked", mutateOld: setSchema(1, expensiveRule), mutate: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			onSpec(expensiveRule)(t, crd)
			setSchema(1, `{type: object, x-kubernetes-preserve-unknown-fields: true}`)(t, crd)
		}, rejects: true},
		{name: "update: approval state unchanged passes", mutateOld: func(_ *testing.T, old *apiextensionsv1.CustomResourceDefinition) {
			old.Name, old.Spec.Group = "crontabs.stable.k8s.io", "stable.k8s.io"
		}, mutate: func(_ *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Labels = map[string]string{"a": "b"}
		}},
	}
}

// TestCRDValidation_MatchesKubeMore runs the oracle cases through
// edgeapi's validation and kube-apiserver's, and requires the same
// errors.
func TestCRDValidation_MatchesKubeMore(t *testing.T) {
	for _, tt := range oracleCases() {
		t.Run(tt.name, func(t *testing.T) {
			var old *apiextensionsv1.CustomResourceDefinition
			if tt.mutateOld != nil {
				old = newCronTabCRD(t)
				old.ResourceVersion = "5"
				tt.mutateOld(t, old)
			}
			crd := newCronTabCRD(t)
			if old != nil {
				crd = old.DeepCopy()
			}
			tt.mutate(t, crd)
			want := kubeValidate(t, crd, old)
			in, err := crdToInternal(crd)
			if err != nil {
				t.Fatal(err)
			}
			var got field.ErrorList
			if old == nil {
				got = crdvalidation.Create(in)
			} else {
				oldIn, err := crdToInternal(old)
				if err != nil {
					t.Fatal(err)
				}
				got = crdvalidation.Update(in, oldIn)
			}
			if !sameErrors(got, want) && !sameUpToSaturatedCostFactor(got, want) {
				t.Errorf("got  %q\nwant %q", errorStrings(got), errorStrings(want))
			}
			if (len(want) > 0) != tt.rejects {
				t.Errorf("kube-apiserver gives %d causes, the case says rejects=%v: %q", len(want), tt.rejects, errorStrings(want))
			}
		})
	}
}

// TestCRDValidation_UnsetPreserveUnknownFieldsMatchesKube covers what
// only the internal version can hold: spec.preserveUnknownFields unset,
// which kube-apiserver takes as pruning for the structural rules and as
// keeping unknown fields for defaults and webhook conversion.
func TestCRDValidation_UnsetPreserveUnknownFieldsMatchesKube(t *testing.T) {
	crd := newCronTabCRD(t)
	setConversion(webhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://a")}, "v1"))(t, crd)
	in, err := crdToInternal(crd)
	if err != nil {
		t.Fatal(err)
	}
	in.Spec.PreserveUnknownFields = nil
	got, want := crdvalidation.Create(in), kubevalidation.ValidateCustomResourceDefinition(context.Background(), in)
	if !sameErrors(got, want) {
		t.Errorf("got  %q\nwant %q", errorStrings(got), errorStrings(want))
	}
	if len(want) != 2 {
		t.Errorf("kube-apiserver gives %q, want the defaults and conversion causes", errorStrings(want))
	}
}

// costFactor is the factor in kube-apiserver's "exceeds budget by factor
// of ..." messages.
var costFactor = regexp.MustCompile(`exceeds budget by factor of (more than 100x|[0-9.]+x)`)

// sameUpToSaturatedCostFactor: on 32-bit platforms only, a and b are the
// same causes with the cost factors left out, and the same number of
// "contributed to ..." causes, whichever rules they name. kube-apiserver's
// rule cost saturates at math.MaxUint, which is 2^32-1 there: a rule
// whose cost overflows counts 4.29e9 (43.0x the CRD's limit), where on
// 64-bit platforms it counts 2^64-1 ("more than 100x"), and among rules
// whose costs saturate alike, which four it names as contributing is up
// to an unstable sort. edgeapi saturates at 2^64-1 everywhere, so a CRD
// gets the same causes on every device, the ones 64-bit kube-apiserver
// gives; which rules are over the budget is the same either way.
func sameUpToSaturatedCostFactor(a, b field.ErrorList) bool {
	if strconv.IntSize != 32 {
		return false
	}
	norm := func(errs field.ErrorList) (rest []string, contributed int) {
		for _, e := range errorStrings(errs) {
			if strings.Contains(e, "contributed to estimated rule cost total") {
				contributed++
				continue
			}
			rest = append(rest, costFactor.ReplaceAllString(e, "exceeds budget by factor of N"))
		}
		sort.Strings(rest)
		return rest, contributed
	}
	restA, nA := norm(a)
	restB, nB := norm(b)
	return nA == nB && slices.Equal(restA, restB)
}
