package httpapi

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// The managedFields a create of a custom resource gets (field manager
// Update of an empty live object, no managedFields in the body) depend on
// the object's shape only: the paths of its fields and, for type checks,
// the JSON type of each value, plus apiVersion, kind and the manager; the
// field manager then stamps the time. Computing them takes
// structured-merge-diff about 60 µs for a 20-field object (typing the
// object, comparing it with the empty one, encoding the field set,
// converting the entry to unstructured). createManagers keeps the
// managedFields each field manager computed for each shape, and gives the
// next create of that shape a copy with the current time.

const (
	// createShapeMaxBytes is the longest shape key kept: bigger objects
	// always take the field manager.
	createShapeMaxBytes = 4 << 10
	// createManagedMaxBytes bounds the cache, counting each entry as
	// twice its key (the key, and managedFields of about its size) plus
	// createManagedEntryBytes; it is emptied when full.
	createManagedMaxBytes   = 4 << 20
	createManagedEntryBytes = 256
)

// createManagers is the cache, for all field managers.
type createManagers struct {
	// mu guards entries and bytes.
	mu      sync.Mutex
	entries map[createManagedKey]createManagedEntry
	bytes   int
}

// createManagedKey is a field manager (one per served kind and
// subresource) and a shape.
type createManagedKey struct {
	fm    *managedfields.FieldManager
	shape string
}

// createManagedEntry is what the field manager made of one shape.
type createManagedEntry struct {
	// managedFields is the metadata.managedFields value set (a list of
	// one entry), nil when the field manager set none.
	managedFields []interface{}
	// typed is the managedFields of a typed object: none, or one entry
	// whose time each copy replaces.
	typed []metav1.ManagedFieldsEntry
}

var shapeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// updateCreate is fm.UpdateNoErrors(live, obj, manager) for obj being
// created (live is the kind's empty object), taken from the cache when
// the field manager has seen an object of the same shape.
func (c *createManagers) updateCreate(fm *managedfields.FieldManager, live, obj runtime.Object, manager string) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return c.updateCreateTyped(fm, live, obj, manager)
	}
	bp := shapeBufs.Get().(*[]byte)
	defer shapeBufs.Put(bp)
	key, ok := createShape((*bp)[:0], u, manager)
	*bp = key[:0]
	if !ok {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	c.mu.Lock()
	e, hit := c.entries[createManagedKey{fm, string(key)}]
	c.mu.Unlock()
	if hit {
		if e.managedFields != nil {
			mf := runtime.DeepCopyJSONValue(e.managedFields).([]interface{})
			now := time.Now().UTC().Format(time.RFC3339)
			for _, entry := range mf {
				entry.(map[string]interface{})["time"] = now
			}
			md, ok := u.Object["metadata"].(map[string]interface{})
			if !ok {
				md = map[string]interface{}{}
				u.Object["metadata"] = md
			}
			md["managedFields"] = mf
		}
		return u
	}
	out := fm.UpdateNoErrors(live, obj, manager)
	ou, ok := out.(*unstructured.Unstructured)
	if !ok {
		return out
	}
	mf, found, err := unstructured.NestedFieldNoCopy(ou.Object, "metadata", "managedFields")
	var entry createManagedEntry
	switch list, isList := mf.([]interface{}); {
	case err != nil:
		return out
	case !found:
	case isList && len(list) == 1:
		m, isMap := list[0].(map[string]interface{})
		if !isMap {
			return out
		}
		if _, hasTime := m["time"].(string); !hasTime {
			return out
		}
		entry.managedFields = runtime.DeepCopyJSONValue(list).([]interface{})
	default:
		return out
	}
	c.add(createManagedKey{fm, string(key)}, entry)
	return out
}

