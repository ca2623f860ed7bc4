package httpapi

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// maxTrackedEntries is the most entries one list or map of an object may
// have for its field ownership to be tracked. structured-merge-diff keeps
// the field sets of a map or associative list as sorted slices and inserts
// into them one by one, which is quadratic in the entries when they come
// unsorted (Go map order, or a list in the user's order): 100,000
// finalizers in reverse order took 28 s of memmove, 300,000 minutes.
// kube-apiserver uses the same library and has no such bound; at 10,000
// entries the quadratic part stays near 0.1 s.
const maxTrackedEntries = 10000

// boundedTypeConverter refuses, before structured-merge-diff sees them,
// objects with a list or map longer than maxTrackedEntries. The field
// manager then fails: an update (create, PUT, patch) is stored without
// managedFields, as kube-apiserver's FieldManager.UpdateNoErrors stores an
// object whose managed fields it cannot compute, and a server-side apply
// is refused with a 400 that names the field.
type boundedTypeConverter struct {
	managedfields.TypeConverter
}

func (c boundedTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if path, n, ok := oversized(reflect.ValueOf(obj), maxTrackedEntries); ok {
		return nil, fmt.Errorf("%s has %d entries, more than the %d for which field ownership is tracked", strings.TrimPrefix(strings.Join(path, ""), "."), n, maxTrackedEntries)
	}
	return c.TypeConverter.ObjectToTyped(obj, opts...)
}

// oversized finds the first list or map under v (a typed object, or the
// map[string]interface{} of an unstructured one) with more than max
// entries, and returns its path (JSON field names; ".name" and "[i]"
// elements) and length. Byte slices are scalars here, as they are to
// structured-merge-diff. It visits each value once, and allocates one
// value per map it walks.
func oversized(v reflect.Value, max int) (path []string, n int, ok bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, 0, false
		}
		return oversized(v.Elem(), max)
	case reflect.Struct:
		for _, f := range nestingFields(v.Type()) {
			if p, n, ok := oversized(v.Field(f.index), max); ok {
				if f.name != "" {
					p = append([]string{"." + f.name}, p...)
				}
				return p, n, true
			}
		}
	case reflect.Map:
		if v.Len() > max {
			return nil, v.Len(), true
		}
		if v.Len() == 0 || !mayNest(v.Type().Elem()) {
			return nil, 0, false
		}
		// A map value is not addressable: Value would copy each one into a
		// new allocation (a struct such as a JSONSchemaProps is about
		// 1 KB). They are copied into one value instead.
		elem := reflect.New(v.Type().Elem()).Elem()
		iter := v.MapRange()
		for iter.Next() {
			elem.SetIterValue(iter)
			if p, n, ok := oversized(elem, max); ok {
				return append([]string{"." + fmt.Sprint(iter.Key().Interface())}, p...), n, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil, 0, false
		}
		if v.Len() > max {
			return nil, v.Len(), true
		}
		if !mayNest(v.Type().Elem()) {
			return nil, 0, false
		}
		for i := 0; i < v.Len(); i++ {
			if p, n, ok := oversized(v.Index(i), max); ok {
				return append([]string{"[" + strconv.Itoa(i) + "]"}, p...), n, true
			}
		}
	}
	return nil, 0, false
}

// nestingField is a struct field that oversized looks into.
type nestingField struct {
	index int
	name  string // its JSON name; "" when inlined
}

// nestingFieldsByType caches nestingFields: reading a type's fields and
// tags takes longer than walking a value.
var nestingFieldsByType sync.Map // reflect.Type -> []nestingField

// nestingFields returns the exported fields of struct type t that can
// hold a list or a map and that JSON does not skip.
func nestingFields(t reflect.Type) []nestingField {
	if fs, ok := nestingFieldsByType.Load(t); ok {
		return fs.([]nestingField)
	}
	var fs []nestingField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || !mayNest(f.Type) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fs = append(fs, nestingField{index: i, name: name})
	}
	nestingFieldsByType.Store(t, fs)
	return fs
}

// mayNest reports whether values of type t can hold a list or a map.
func mayNest(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Struct, reflect.Map:
		return true
	case reflect.Slice, reflect.Array:
		return t.Elem().Kind() != reflect.Uint8
	}
	return false
}
