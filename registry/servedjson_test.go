package registry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"

	"github.com/edgeapi/edgeapi/store"
)

// servedJSONCRD has defaults at every place a schema can put one
// (properties, nested objects, array items, additionalProperties), a
// nullable defaulted field, a preserve-unknown-fields subtree with known
// fields, an embedded resource, int-or-string, metadata (which is not
// pruned, known fields or not), and a second served
// version whose schema knows fewer fields.
const servedJSONCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.fp.example.com
spec:
  group: fp.example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          metadata:
            type: object
            properties:
              name: {type: string, maxLength: 20}
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
              name: {type: string}
              ratio: {type: number}
              mode: {type: string, nullable: true, default: auto}
              labels: {type: object, additionalProperties: {type: string, default: x}}
              tags: {type: array, items: {type: string, default: t}}
              nested:
                type: object
                default: {}
                properties:
                  "on": {type: boolean, default: true}
              free:
                type: object
                x-kubernetes-preserve-unknown-fields: true
                properties:
                  known:
                    type: object
                    properties:
                      a: {type: string}
              any: {x-kubernetes-int-or-string: true}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  spec:
                    type: object
                    properties:
                      x: {type: integer, default: 1}
              list:
                type: array
                items:
                  type: object
                  properties:
                    k: {type: string}
                    v: {type: integer, default: 0}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              name: {type: string}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`

// storedCR is what the store keeps for a custom resource written as doc:
// the encoding of its decoded map without kind and apiVersion, stamped
// with a resourceVersion.
func storedCR(t testing.TB, doc string) []byte {
	t.Helper()
	m := map[string]interface{}{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(doc), &m); err != nil {
		t.Fatalf("decode %s: %v", doc, err)
	}
	delete(m, "kind")
	delete(m, "apiVersion")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err = store.StampRevision(b, 42)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodedJSON is the served JSON by decoding: what objectJSON sends
// without AppendServedJSON.
func decodedJSON(k *Kind, value []byte) ([]byte, error) {
	obj, err := k.DecodeStored(value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

const fullWidget = `{"metadata":{"name":"w","namespace":"ns","uid":"u1","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"a":"b"},"annotations":{"note":"x < y & z > w"}},` +
	`"spec":{"size":5,"name":"héllo \"q\" \\ \n\t\u2028 <b>","ratio":1.5,"mode":null,"labels":{"k":"v"},"tags":["a","b"],"nested":{"on":false},` +
	`"free":{"anything":{"deep":[1,2,{"x":null}]},"known":{"a":"s"}},"any":"50%",` +
	`"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","whatever":1},"spec":{"x":2}},` +
	`"list":[{"k":"a","v":1},{"k":"b","v":-7}]},"status":{"anything":true,"n":1e300,"m":-0.000001}}`

func TestKind_AppendServedJSON(t *testing.T) {
	kinds := testCRKinds(t, servedJSONCRD)
	v1, v2 := kinds[0], kinds[1]
	if v1.AppendServedJSON == nil || v2.AppendServedJSON == nil {
		t.Fatal("AppendServedJSON not set for a kind with defaults")
	}
	type tc struct {
		name  string
		value []byte
		// fast lists the kinds that must take the decode-free path.
		fast []*Kind
	}
	cases := []tc{
		{"every default present", storedCR(t, fullWidget), []*Kind{v1}},
		{"minimal", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":3,"mode":"auto","nested":{"on":true}}}`), []*Kind{v1}},
		{"no spec", storedCR(t, `{"metadata":{"name":"w"}}`), []*Kind{v1, v2}},
		{"empty metadata", []byte(`{"metadata":{"resourceVersion":"42"}}`), []*Kind{v1, v2}},
		{"resourceVersion in its place", []byte(`{"metadata":{"name":"a","resourceVersion":"42","uid":"u"}}`), []*Kind{v1, v2}},
		{"resourceVersion first and last", []byte(`{"metadata":{"resourceVersion":"42","name":"a"}}`), []*Kind{v1, v2}},
		{"top-level key before apiVersion", storedCR(t, `{"Zeta":1,"metadata":{"name":"w"}}`), []*Kind{v1}},
		{"missing default", storedCR(t, `{"metadata":{"name":"w"},"spec":{"mode":"m","nested":{"on":true}}}`), []*Kind{v1}},
		{"missing defaults before, between and after keys", storedCR(t, `{"metadata":{"name":"w"},"spec":{"name":"n","tags":[]}}`), []*Kind{v1}},
		{"empty spec", storedCR(t, `{"metadata":{"name":"w"},"spec":{}}`), []*Kind{v1}},
		{"missing defaults and a pruned field", storedCR(t, `{"metadata":{"name":"w"},"spec":{"gone":1}}`), []*Kind{v1}},
		{"pruned first, last and between, defaults added", storedCR(t, `{"metadata":{"name":"w"},"spec":{"a0":1,"labels":{},"mode":"m","nested":{"on":true,"zz":[1]},"q":"x","size":2,"z1":{"a":1},"z2":null}}`), []*Kind{v1}},
		{"every member pruned", storedCR(t, `{"metadata":{"name":"w"},"spec":{"mode":"m","nested":{"on":true},"size":1,"template":{"spec":{"x":3},"zz":1}}}`), []*Kind{v1}},
		{"pruned where a default goes", storedCR(t, `{"metadata":{"name":"w"},"spec":{"mod":1,"nested":{"o":1},"size":1}}`), []*Kind{v1}},
		{"pruned object left empty", storedCR(t, `{"metadata":{"name":"w"},"spec":{"mode":"m","nested":{"on":true},"size":1,"list":[{"zz":1},{"k":"a","v":1,"zz":2}]}}`), []*Kind{v1}},
		{"pruned and a null defaulted", storedCR(t, `{"metadata":{"name":"w"},"spec":{"gone":1,"mode":"m","nested":{"on":true},"size":null}}`), []*Kind{v1}},
		{"pruned at the root and inside", storedCR(t, `{"metadata":{"name":"w"},"other":1,"spec":{"gone":1,"mode":"m","nested":{"on":true},"size":1},"zzz":{}}`), []*Kind{v1}},
		{"missing nested default", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{}}}`), []*Kind{v1}},
		{"missing object default", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m"}}`), []*Kind{v1}},
		{"null replaced by default", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":null,"mode":"m","nested":{"on":true}}}`), []*Kind{v1}},
		{"nullable null kept", storedCR(t, `{"metadata":{"name":"w"},"spec":{"mode":null,"size":1,"nested":{"on":true}}}`), []*Kind{v1}},
		{"null item defaulted", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"tags":["a",null]}}`), []*Kind{v1}},
		{"null additional property defaulted", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"labels":{"a":null}}}`), []*Kind{v1}},
		{"missing item default", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"list":[{"k":"a"}]}}`), []*Kind{v1}},
		{"missing embedded default", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"template":{"spec":{}}}}`), []*Kind{v1}},
		{"unknown field pruned", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"gone":1}}`), []*Kind{v1}},
		{"unknown top-level field pruned", storedCR(t, `{"metadata":{"name":"w"},"other":{}}`), []*Kind{v1}},
		{"unknown field in a known field under preserve-unknown", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"free":{"known":{"b":1}}}}`), []*Kind{v1}},
		{"unknown field in an array item", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"list":[{"k":"a","v":1,"z":2}]}}`), []*Kind{v1}},
		{"unknown field in an embedded resource", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"template":{"spec":{"x":1},"zz":1}}}`), []*Kind{v1}},
		{"field of v1 only", storedCR(t, `{"metadata":{"name":"w"},"spec":{"size":1,"mode":"m","nested":{"on":true},"ratio":2}}`), []*Kind{v1}},
		{"white space", []byte(`{"metadata":{"resourceVersion":"42", "name":"w"}}`), nil},
		{"keys out of order", []byte(`{"status":{},"metadata":{"resourceVersion":"42","name":"w"}}`), nil},
		{"duplicate key", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"a":1,"a":2}}`), nil},
		{"duplicate resourceVersion", []byte(`{"metadata":{"resourceVersion":"42","name":"w","resourceVersion":"7"}}`), nil},
		{"float spelled as an integer would be", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"n":1.0}}`), nil},
		{"minus zero", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"n":-0}}`), nil},
		{"exponent", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"n":1e2}}`), nil},
		{"status of every JSON type", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"a":1,"b":[1.5,-2,true,false,null,{},[]],"c":"x","d":1e+300,"e":1e-7}}`), []*Kind{v1, v2}},
		{"big integer", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"n":123456789012345678901234567890}}`), nil},
		{"int64 limit", []byte(`{"metadata":{"resourceVersion":"42","name":"w"},"status":{"n":-9223372036854775808}}`), []*Kind{v1, v2}},
		{"unescaped html", []byte(`{"metadata":{"resourceVersion":"42","name":"<w>"}}`), nil},
		{"needless escape", []byte(`{"metadata":{"resourceVersion":"42","name":"\u0077"}}`), nil},
		{"escaped slash", []byte(`{"metadata":{"resourceVersion":"42","name":"a\/b"}}`), nil},
		{"raw line separator", []byte("{\"metadata\":{\"resourceVersion\":\"42\",\"name\":\"a\u2028b\"}}"), nil},
		{"invalid utf-8", []byte("{\"metadata\":{\"resourceVersion\":\"42\",\"name\":\"a\xffb\"}}"), nil},
		{"escaped replacement character", []byte(`{"metadata":{"resourceVersion":"42","name":"a\ufffdb"}}`), nil},
		{"raw non-ASCII", []byte(`{"metadata":{"resourceVersion":"42","name":"zoë 😀"}}`), []*Kind{v1, v2}},
		{"stored apiVersion", []byte(`{"apiVersion":"fp.example.com/v1","metadata":{"resourceVersion":"42","name":"w"}}`), nil},
		{"trailing bytes", []byte(`{"metadata":{"resourceVersion":"42","name":"w"}} `), nil},
		{"not JSON", []byte(`{"metadata":{"resourceVersion":"42","name":"w"}`), nil},
	}
	for _, c := range cases {
		for _, k := range kinds {
			t.Run(c.name+"/"+k.GVK.Version, func(t *testing.T) {
				want, werr := decodedJSON(k, c.value)
				got, ok := k.AppendServedJSON([]byte("prefix"), c.value)
				fast := false
				for _, f := range c.fast {
					fast = fast || f == k
				}
				switch {
				case ok && werr != nil:
					t.Fatalf("AppendServedJSON(%s) = %s, true; decoding fails: %v", c.value, got, werr)
				case ok && !bytes.Equal(got, append([]byte("prefix"), want...)):
					t.Fatalf("AppendServedJSON(%s) =\n%s\nwant (decoded)\n%s", c.value, got, want)
				case !ok && string(got) != "prefix":
					t.Fatalf("AppendServedJSON(%s) = %q, false; want dst unchanged", c.value, got)
				case fast && !ok:
					t.Fatalf("AppendServedJSON(%s) = false; want the decode-free path (decoded: %s)", c.value, want)
				case !fast && ok:
					t.Fatalf("AppendServedJSON(%s) = true; want decoding", c.value)
				}
			})
		}
	}
}