// updateCreateTyped is updateCreate for a typed object (a built-in kind).
// Its shape is taken from its encoding/json form, which has the fields
// and values structured-merge-diff reads from the Go struct (both follow
// the JSON tags, omitempty and the types' own JSON encodings); the ~30 µs
// the field manager takes for a ConfigMap become a few on a hit.
func (c *createManagers) updateCreateTyped(fm *managedfields.FieldManager, live, obj runtime.Object, manager string) runtime.Object {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetManagedFields() != nil {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	if _, has := m.GetAnnotations()[lastAppliedAnnotation]; has {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	bp := shapeBufs.Get().(*[]byte)
	defer shapeBufs.Put(bp)
	key, ok := typedCreateShape((*bp)[:0], js, manager)
	*bp = key[:0]
	if !ok {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	c.mu.Lock()
	e, hit := c.entries[createManagedKey{fm, string(key)}]
	c.mu.Unlock()
	if hit {
		if e.typed != nil {
			mf := copyManagedEntries(e.typed)
			now := &metav1.Time{Time: time.Now().UTC()}
			for i := range mf {
				mf[i].Time = now
			}
			m.SetManagedFields(mf)
		}
		return obj
	}
	out := fm.UpdateNoErrors(live, obj, manager)
	om, err := meta.Accessor(out)
	if err != nil {
		return out
	}
	var entry createManagedEntry
	switch mf := om.GetManagedFields(); {
	case mf == nil:
	case len(mf) == 1 && mf[0].Time != nil:
		entry.typed = copyManagedEntries(mf)
	default:
		return out
	}
	c.add(createManagedKey{fm, string(key)}, entry)
	return out
}

// typedCreateShape appends to dst the shape key of js, the encoding/json
// form of a typed object, for manager: the manager, then js with each
// scalar in an object reduced to its JSON type but apiVersion and kind
// kept whole, and arrays kept whole, as createShape does for unstructured
// objects. encoding/json writes a Go type's fields in one order and map
// keys sorted, so the same shape always gives the same key. It reports
// false for a key longer than createShapeMaxBytes.
func typedCreateShape(dst, js []byte, manager string) ([]byte, bool) {
	dst = strconv.AppendQuote(dst, manager)
	dst, end, ok := appendJSONShape(dst, js, 0, true)
	return dst, ok && end == len(js) && len(dst) <= createShapeMaxBytes
}

// appendJSONShape appends the shape of the object at js[i] (compact
// JSON): members' keys as they are, scalar values reduced to s (string),
// d (number), b (boolean) or z (null), objects recursively, arrays whole;
// at the top (top set) apiVersion and kind are whole too. It returns the
// index past the object.
func appendJSONShape(dst, js []byte, i int, top bool) ([]byte, int, bool) {
	if i >= len(js) || js[i] != '{' {
		return dst, i, false
	}
	dst = append(dst, '{')
	i++
	if i < len(js) && js[i] == '}' {
		return append(dst, '}'), i + 1, true
	}
	for i < len(js) {
		if js[i] != '"' {
			return dst, i, false
		}
		keyEnd := skipJSONString(js, i)
		if keyEnd < 0 || keyEnd >= len(js) || js[keyEnd] != ':' {
			return dst, i, false
		}
		key := js[i:keyEnd]
		dst = append(dst, key...)
		dst = append(dst, ':')
		i = keyEnd + 1
		if i >= len(js) {
			return dst, i, false
		}
		whole := top && (string(key) == `"apiVersion"` || string(key) == `"kind"`)
		switch c := js[i]; {
		case c == '{':
			var ok bool
			if dst, i, ok = appendJSONShape(dst, js, i, false); !ok {
				return dst, i, false
			}
		default:
			end := skipJSONValue(js, i)
			if end < 0 {
				return dst, i, false
			}
			switch {
			case whole || c == '[':
				dst = append(dst, js[i:end]...)
			case c == '"':
				dst = append(dst, 's')
			case c == 't' || c == 'f':
				dst = append(dst, 'b')
			case c == 'n':
				dst = append(dst, 'z')
			default:
				dst = append(dst, 'd')
			}
			i = end
		}
		if len(dst) > createShapeMaxBytes || i >= len(js) {
			return dst, i, false
		}
		switch js[i] {
		case ',':
			dst = append(dst, ',')
			i++
		case '}':
			return append(dst, '}'), i + 1, true
		default:
			return dst, i, false
		}
	}
	return dst, i, false
}

// copyManagedEntries deep-copies entries.
func copyManagedEntries(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i := range entries {
		entries[i].DeepCopyInto(&out[i])
	}
	return out
}

// add keeps entry for key, emptying the cache first when it is full.
func (c *createManagers) add(k createManagedKey, entry createManagedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := 2*len(k.shape) + createManagedEntryBytes
	if c.entries == nil || c.bytes+size > createManagedMaxBytes {
		c.entries = map[createManagedKey]createManagedEntry{}
		c.bytes = 0
	}
	if _, ok := c.entries[k]; !ok {
		c.entries[k] = entry
		c.bytes += size
	}
}

// lastAppliedAnnotation is kubectl's client-side apply annotation, which
// the field manager reads.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// createShape appends to dst the shape key of u for manager: the manager,
// then u's values with map keys sorted, each scalar in a map reduced to
// its JSON type (what the field manager's result depends on: field
// paths, and types for its type check), apiVersion and kind kept whole,
// and lists kept whole (their items are keys, or set members, in some
// list types). It reports false for an object the field manager reads
// more of (managedFields or the last-applied annotation in the body), or
// too big to keep.
func createShape(dst []byte, u *unstructured.Unstructured, manager string) ([]byte, bool) {
	if md, ok := u.Object["metadata"].(map[string]interface{}); ok {
		if _, has := md["managedFields"]; has {
			return dst, false
		}
		if ann, ok := md["annotations"].(map[string]interface{}); ok {
			if _, has := ann[lastAppliedAnnotation]; has {
				return dst, false
			}
		}
	} else if _, has := u.Object["metadata"]; has {
		return dst, false
	}
	dst = strconv.AppendQuote(dst, manager)
	dst = append(dst, '{')
	keys := sortedMapKeys(u.Object)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendQuote(dst, k)
		dst = append(dst, ':')
		v := u.Object[k]
		var ok bool
		if s, isString := v.(string); isString && (k == "apiVersion" || k == "kind") {
			dst = strconv.AppendQuote(dst, s)
			ok = true
		} else {
			dst, ok = appendShape(dst, v, false)
		}
		if !ok || len(dst) > createShapeMaxBytes {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendShape appends v's shape: scalars reduced to their type unless
// whole (inside a list), maps with sorted keys, lists whole.
func appendShape(dst []byte, v interface{}, whole bool) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, 'n'), true
	case string:
		if whole {
			return strconv.AppendQuote(append(dst, 's'), v), true
		}
		return append(dst, 's'), true
	case bool:
		if whole {
			return strconv.AppendBool(append(dst, 'b'), v), true
		}
		return append(dst, 'b'), true
	case int64:
		if whole {
			return strconv.AppendInt(append(dst, 'i'), v, 10), true
		}
		return append(dst, 'i'), true
	case float64:
		if whole {
			return strconv.AppendFloat(append(dst, 'f'), v, 'g', -1, 64), true
		}
		return append(dst, 'f'), true
	case map[string]interface{}:
		dst = append(dst, '{')
		for i, k := range sortedMapKeys(v) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendQuote(dst, k)
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendShape(dst, v[k], whole); !ok || len(dst) > createShapeMaxBytes {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []interface{}:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendShape(dst, e, true); !ok || len(dst) > createShapeMaxBytes {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// sortedMapKeys returns m's keys in order.
func sortedMapKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
