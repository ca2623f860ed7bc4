package httpapi

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"google.golang.org/protobuf/encoding/protowire"
	"sigs.k8s.io/randfill"

	"github.com/edgeapi/edgeapi/registry"
)

// transcodedKinds returns the built-in kinds whose stored objects the
// transcoder writes, and the names of those it leaves to the typed path.
func transcodedKinds(t testing.TB) (kinds []*registry.Kind, typed []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, k := range registry.Builtin().Kinds() {
		name := k.GVK.String()
		if seen[name] {
			continue
		}
		seen[name] = true
		if protoPlanFor(k) == nil {
			typed = append(typed, name)
			continue
		}
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b *registry.Kind) int { return cmpString(a.GVK.String(), b.GVK.String()) })
	return kinds, typed
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// protoFiller fills objects of the built-in kinds with random values
// (apimachinery's API fuzzer), seeded with seed.
func protoFiller(seed int64) *randfill.Filler {
	// JSON's raw bytes must be JSON (a CRD's defaults and examples).
	rawJSON := func(serializer.CodecFactory) []any {
		return []any{func(j *apiextensionsv1.JSON, c randfill.Continue) {
			j.Raw = fmt.Appendf(nil, `{"n":%d,"s":%q}`, c.Int63(), c.String(0))
		}}
	}
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, rawJSON), rand.NewSource(seed), serializer.NewCodecFactory(registry.Scheme))
	return f.NilChance(0.3).NumElements(0, 3).MaxDepth(12)
}