// TestKind_AppendServedJSON_Kinds covers the kinds that set it: those
// whose reads decode (defaults, several versions), and not the others.
func TestKind_AppendServedJSON_Kinds(t *testing.T) {
	plain := strings.Replace(strings.Replace(servedJSONCRD, "default: 3", "minimum: 0", 1), "  - name: v2", "  - name: v2x", 1)
	plain = plain[:strings.Index(plain, "  - name: v2x")]
	for _, k := range testCRKinds(t, plain) {
		if k.AppendServedJSON == nil {
			t.Errorf("%s: AppendServedJSON not set with defaults in the schema", k.GVK)
		}
	}
	noDefaults := `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.fp.example.com}
spec:
  group: fp.example.com
  scope: Cluster
  names: {plural: gizmos, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}
`
	for _, k := range testCRKinds(t, noDefaults) {
		if k.AppendServedJSON != nil {
			t.Errorf("%s: AppendServedJSON set for a kind whose reads splice stored bytes", k.GVK)
		}
	}
}

// FuzzKind_AppendServedJSON checks that whenever the decode-free path
// answers, it answers what decoding does.
func FuzzKind_AppendServedJSON(f *testing.F) {
	kinds := testCRKinds(f, servedJSONCRD)
	f.Add(storedCR(f, fullWidget))
	f.Add(storedCR(f, `{"metadata":{"name":"w"},"spec":{"size":3,"nested":{"on":true}}}`))
	f.Add([]byte(`{"metadata":{"resourceVersion":"42","name":"a\u2028b"},"spec":{"size":1e2}}`))
	f.Add(storedCR(f, `{"metadata":{"name":"w"},"spec":{"labels":{"a":null},"list":[{"k":"a"}],"name":"n","tags":[null]}}`))
	f.Add(storedCR(f, `{"metadata":{"name":"w"},"other":1,"spec":{"a0":1,"list":[{"zz":1},{"k":"a","zz":2}],"mod":1,"nested":{"o":1},"z1":{"a":1}}}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		for _, k := range kinds {
			got, ok := k.AppendServedJSON(nil, value)
			if !ok {
				continue
			}
			want, err := decodedJSON(k, value)
			if err != nil {
				t.Fatalf("%s: AppendServedJSON(%q) answers; decoding fails: %v", k.GVK, value, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: AppendServedJSON(%q) =\n%s\nwant\n%s", k.GVK, value, got, want)
			}
		}
	})
}

// benchWidget is a stored object of about 1.4 KB, like the benchmark's
// custom resources, written under the schema.
func benchWidget(b *testing.B) []byte {
	return storedCR(b, `{"metadata":{"name":"l-1","namespace":"bench","uid":"d17482dc-d294-4bca-9e4d-e70e6f61b2e0","generation":1,"creationTimestamp":"2026-11-25T18:59:33Z",`+
		`"managedFields":[{"apiVersion":"fp.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:size":{},"f:name":{},"f:nested":{".":{},"f:on":{}}}},"manager":"bench","operation":"Update","time":"2026-11-25T18:59:33Z"}]},`+
		`"spec":{"size":3,"mode":"auto","name":"`+strings.Repeat("x", 1000)+`","nested":{"on":true},"tags":["a","b"],"list":[{"k":"a","v":1}]}}`)
}

func BenchmarkKind_AppendServedJSON(b *testing.B) {
	k := testCRKinds(b, servedJSONCRD)[0]
	value := benchWidget(b)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := k.AppendServedJSON(nil, value); !ok {
			b.Fatal("not served decode-free")
		}
	}
}

// BenchmarkKind_DecodeStoredJSON is the decoding path AppendServedJSON
// spares.
func BenchmarkKind_DecodeStoredJSON(b *testing.B) {
	k := testCRKinds(b, servedJSONCRD)[0]
	value := benchWidget(b)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodedJSON(k, value); err != nil {
			b.Fatal(err)
		}
	}
}
