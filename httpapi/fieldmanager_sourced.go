package httpapi

import (
	goruntime "runtime"
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// sourcedTypeConverter remembers the typed object (a built-in kind's, not
// an unstructured one) each typed value it made was read from, and answers
// TypedToObject of that value with a copy of the object. structured-merge-
// diff's version converter calls TypedToObject on the live object of every
// update and apply, once per manager, only to read its apiVersion when it
// is the manager's; the scheme's type converter builds the object's whole
// unstructured form for that (about 15 µs for a 1 KiB ConfigMap, a tenth of
// the field manager's work on a PUT), where a deep copy of the typed object
// takes a few hundred nanoseconds. For another apiVersion the copy is
// converted as the unstructured form would be: the scheme decodes an
// unstructured object into the same typed one first.
//
// The values are weak keys: an entry goes when its typed value is
// collected, so an object outlives its request by one garbage collection
// cycle (the cleanup runs after the cycle that freed the typed value).
// Objects without apiVersion and kind are not remembered (the
// unstructured form would have none, the typed object has its Go type).
type sourcedTypeConverter struct {
	managedfields.TypeConverter

	// mu guards sources.
	mu      sync.Mutex
	sources map[weak.Pointer[typed.TypedValue]]runtime.Object
}

func newSourcedTypeConverter(tc managedfields.TypeConverter) *sourcedTypeConverter {
	return &sourcedTypeConverter{TypeConverter: tc, sources: make(map[weak.Pointer[typed.TypedValue]]runtime.Object)}
}

func (c *sourcedTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
	if err != nil || tv == nil {
		return tv, err
	}
	if _, isU := obj.(runtime.Unstructured); isU || obj.GetObjectKind().GroupVersionKind().Empty() {
		return tv, nil
	}
	key := weak.Make(tv)
	c.mu.Lock()
	c.sources[key] = obj
	c.mu.Unlock()
	goruntime.AddCleanup(tv, c.forget, key)
	return tv, nil
}

func (c *sourcedTypeConverter) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	c.mu.Lock()
	obj, ok := c.sources[weak.Make(tv)]
	c.mu.Unlock()
	if ok {
		return obj.DeepCopyObject(), nil
	}
	return c.TypeConverter.TypedToObject(tv)
}

// forget drops the entry of a collected typed value.
func (c *sourcedTypeConverter) forget(key weak.Pointer[typed.TypedValue]) {
	c.mu.Lock()
	delete(c.sources, key)
	c.mu.Unlock()
}

// len is the number of typed values remembered, for tests.
func (c *sourcedTypeConverter) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sources)
}
