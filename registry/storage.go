package registry

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/edgeapi/edgeapi/internal/jsonstr"
	"github.com/edgeapi/edgeapi/store"
)

// This file is how a kind's objects are kept in the store: JSON of the
// storage version, without kind, apiVersion and resourceVersion.

// EncodeStorage returns the bytes the store keeps for obj: its JSON in the
// storage version, without kind and apiVersion (they are spliced back on
// the way out, and list items carry none).
func (k *Kind) EncodeStorage(obj runtime.Object) ([]byte, error) {
	if k.ToStorage != nil {
		var err error
		if obj, err = k.ToStorage(obj); err != nil {
			return nil, fmt.Errorf("convert to storage version: %w", err)
		}
	}
	// kind, apiVersion and resourceVersion are left out: the first two are
	// spliced in on the way out, the store stamps the last.
	if u, isU := obj.(*unstructured.Unstructured); isU {
		return encodeStoredUnstructured(u)
	}
	ok := obj.GetObjectKind()
	gvk := ok.GroupVersionKind()
	ok.SetGroupVersionKind(schema.GroupVersionKind{})
	m := Accessor(obj)
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	b, err := json.Marshal(obj)
	m.SetResourceVersion(rv)
	ok.SetGroupVersionKind(gvk)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	return b, nil
}

// DecodeStored decodes stored bytes into an object of k's served version,
// with kind and apiVersion set.
func (k *Kind) DecodeStored(value []byte) (runtime.Object, error) {
	var obj runtime.Object
	if k.Unstructured {
		u, err := decodeStoredUnstructured(value)
		if err != nil {
			return nil, fmt.Errorf("decode stored object: %w", err)
		}
		u.SetGroupVersionKind(k.GVK)
		if k.FromStorage == nil {
			return u, nil
		}
		return k.FromStorage(u)
	}
	if k.FromStorage != nil {
		o, err := Scheme.New(k.StorageGVK)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(value, o); err != nil {
			return nil, fmt.Errorf("decode stored object: %w", err)
		}
		if obj, err = k.FromStorage(o); err != nil {
			return nil, err
		}
	} else {
		obj = k.New()
		if err := json.Unmarshal(value, obj); err != nil {
			return nil, fmt.Errorf("decode stored object: %w", err)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(k.GVK)
	return obj, nil
}

// encodeStoredUnstructured is EncodeStorage for a custom resource: its
// content without kind, apiVersion and metadata.resourceVersion.
func encodeStoredUnstructured(u *unstructured.Unstructured) ([]byte, error) {
	if b, ok := appendStoredJSON(make([]byte, 0, 1024), u.Object); ok {
		return b, nil
	}
	m := make(map[string]interface{}, len(u.Object))
	for k, v := range u.Object {
		if k != "kind" && k != "apiVersion" {
			m[k] = v
		}
	}
	if md, ok := u.Object["metadata"].(map[string]interface{}); ok {
		if _, has := md["resourceVersion"]; has {
			c := make(map[string]interface{}, len(md))
			for k, v := range md {
				if k != "resourceVersion" {
					c[k] = v
				}
			}
			m["metadata"] = c
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode object: %w", err)
	}
	return b, nil
}

// appendStoredJSON appends what encodeStoredUnstructured stores for obj,
// with appendJSON; false when appendJSON cannot encode it.
func appendStoredJSON(dst []byte, obj map[string]interface{}) ([]byte, bool) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if k != "kind" && k != "apiVersion" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, k)
		dst = append(dst, ':')
		var ok bool
		if md, isMap := obj[k].(map[string]interface{}); isMap && k == "metadata" {
			dst, ok = appendJSONObject(dst, md, "resourceVersion")
		} else {
			dst, ok = appendJSON(dst, obj[k])
		}
		if !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// Accessor returns obj's metadata accessor; every registered kind has one.
func Accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}

// StoreKey is the store key of the kind's object namespace/name; the
// namespace is dropped for cluster-scoped kinds.
func (k *Kind) StoreKey(namespace, name string) store.Key {
	if !k.Namespaced {
		namespace = ""
	}
	return store.Key{Resource: k.StorageResource, Namespace: namespace, Name: name}
}

// HasDeletionTimestamp reports whether a stored value has
// metadata.deletionTimestamp.
func HasDeletionTimestamp(value []byte) bool {
	var m struct {
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return json.Unmarshal(value, &m) == nil && m.Metadata.DeletionTimestamp != nil
}
