package httpapi

import (
	"encoding/binary"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/edgeapi/edgeapi/registry"
)

// One stored object in Protobuf, written by the transcoder (protojson.go)
// as kube's Protobuf serializer writes its typed form: the "k8s\x00"
// prefix, then a runtime.Unknown holding the object's apiVersion and kind
// (field 1), its Marshal (field 2), and the empty content encoding and
// type (fields 3 and 4). A GET and every watch event of a client that asks
// for Protobuf (client-go's typed clients and informers) took three
// quarters of the handler's CPU decoding the stored JSON into the typed
// struct first.

// protoMagic begins every Protobuf document of the API.
const protoMagic = "k8s\x00"

// appendProtoTypeMeta appends a runtime.Unknown's typeMeta (field 1).
func appendProtoTypeMeta(dst []byte, apiVersion, kind string) []byte {
	n := 1 + protowire.SizeBytes(len(apiVersion)) + 1 + protowire.SizeBytes(len(kind))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendString(dst, apiVersion)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendString(dst, kind)
}

// appendProtoUnknownEnd appends a runtime.Unknown's empty contentEncoding
// and contentType (fields 3 and 4), which kube's serializer always writes.
func appendProtoUnknownEnd(dst []byte) []byte {
	dst = protowire.AppendTag(dst, 3, protowire.BytesType)
	dst = protowire.AppendString(dst, "")
	dst = protowire.AppendTag(dst, 4, protowire.BytesType)
	return protowire.AppendString(dst, "")
}

// appendProtoObject appends the Protobuf document of the stored object
// value of kind k. ok is false, with dst as it was, when the transcoder
// leaves the object to the typed path (a kind it has no plan for, a value
// it is not sure of, or one that does not decode).
func appendProtoObject(dst []byte, k *registry.Kind, value []byte) (_ []byte, ok bool) {
	p := protoPlanFor(k)
	if p == nil {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, protoMagic...)
	dst = appendProtoTypeMeta(dst, k.GVK.GroupVersion().String(), k.GVK.Kind)
	b, err := appendProtoJSON(dst, 2, p, value)
	if err != nil {
		return dst[:start], false
	}
	return appendProtoUnknownEnd(b), true
}

// protoScratch holds a watch event's object while its frame is sized.
var protoScratch = sync.Pool{New: func() any { return new([]byte) }}

// protoEventStored is protoEvent for a stored object that the transcoder
// writes: the frame of a metav1.WatchEvent (its length, big-endian, in
// four bytes, then type as field 1 and the object as field 2, a
// RawExtension whose raw is field 1). ok is false when the transcoder
// leaves the object to the typed path.
func protoEventStored(typ string, k *registry.Kind, value []byte) (_ []byte, ok bool) {
	sp := protoScratch.Get().(*[]byte)
	defer protoScratch.Put(sp)
	inner, ok := appendProtoObject((*sp)[:0], k, value)
	*sp = inner[:0]
	if !ok {
		return nil, false
	}
	ext := 1 + protowire.SizeBytes(len(inner))
	n := 1 + protowire.SizeBytes(len(typ)) + 1 + protowire.SizeBytes(ext)
	b := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, typ)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(ext))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, inner)
	return b, true
}