// TestProtoTranscoder_MatchesTyped fills objects of every built-in kind
// with random values, stores them as JSON, and checks that the
// transcoder writes each as the typed object's generated Marshal does.
func TestProtoTranscoder_MatchesTyped(t *testing.T) {
	kinds, typed := transcodedKinds(t)
	t.Logf("transcoded: %d kinds; typed path: %v", len(kinds), typed)
	if len(kinds) < 10 {
		t.Fatalf("transcoded kinds = %d, want at least 10 (typed path: %v)", len(kinds), typed)
	}
	f := protoFiller(13)
	for _, k := range kinds {
		t.Run(k.GVK.Kind+"."+k.GVK.Group, func(t *testing.T) {
			for i := range 300 {
				obj := k.New()
				f.Fill(obj)
				value, err := json.Marshal(obj)
				if err != nil {
					t.Fatalf("marshal %d: %v", i, err)
				}
				want, err := appendProtoItemTyped(nil, k, value)
				if err != nil {
					t.Fatalf("object %d: typed path: %v", i, err)
				}
				got, err := appendProtoJSON(nil, 2, protoPlanFor(k), value)
				if err != nil {
					t.Fatalf("object %d: transcode %s: %v", i, value, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("object %d: %s\ntranscoded %x\ntyped      %x", i, value, got, want)
				}
				checkItemSize(t, k, value, got)
			}
		})
	}
}

// itemMessage returns the message of a list item as appendProtoItem
// writes it: field 2, length-delimited.
func itemMessage(t testing.TB, item []byte) []byte {
	t.Helper()
	if len(item) == 0 || item[0] != 2<<3|2 {
		t.Fatalf("item %x: not field 2 of wire type bytes", item)
	}
	msg, n := protowire.ConsumeBytes(item[1:])
	if n != len(item)-1 {
		t.Fatalf("item %x: length prefix %d does not span the item", item, n)
	}
	return msg
}

// checkItemSize checks that the size-only walks give the size of item,
// which appendProtoItem wrote for value: protoItemSize, and
// protoJSONSize when the transcoder writes value.
func checkItemSize(t testing.TB, k *registry.Kind, value, item []byte) {
	t.Helper()
	want := len(itemMessage(t, item))
	got, err := protoItemSize(k, value)
	if err != nil || got != want {
		t.Fatalf("%s %q: protoItemSize = %d, %v; encoded %d", k.GVK.Kind, value, got, err, want)
	}
	if p := protoPlanFor(k); p != nil {
		_, encErr := appendProtoJSON(nil, 2, p, value)
		n, err := protoJSONSize(p, value)
		if (err == nil) != (encErr == nil) || err == nil && n != want {
			t.Fatalf("%s %q: protoJSONSize = %d, %v; appendProtoJSON error %v, encoded %d", k.GVK.Kind, value, n, err, encErr, want)
		}
	}
}

// TestProtoItemSize_TypedKinds checks protoItemSize on the random objects
// of the kinds the transcoder leaves to the typed path.
func TestProtoItemSize_TypedKinds(t *testing.T) {
	_, typed := transcodedKinds(t)
	f := protoFiller(13)
	checked := 0
	for _, k := range registry.Builtin().Kinds() {
		if !slices.Contains(typed, k.GVK.String()) {
			continue
		}
		for range 50 {
			obj := k.New()
			f.Fill(obj)
			value, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			item, err := appendProtoItem(nil, k, value)
			if err != nil {
				continue // not an object the kind stores
			}
			checkItemSize(t, k, value, item)
			checked++
		}
	}
	t.Logf("typed path: %d kinds, %d objects", len(typed), checked)
}

// TestProtoTranscoder_Table checks stored values a random fill does not
// make: unknown members, nulls, empty and missing maps, managedFields,
// escapes, and the values the transcoder leaves to the typed path, for
// which appendProtoItem still writes the typed bytes.
func TestProtoTranscoder_Table(t *testing.T) {
	reg := registry.Builtin()
	var cm, role *registry.Kind
	for _, k := range reg.Kinds() {
		switch k.GVK.String() {
		case "/v1, Kind=ConfigMap":
			cm = k
		case "rbac.authorization.k8s.io/v1, Kind=Role":
			role = k
		}
	}
	if cm == nil || role == nil {
		t.Fatal("ConfigMap or Role not registered")
	}
	tests := []struct {
		name     string
		kind     *registry.Kind
		value    string
		fallback bool // left to the typed path
	}{
		{"stored", cm, `{"metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"5","creationTimestamp":"2026-11-26T00:00:00Z","labels":{"b":"2","a":"1"},"managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","time":"2026-11-26T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]},"data":{"k":"v","a":""}}`, false},
		{"empty", cm, `{}`, false},
		{"null", cm, `null`, false},
		{"whitespace", cm, " \n{ \"data\" : { \"k\" : \"v\" } , \"metadata\":{} }\t", false},
		{"empty maps", cm, `{"metadata":{"labels":{},"annotations":{}},"data":{},"binaryData":{}}`, false},
		{"null members", cm, `{"metadata":{"name":null,"labels":null,"creationTimestamp":null,"deletionTimestamp":null,"managedFields":null},"data":null,"immutable":null}`, false},
		{"null map value", cm, `{"data":{"k":null}}`, false},
		{"binary", cm, `{"binaryData":{"b":"AAEC","e":""},"immutable":false}`, false},
		{"null binary", cm, `{"binaryData":{"n":null,"b":"AA=="}}`, false},
		{"deep unknown", cm, `{"x":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`, true},
		{"unknown members", cm, `{"extra":{"deep":[1,2.5e3,{"x":null}],"s":"\u00e9"},"data":{"k":"v"},"metadata":{"zzz":true}}`, false},
		{"kind and apiVersion", cm, `{"kind":"ConfigMap","apiVersion":"v1","data":{"k":"v"}}`, false},
		{"escapes", cm, `{"metadata":{"name":"a\"b\\c\u0041\n"},"data":{"k\u00e9y":"\ud83d\ude00 \u2028"}}`, false},
		{"invalid UTF-8", cm, "{\"data\":{\"k\":\"a\xffb\"}}", false},
		{"rules", role, `{"metadata":{"name":"r"},"rules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"]},{"verbs":[],"nonResourceURLs":["/x"]}]}`, false},
		{"duplicate key", cm, `{"data":{"k":"v"},"data":{"j":"w"}}`, true},
		{"duplicate map key", cm, `{"data":{"k":"v","k":"w"}}`, true},
		{"folded key", cm, `{"Data":{"k":"v"}}`, true},
		{"null in list", role, `{"rules":[null]}`, true},
		{"wrong type", cm, `{"immutable":"yes"}`, true},
		{"bad kind", cm, `{"kind":5}`, true},
		{"trailing", cm, `{"data":{}} x`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := appendProtoItemTyped(nil, tt.kind, []byte(tt.value))
			got, err := appendProtoJSON(nil, 2, protoPlanFor(tt.kind), []byte(tt.value))
			if gotFallback := err != nil; gotFallback != tt.fallback {
				t.Fatalf("transcode error = %v, want fallback %v", err, tt.fallback)
			}
			if err == nil && (wantErr != nil || !bytes.Equal(got, want)) {
				t.Errorf("transcoded %x, typed %x (%v)", got, want, wantErr)
			}
			got, err = appendProtoItem(nil, tt.kind, []byte(tt.value))
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !bytes.Equal(got, want) {
				t.Errorf("appendProtoItem = %x, %v; typed %x, %v", got, err, want, wantErr)
			}
			if err == nil {
				checkItemSize(t, tt.kind, []byte(tt.value), got)
			}
		})
	}
}

