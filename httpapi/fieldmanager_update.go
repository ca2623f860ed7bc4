package httpapi

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// The managedFields an update (PUT, or a patch other than apply) of a
// built-in kind gets from the field manager depend on: the field manager
// (kind and subresource), the manager, the live object's managedFields,
// the shapes of the live and the new object (their field paths, the JSON
// type of each scalar, lists whole), and which scalars of the new object
// equal the live object's at the same path (structured-merge-diff's
// comparison); then on times: the manager's entry gets the current time
// when the update changed anything, the other entries keep theirs, and
// the entries are sorted by operation, time and manager. Typing both
// objects, validating and comparing them and re-encoding the field sets
// takes structured-merge-diff about 50 µs for a 1 KiB ConfigMap.
// updateManagers keeps, for each such key, the entries the field manager
// gave with where each time came from, and gives the next update with the
// same key those entries with the times put back and sorted as the field
// manager sorts them.
//
// What is left to the field manager: custom resources (unstructured),
// objects of another kind or version than the field manager's,
// live objects without managedFields or uid, or with entries of another
// apiVersion, bodies with managedFields
// other than the live object's, the last-applied annotation, objects
// with a number that is not a plain integer (structured-merge-diff
// compares floats by value, not by their text), nine or more live entries
// (the field manager merges the oldest update entries beyond ten, by
// time), and keys over updateKeyMaxBytes.

const (
	// updateKeyMaxBytes is the longest key kept.
	updateKeyMaxBytes = 8 << 10
	// DefaultUpdateCacheBytes bounds the cache unless
	// Config.UpdateCacheBytes says otherwise, counting each entry as
	// twice its key plus createManagedEntryBytes; it is emptied when full.
	DefaultUpdateCacheBytes = 4 << 20
	// updateMaxLiveEntries is the most live entries taken: the field
	// manager caps update entries at managedfields' ten by time.
	updateMaxLiveEntries = 8
)

// updateManagers is the cache, for all field managers.
type updateManagers struct {
	// mu guards entries and bytes.
	mu      sync.Mutex
	entries map[updateManagedKey][]updateEntry
	bytes   int
	// maxBytes bounds bytes (DefaultUpdateCacheBytes when zero).
	maxBytes int
	// hits counts the updates the cache answered, for tests.
	hits int
}

// updateManagedKey is a field manager and the key of one update.
type updateManagedKey struct {
	fm  *managedfields.FieldManager
	key string
}

// updateEntry is one managedFields entry the field manager gave, its time
// aside.
type updateEntry struct {
	entry metav1.ManagedFieldsEntry
	// timeFrom is where the time comes from: updateTimeNow (the time of
	// the update), updateTimeNone (no time) or the index of the live
	// entry whose time it keeps.
	timeFrom int
}

const (
	updateTimeNow  = -1
	updateTimeNone = -2
)

