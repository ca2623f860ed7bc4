// Package registry describes the kinds edgeapi serves. A kind is data: its
// group, version, resource names, scope, verbs, strategy hooks (defaulting,
// validation), table columns and field-selector attributes. The HTTP layer
// serves every kind through the same handlers; built-in kinds and, later,
// CRD kinds differ only in the Kind value they register.
package registry

import (
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kind is one resource served at one group/version.
type Kind struct {
	// GVK is the served group, version and kind ("", "v1", "ConfigMap").
	GVK schema.GroupVersionKind
	// Resource is the plural resource name used in URLs ("configmaps").
	Resource string
	// Singular is the singular name for discovery ("configmap").
	Singular string
	// ListKind is the kind of the collection ("ConfigMapList").
	ListKind string
	// Namespaced reports whether objects live in a namespace.
	Namespaced bool
	// ShortNames and Categories are advertised in discovery.
	ShortNames []string
	Categories []string
	// Verbs are advertised in discovery and enforced by the handlers
	// (e.g. namespaces have no "deletecollection": 405).
	Verbs []string
	// StatusSubresource reports whether the kind has a "status"
	// subresource; then the main resource ignores status changes and the
	// subresource changes only status.
	StatusSubresource bool
	// StorageResource is the store key's Resource: the plural, qualified by
	// group outside the core group ("leases.coordination.k8s.io"). Two kinds
	// that share storage (v1 Event and events.k8s.io/v1 Event) share it.
	StorageResource string
	// StorageGVK is the version objects are stored in. When it differs from
	// GVK, ToStorage/FromStorage convert.
	StorageGVK schema.GroupVersionKind
	// ToStorage converts a served-version object to the storage version,
	// FromStorage back. Nil when GVK == StorageGVK.
	ToStorage   func(obj runtime.Object) (runtime.Object, error)
	FromStorage func(obj runtime.Object) (runtime.Object, error)

	// New returns an empty object of the served version, NewList an empty
	// list.
	New     func() runtime.Object
	NewList func() runtime.Object

	// Strategy holds the kind's create/update hooks. Never nil.
	Strategy Strategy

	// TableColumns and TableRow give the server-side Table printing
	// (kubectl get). TableRow returns one cell per column, without the
	// object; the HTTP layer adds Name etc. only if they are columns here.
	TableColumns []metav1.TableColumnDefinition
	TableRow     func(obj runtime.Object) ([]interface{}, error)

	// FieldSet returns the object's field-selector attributes, always
	// including "metadata.name" and, when namespaced, "metadata.namespace".
	// Its keys are the only field-selector keys the kind supports.
	FieldSet func(obj runtime.Object) fields.Set
	// FieldSelectorKeys lists the supported field-selector keys in the order
	// kube-apiserver names them in its error message.
	FieldSelectorKeys []string
}

// GroupVersion is the kind's served group/version.
func (k *Kind) GroupVersion() schema.GroupVersion { return k.GVK.GroupVersion() }

// HasVerb reports whether v is among the kind's verbs.
func (k *Kind) HasVerb(v string) bool {
	for _, x := range k.Verbs {
		if x == v {
			return true
		}
	}
	return false
}

// Strategy is the kind-specific part of create and update, modelled on
// kube-apiserver's RESTCreateStrategy/RESTUpdateStrategy. The HTTP layer runs
// the generic steps (metadata fields, generateName, uid, timestamps,
// managedFields, generation, resourceVersion); a Strategy adds what is
// particular to the kind. All objects are of the served version's Go type.
type Strategy interface {
	// PrepareForCreate clears fields a client may not set on create (status
	// for kinds with a status subresource) and fills kind-specific defaults
	// (e.g. Secret type Opaque, Namespace phase Active and finalizers).
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate does the same on update, given the stored object:
	// e.g. keep status from old when the kind has a status subresource.
	PrepareForUpdate(obj, old runtime.Object)
	// Validate checks a new object; field paths and messages as
	// kube-apiserver words them. Object-meta validation (names, labels,
	// annotations) is included.
	Validate(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update against the stored object (immutable
	// fields, immutable ConfigMaps/Secrets, Secret type).
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// AllowUnconditionalUpdate reports whether PUT without resourceVersion
	// is allowed (true for the built-in kinds here).
	AllowUnconditionalUpdate() bool
	// NameValidator validates metadata.name for this kind (DNS subdomain
	// for most, DNS label for Namespaces). It returns messages as
	// apimachinery's validation functions do.
	NameValidator() func(name string, prefix bool) []string
}

// StatusStrategy is the strategy of a kind's "status" subresource.
// Implemented by strategies of kinds with StatusSubresource.
type StatusStrategy interface {
	// PrepareForStatusUpdate keeps everything but status from old.
	PrepareForStatusUpdate(obj, old runtime.Object)
	// ValidateStatusUpdate validates a status write.
	ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList
}

// Registry is the set of served kinds. Safe for concurrent use; kinds can be
// added at run time (CRDs).
type Registry struct {
	// mu guards byGVR.
	mu    sync.RWMutex
	byGVR map[schema.GroupVersionResource]*Kind
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{byGVR: make(map[schema.GroupVersionResource]*Kind)}
}

// Add registers k, replacing any kind with the same group/version/resource.
func (r *Registry) Add(k *Kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byGVR[k.GVK.GroupVersion().WithResource(k.Resource)] = k
}

// Lookup returns the kind served at gvr, or nil.
func (r *Registry) Lookup(gvr schema.GroupVersionResource) *Kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byGVR[gvr]
}

// Kinds returns every registered kind, sorted by group, version, resource.
func (r *Registry) Kinds() []*Kind {
	r.mu.RLock()
	out := make([]*Kind, 0, len(r.byGVR))
	for _, k := range r.byGVR {
		out = append(out, k)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].GVK, out[j].GVK
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// HasGroupVersion reports whether any kind is served at gv.
func (r *Registry) HasGroupVersion(gv schema.GroupVersion) bool {
	for _, k := range r.Kinds() {
		if k.GroupVersion() == gv {
			return true
		}
	}
	return false
}
