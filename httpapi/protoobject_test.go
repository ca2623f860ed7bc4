package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendProtoObject fills objects of every kind the transcoder writes
// with random values, stores them as JSON, and checks that a GET's
// document and a watch event's frame are the bytes of the typed path
// (kube's Protobuf serializer on the decoded object, protoEvent).
func TestAppendProtoObject(t *testing.T) {
	s := &Server{codecs: newCodecs()}
	kinds, _ := transcodedKinds(t)
	f := protoFiller(29)
	for _, k := range kinds {
		t.Run(k.GVK.Kind+"."+k.GVK.Group, func(t *testing.T) {
			for i := range 100 {
				obj := k.New()
				f.Fill(obj)
				value, err := json.Marshal(obj)
				if err != nil {
					t.Fatalf("marshal %d: %v", i, err)
				}
				typed, err := k.DecodeStored(value)
				if err != nil {
					t.Fatalf("object %d: decode: %v", i, err)
				}
				var want bytes.Buffer
				if err := s.codecs.proto.Encode(typed, &want); err != nil {
					t.Fatalf("object %d: typed encode: %v", i, err)
				}
				got, ok := appendProtoObject([]byte("x"), k, value)
				if !ok {
					t.Fatalf("object %d: the transcoder gave up on %s", i, value)
				}
				if !bytes.Equal(got[1:], want.Bytes()) || got[0] != 'x' {
					t.Fatalf("object %d: %s\ntranscoded %x\ntyped       %x", i, value, got[1:], want.Bytes())
				}
				for _, typ := range []string{"ADDED", "MODIFIED", "DELETED"} {
					wantEv, err := s.protoEvent(typ, typed)
					if err != nil {
						t.Fatal(err)
					}
					gotEv, ok := protoEventStored(typ, k, value)
					if !ok || !bytes.Equal(gotEv, wantEv) {
						t.Fatalf("object %d: %s event\ntranscoded %x\ntyped      %x", i, typ, gotEv, wantEv)
					}
				}
			}
		})
	}
}

// TestAppendProtoObject_Fallback: a value the transcoder is not sure of
// leaves dst as it was and reports it, so that the typed path writes it.
func TestAppendProtoObject_Fallback(t *testing.T) {
	kinds, _ := transcodedKinds(t)
	k := kinds[0]
	for _, value := range []string{
		`{"metadata":{"name":"a","name":"b"}}`, // a duplicate key
		`{"metadata":{"name":"a"}} x`,          // trailing bytes
		`not json`,
	} {
		got, ok := appendProtoObject([]byte("keep"), k, []byte(value))
		if ok || string(got) != "keep" {
			t.Errorf("appendProtoObject(%s) = %q, %v; want dst unchanged and false", value, got, ok)
		}
		if ev, ok := protoEventStored("ADDED", k, []byte(value)); ok || ev != nil {
			t.Errorf("protoEventStored(%s) = %x, %v; want nil and false", value, ev, ok)
		}
	}
}

// TestServedProtoObject: a GET's Protobuf document comes from the served
// cache the second time, and is the transcoder's; a changed object (a new
// resourceVersion) gets its own document, not the cached one.
func TestServedProtoObject(t *testing.T) {
	kinds, _ := transcodedKinds(t)
	k := kinds[0]
	obj := k.New()
	protoFiller(31).Fill(obj)
	value, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := appendProtoObject(nil, k, value)
	if !ok {
		t.Fatalf("the transcoder gave up on %s", value)
	}
	first, ok := servedProtoObject(k, value)
	if !ok || !bytes.Equal(first, want) {
		t.Fatalf("first: got %x, want %x", first, want)
	}
	second, ok := servedProtoObject(k, bytes.Clone(value))
	if !ok || !bytes.Equal(second, want) {
		t.Fatalf("second: got %x, want %x", second, want)
	}
	if &second[0] != &first[0] {
		t.Errorf("second: got a new document, want the cached one")
	}
	obj2 := k.New()
	protoFiller(32).Fill(obj2)
	value2, err := json.Marshal(obj2)
	if err != nil {
		t.Fatal(err)
	}
	want2, _ := appendProtoObject(nil, k, value2)
	got2, ok := servedProtoObject(k, value2)
	if !ok || !bytes.Equal(got2, want2) || bytes.Equal(got2, want) {
		t.Errorf("changed object: got %x, want %x", got2, want2)
	}
}
