package httpapi

import (
	"fmt"
	"strings"
	"sync"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/edgeapi/edgeapi/httpapi/internal/applyschema"
	"github.com/edgeapi/edgeapi/registry"
)

// fieldManagers builds and caches one managedfields.FieldManager per served
// kind and subresource. The type converter holds the schemas of the served
// kinds only (applyschema: 22 types where client-go's has every built-in
// type, several MiB once parsed); it is parsed on first use.
type fieldManagers struct {
	tcOnce sync.Once
	tc     managedfields.TypeConverter

	// mu guards byKind and crTypes.
	mu     sync.Mutex
	byKind map[fmKey]*managedfields.FieldManager
	// crTypes holds the type converter of each Unstructured kind, shared
	// by its main resource's and subresources' field managers.
	crTypes map[*registry.Kind]managedfields.TypeConverter

	// creates memoizes the managedFields of custom resource creates.
	creates createManagers
	// updates memoizes the managedFields of updates of built-in kinds.
	updates updateManagers
	// reg, when set, is the registry whose snapshot generation gen the
	// maps were last pruned at: the entries of Unstructured kinds it no
	// longer serves (a CRD changed or deleted) are dropped, so a kind's
	// type converter goes with it.
	reg *registry.Registry
	gen uint64
}

type fmKey struct {
	gvk         schema.GroupVersionKind
	subresource string
	// kind tells apart kinds registered again with the same GVK (a
	// changed CustomResourceDefinition).
	kind *registry.Kind
}

// newFieldManagers returns the field managers of reg's kinds, with an
// update cache of updateCacheBytes (DefaultUpdateCacheBytes when zero).
func newFieldManagers(reg *registry.Registry, updateCacheBytes int) *fieldManagers {
	return &fieldManagers{
		byKind:  make(map[fmKey]*managedfields.FieldManager),
		crTypes: make(map[*registry.Kind]managedfields.TypeConverter),
		reg:     reg,
		updates: updateManagers{maxBytes: updateCacheBytes},
	}
}

// pruneLocked drops the entries of Unstructured kinds the registry no
// longer serves, once per registry change. The caller holds f.mu. A
// request that started before the change may add an entry for its kind
// again; the next change drops it.
func (f *fieldManagers) pruneLocked() {
	if f.reg == nil {
		return
	}
	snap := f.reg.Snapshot()
	if snap.Generation() == f.gen {
		return
	}
	f.gen = snap.Generation()
	gone := func(k *registry.Kind) bool {
		return k.Unstructured && snap.Lookup(k.GVK.GroupVersion().WithResource(k.Resource)) != k
	}
	for key := range f.byKind {
		if gone(key.kind) {
			delete(f.byKind, key)
		}
	}
	for k := range f.crTypes {
		if gone(k) {
			delete(f.crTypes, k)
		}
	}
}

func (f *fieldManagers) typeConverter() managedfields.TypeConverter {
	f.tcOnce.Do(func() {
		f.tc = boundedTypeConverter{newSourcedTypeConverter(applyschema.NewTypeConverter(registry.Scheme))}
	})
	return f.tc
}

// get returns the field manager for k (subresource "", "status" or
// "scale").
func (f *fieldManagers) get(k *registry.Kind, subresource string) (*managedfields.FieldManager, error) {
	key := fmKey{k.GVK, subresource, k}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pruneLocked()
	if fm, ok := f.byKind[key]; ok {
		return fm, nil
	}
	var reset map[fieldpath.APIVersion]*fieldpath.Set
	if k.StatusSubresource {
		paths := []fieldpath.Path{fieldpath.MakePathOrDie("status")}
		if subresource == "status" {
			paths = []fieldpath.Path{fieldpath.MakePathOrDie("spec")}
			if k.Unstructured {
				// The custom resource status strategy's reset fields.
				paths = []fieldpath.Path{fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec")}
			}
		}
		reset = map[fieldpath.APIVersion]*fieldpath.Set{
			fieldpath.APIVersion(k.GVK.GroupVersion().String()): fieldpath.NewSet(paths...),
		}
	}
	var filters map[fieldpath.APIVersion]fieldpath.Filter
	if reset != nil {
		filters = make(map[fieldpath.APIVersion]fieldpath.Filter, len(reset))
		for v, s := range reset {
			filters[v] = fieldpath.NewExcludeSetFilter(s)
		}
	}
	var fm *managedfields.FieldManager
	var err error
	if k.Unstructured {
		fm, err = f.newCRFieldManager(k, subresource, filters)
	} else {
		// Like kube-apiserver, the field manager converts without copying
		// (runtime.UnsafeObjectConvertor): it only reads the objects it
		// converts to their own version, and the scheme's convertor deep-
		// copied both objects of every write for that.
		fm, err = managedfields.NewDefaultFieldManager(f.typeConverter(), runtime.UnsafeObjectConvertor(registry.Scheme), registry.Scheme, registry.Scheme,
			k.GVK, k.GVK.GroupVersion(), subresource, filters)
	}
	if err != nil {
		return nil, fmt.Errorf("create field manager for %s: %w", k.GVK, err)
	}
	f.byKind[key] = fm
	return fm, nil
}

// maxManagerLength is kube-apiserver's limit on a fieldManager name.
const maxManagerLength = 128

// managerName is the manager recorded in managedFields: the fieldManager
// query parameter or, failing that, the User-Agent up to its first "/", as
// kube-apiserver derives it.
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	m, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range m {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > maxManagerLength {
		s = s[:maxManagerLength]
	}
	return s
}

// newCRFieldManager is the field manager kube-apiserver's custom resource
// handler builds: typed by the kind's schema, versions converted as
// conversion None does, the kind's defaults applied to applied objects.
// Called with f.mu held.
func (f *fieldManagers) newCRFieldManager(k *registry.Kind, subresource string, filters map[fieldpath.APIVersion]fieldpath.Filter) (*managedfields.FieldManager, error) {
	tc, ok := f.crTypes[k]
	if !ok {
		var err error
		if tc, err = newCRTypeConverter(k); err != nil {
			return nil, err
		}
		tc = boundedTypeConverter{tc}
		f.crTypes[k] = tc
	}
	return managedfields.NewDefaultCRDFieldManager(tc, crConvertor{}, crDefaulter{k}, crCreator{},
		k.GVK, k.GVK.GroupVersion(), subresource, filters)
}