// FuzzProtoTranscoder holds the transcoder to the typed path on any
// stored bytes: whenever it writes an object, the typed path writes the
// same bytes.
func FuzzProtoTranscoder(f *testing.F) {
	kinds, _ := transcodedKinds(f)
	for _, s := range []string{
		`{"metadata":{"name":"a","labels":{"a":"1"},"creationTimestamp":"2026-11-26T00:00:00Z"},"data":{"k":"v"}}`,
		`{"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"]}]}`,
		`{"subjects":[{"kind":"User","name":"u"}],"roleRef":{"kind":"Role","name":"r","apiGroup":"rbac.authorization.k8s.io"}}`,
		`{"spec":{"holderIdentity":"x","leaseDurationSeconds":15,"renewTime":"2026-11-26T00:00:00.000000Z"}}`,
		`{"type":"Opaque","data":{"k":"dg=="},"stringData":{"a":"b"}}`,
		`{"metadata":{"finalizers":["a"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"n","uid":"u","controller":true}]}}`,
	} {
		for i := range kinds {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, value []byte, ki uint8) {
		k := kinds[int(ki)%len(kinds)]
		got, err := appendProtoJSON(nil, 2, protoPlanFor(k), value)
		if n, serr := protoJSONSize(protoPlanFor(k), value); (serr == nil) != (err == nil) || err == nil && n != len(itemMessage(t, got)) {
			t.Fatalf("%s %q: protoJSONSize = %d, %v; appendProtoJSON %x, %v", k.GVK.Kind, value, n, serr, got, err)
		}
		if err != nil {
			if item, err := appendProtoItem(nil, k, value); err == nil {
				checkItemSize(t, k, value, item)
			}
			return
		}
		want, err := appendProtoItemTyped(nil, k, value)
		if err != nil {
			t.Fatalf("%s %q: transcoded %x, typed path failed: %v", k.GVK.Kind, value, got, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s %q:\ntranscoded %x\ntyped      %x", k.GVK.Kind, value, got, want)
		}
	})
}

// BenchmarkAppendProtoItem encodes one stored ConfigMap of about 1.4 KB
// (metadata with labels and a managedFields entry, a 1,000-byte value)
// as a list item, through the transcoder and through the typed object.
func BenchmarkAppendProtoItem(b *testing.B) {
	var cm *registry.Kind
	for _, k := range registry.Builtin().Kinds() {
		if k.GVK.String() == "/v1, Kind=ConfigMap" {
			cm = k
		}
	}
	value := []byte(`{"metadata":{"name":"cm-00001","namespace":"bench","uid":"00000001-0000-4000-8000-000000000000","resourceVersion":"17","creationTimestamp":"2026-11-26T00:00:00Z","labels":{"app":"bench"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-26T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]},"data":{"k":"` + strings.Repeat("x", 1000) + `"}}`)
	for _, tc := range []struct {
		name string
		fn   func(dst []byte) ([]byte, error)
	}{
		{"transcoder", func(dst []byte) ([]byte, error) { return appendProtoJSON(dst, 2, protoPlanFor(cm), value) }},
		{"typed", func(dst []byte) ([]byte, error) { return appendProtoItemTyped(dst, cm, value) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var dst []byte
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = tc.fn(dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHasStringSpecial checks the eight-byte test against the byte table:
// every byte value at every position of otherwise plain words, and
// random words.
func TestHasStringSpecial(t *testing.T) {
	check := func(w [8]byte) {
		want := false
		for _, c := range w {
			want = want || jsonStringSpecial[c]
		}
		if got := hasStringSpecial(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("hasStringSpecial(%q) = %v, want %v", w[:], got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{'a', ' ', '~', '!', '#', '[', ']', 0x21, 0x7f} {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	r := rand.New(rand.NewSource(13))
	for range 1_000_000 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		for i := range w {
			// Mostly plain bytes, so that few words have many specials.
			if r.Intn(4) > 0 {
				w[i] = byte(0x20 + r.Intn(0x60))
			}
		}
		check(w)
	}
}