// update is fm.UpdateNoErrors(live, obj, manager) for fm, the field
// manager of kind gvk, taken from the cache when the field manager has
// seen an update with the same key.
func (c *updateManagers) update(fm *managedfields.FieldManager, gvk schema.GroupVersionKind, live, obj runtime.Object, manager string) runtime.Object {
	// The field manager sets the kind of objects of another one (its
	// conversion to its version).
	if live.GetObjectKind().GroupVersionKind() != gvk || obj.GetObjectKind().GroupVersionKind() != gvk {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	lm, err := meta.Accessor(live)
	if err != nil {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	if _, isU := obj.(runtime.Unstructured); isU {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	if _, isU := live.(runtime.Unstructured); isU {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	om, err := meta.Accessor(obj)
	if err != nil {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	liveEntries := lm.GetManagedFields()
	if len(liveEntries) == 0 || len(liveEntries) > updateMaxLiveEntries || lm.GetUID() == "" ||
		(om.GetManagedFields() != nil && !sameManagedEntries(om.GetManagedFields(), liveEntries)) {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	if _, has := lm.GetAnnotations()[lastAppliedAnnotation]; has {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	// Entries of another apiVersion are compared in theirs, after a
	// conversion that may read values.
	gv := gvk.GroupVersion().String()
	for _, e := range liveEntries {
		if e.APIVersion != gv {
			return fm.UpdateNoErrors(live, obj, manager)
		}
	}
	if _, has := om.GetAnnotations()[lastAppliedAnnotation]; has {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	liveJS, err := json.Marshal(live)
	if err != nil {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	newJS, err := json.Marshal(obj)
	if err != nil {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	bp := shapeBufs.Get().(*[]byte)
	defer shapeBufs.Put(bp)
	key, ok := updateKey((*bp)[:0], liveJS, newJS, liveEntries, manager)
	*bp = key[:0]
	if !ok {
		return fm.UpdateNoErrors(live, obj, manager)
	}
	c.mu.Lock()
	cached, hit := c.entries[updateManagedKey{fm, string(key)}]
	if hit {
		c.hits++
	}
	c.mu.Unlock()
	if hit {
		now := time.Now().UTC()
		out := make([]metav1.ManagedFieldsEntry, len(cached))
		for i, e := range cached {
			e.entry.DeepCopyInto(&out[i])
			switch e.timeFrom {
			case updateTimeNow:
				out[i].Time = &metav1.Time{Time: now}
			case updateTimeNone:
				out[i].Time = nil
			default:
				out[i].Time = liveEntries[e.timeFrom].Time.DeepCopy()
			}
		}
		sortManagedEntries(out)
		om.SetManagedFields(out)
		return obj
	}
	k := updateManagedKey{fm, string(key)}
	before := time.Now()
	res := fm.UpdateNoErrors(live, obj, manager)
	after := time.Now()
	if entries, ok := updateEntriesOf(res, liveEntries, before, after); ok {
		c.add(k, entries)
	}
	return res
}

// updateEntriesOf returns the managedFields of res, the field manager's
// answer to an update of live whose entries are liveEntries made between
// before and after, with where each entry's time came from. It reports
// false when that is not certain, or when res has no managedFields.
func updateEntriesOf(res runtime.Object, liveEntries []metav1.ManagedFieldsEntry, before, after time.Time) ([]updateEntry, bool) {
	rm, err := meta.Accessor(res)
	if err != nil {
		return nil, false
	}
	got := rm.GetManagedFields()
	if len(got) == 0 {
		return nil, false
	}
	inWindow := func(t time.Time) bool { return !t.Before(before) && !t.After(after) }
	for _, le := range liveEntries {
		// A live time in the window would be taken for the update's.
		if le.Time != nil && inWindow(le.Time.Time) {
			return nil, false
		}
	}
	entries := make([]updateEntry, len(got))
	for i, e := range got {
		entries[i].timeFrom = updateTimeNone
		if e.Time != nil {
			entries[i].timeFrom = updateTimeNow
			if !inWindow(e.Time.Time) {
				entries[i].timeFrom = -3
				for j, le := range liveEntries {
					if le.Time != nil && le.Time.Equal(e.Time) && le.Manager == e.Manager && le.Operation == e.Operation && le.Subresource == e.Subresource {
						entries[i].timeFrom = j
						break
					}
				}
				if entries[i].timeFrom == -3 {
					return nil, false
				}
			}
		}
		e.DeepCopyInto(&entries[i].entry)
		entries[i].entry.Time = nil
	}
	return entries, true
}

// sortManagedEntries sorts entries as the field manager does: by
// operation, time in seconds, manager, apiVersion and subresource.
func sortManagedEntries(entries []metav1.ManagedFieldsEntry) {
	seconds := func(t *metav1.Time) int64 {
		if t == nil {
			return 0
		}
		return t.Unix()
	}
	slices.SortFunc(entries, func(p, q metav1.ManagedFieldsEntry) int {
		return cmp.Or(
			cmp.Compare(p.Operation, q.Operation),
			cmp.Compare(seconds(p.Time), seconds(q.Time)),
			cmp.Compare(p.Manager, q.Manager),
			cmp.Compare(p.APIVersion, q.APIVersion),
			cmp.Compare(p.Subresource, q.Subresource),
		)
	})
}

// sameManagedEntries reports whether a and b are the same entries, times
// included.
func sameManagedEntries(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		p, q := a[i], b[i]
		if p.Manager != q.Manager || p.Operation != q.Operation || p.APIVersion != q.APIVersion ||
			p.FieldsType != q.FieldsType || p.Subresource != q.Subresource {
			return false
		}
		if (p.Time == nil) != (q.Time == nil) || (p.Time != nil && !p.Time.Time.Equal(q.Time.Time)) {
			return false
		}
		if (p.FieldsV1 == nil) != (q.FieldsV1 == nil) || (p.FieldsV1 != nil && string(p.FieldsV1.Raw) != string(q.FieldsV1.Raw)) {
			return false
		}
	}
	return true
}

// updateKey appends to dst the key of an update for manager of the
// object whose encoding/json form is liveJS, with managedFields
// liveEntries, to the one whose form is newJS: the manager, the live
// entries without their times, the live object's shape, and the new
// object's shape with each scalar marked "=" when the live object has the
// same scalar text at the same path and "!" otherwise. Shapes are as
// typedCreateShape's, without metadata.managedFields. It reports false
// for a key over updateKeyMaxBytes, and for an object with a number that
// is not a plain integer.
func updateKey(dst, liveJS, newJS []byte, liveEntries []metav1.ManagedFieldsEntry, manager string) ([]byte, bool) {
	dst = strconv.AppendQuote(dst, manager)
	for _, e := range liveEntries {
		dst = append(dst, '|')
		dst = strconv.AppendQuote(dst, e.Manager)
		dst = strconv.AppendQuote(dst, string(e.Operation))
		dst = strconv.AppendQuote(dst, e.APIVersion)
		dst = strconv.AppendQuote(dst, e.Subresource)
		dst = strconv.AppendQuote(dst, e.FieldsType)
		if e.Time == nil {
			dst = append(dst, 'n')
		}
		if e.FieldsV1 != nil {
			dst = strconv.AppendQuote(dst, string(e.FieldsV1.Raw))
		}
	}
	dst = append(dst, '|')
	w := shapeWalker{dst: dst, js: liveJS, leaves: map[string]string{}}
	if !w.object(0, 0) || w.i != len(liveJS) {
		return w.dst, false
	}
	live := w.leaves
	dst = append(w.dst, '|')
	w = shapeWalker{dst: dst, js: newJS, live: live}
	if !w.object(0, 0) || w.i != len(newJS) {
		return w.dst, false
	}
	return w.dst, len(w.dst) <= updateKeyMaxBytes
}

// shapeWalker appends the shape of the compact JSON object js to dst,
// recording each scalar's text by path in leaves, or marking it against
// live's.
type shapeWalker struct {
	dst []byte
	js  []byte
	i   int
	// path is the path of the value being walked: its keys, each after
	// a "/".
	path   []byte
	leaves map[string]string
	live   map[string]string
}

// object walks the object at js[i], whose path is w.path, depth levels
// down, and leaves w.i past it.
func (w *shapeWalker) object(i int, depth int) bool {
	js := w.js
	w.i = i
	if i >= len(js) || js[i] != '{' {
		return false
	}
	w.dst = append(w.dst, '{')
	i++
	if i < len(js) && js[i] == '}' {
		w.dst = append(w.dst, '}')
		w.i = i + 1
		return true
	}
	inMetadata := depth == 1 && string(w.path) == `/"metadata"`
	pathLen := len(w.path)
	for i < len(js) {
		if js[i] != '"' {
			return false
		}
		keyEnd := skipJSONString(js, i)
		if keyEnd < 0 || keyEnd >= len(js) || js[keyEnd] != ':' {
			return false
		}
		key := js[i:keyEnd]
		i = keyEnd + 1
		if i >= len(js) {
			return false
		}
		end := skipJSONValue(js, i)
		if end < 0 || end >= len(js) {
			return false
		}
		if !(inMetadata && string(key) == `"managedFields"`) {
			w.dst = append(w.dst, key...)
			w.dst = append(w.dst, ':')
			w.path = append(append(w.path[:pathLen], '/'), key...)
			whole := depth == 0 && (string(key) == `"apiVersion"` || string(key) == `"kind"`)
			switch c := js[i]; {
			case c == '{':
				if !w.object(i, depth+1) || w.i != end {
					return false
				}
			case whole || c == '[':
				w.dst = append(w.dst, js[i:end]...)
			default:
				switch {
				case c == '"':
					w.dst = append(w.dst, 's')
				case c == 't' || c == 'f':
					w.dst = append(w.dst, 'b')
				case c == 'n':
					w.dst = append(w.dst, 'z')
				default:
					if !plainInteger(js[i:end]) {
						return false
					}
					w.dst = append(w.dst, 'd')
				}
				text := js[i:end]
				if w.leaves != nil {
					w.leaves[string(w.path)] = string(text)
				}
				if w.live != nil {
					if v, ok := w.live[string(w.path)]; ok && v == string(text) {
						w.dst = append(w.dst, '=')
					} else {
						w.dst = append(w.dst, '!')
					}
				}
			}
			if len(w.dst) > updateKeyMaxBytes {
				return false
			}
		}
		i = end
		switch js[i] {
		case ',':
			if !(inMetadata && string(key) == `"managedFields"`) {
				w.dst = append(w.dst, ',')
			}
			i++
		case '}':
			w.dst = append(w.dst, '}')
			w.i = i + 1
			return true
		default:
			return false
		}
	}
	return false
}

// plainInteger reports whether b is a JSON number without fraction or
// exponent, and not -0.
func plainInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
		if len(b) == 1 && b[0] == '0' {
			return false
		}
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// add keeps entries for k, emptying the cache first when it is full.
func (c *updateManagers) add(k updateManagedKey, entries []updateEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := 2*len(k.key) + createManagedEntryBytes
	if c.entries == nil || c.bytes+size > cmp.Or(c.maxBytes, DefaultUpdateCacheBytes) {
		c.entries = map[updateManagedKey][]updateEntry{}
		c.bytes = 0
	}
	if _, ok := c.entries[k]; !ok {
		c.entries[k] = entries
		c.bytes += size
	}
}
