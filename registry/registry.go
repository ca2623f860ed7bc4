// Package registry describes the kinds edgeapi serves. A kind is data: its
// group, version, resource names, scope, verbs, strategy hooks (defaulting,
// validation), table columns and field-selector attributes. The HTTP layer
// serves every kind through the same handlers; built-in kinds (typed Go
// objects of k8s.io/api) and custom resource kinds (unstructured JSON,
// built by CustomResourceKinds from a CustomResourceDefinition) differ
// only in the Kind value they register.
package registry

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kube-openapi/pkg/validation/spec"
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
	// InternalPackage is the Go package of kube-apiserver's internal type
	// for the kind ("core", "coordination"), which some of its messages
	// print as %T (see InternalTypeName).
	InternalPackage string
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
	// subresource changes only status. Its Strategy implements
	// StatusStrategy. Discovery advertises "<resource>/status" with verbs
	// get, patch, update.
	StatusSubresource bool
	// FinalizeSubresource reports whether the kind has a "finalize"
	// subresource (Namespaces only: PUT namespaces/<name>/finalize changes
	// spec.finalizers and nothing else). Its Strategy implements
	// FinalizeStrategy. Discovery advertises "<resource>/finalize" with the
	// verb update.
	FinalizeSubresource bool
	// AllowCreateOnUpdate reports whether PUT on a missing object creates it
	// (kube-apiserver: true for Events and Leases, false for ConfigMaps,
	// Secrets and Namespaces, which answer 404).
	AllowCreateOnUpdate bool
	// NoGarbageCollection marks kinds whose kube-apiserver strategy reports
	// the garbage-collection policy Unsupported (Events): DELETE ignores
	// propagationPolicy and never adds the orphan or foregroundDeletion
	// finalizer.
	NoGarbageCollection bool
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
	// CreatedReadsBack reports that FromStorage leaves unchanged what a
	// POST through this kind stores (its body decoded by DecodeJSON and
	// NormalizeOnDecode; not a server-side apply), so that the answer is
	// the stored JSON with apiVersion and kind in front, with no second
	// decoding. A custom resource's FromStorage
	// prunes and defaults what was already pruned and defaulted on
	// decoding; it could add only what the create removes afterwards (a
	// defaulted status, dropped when the status subresource is on) or
	// convert another version.
	CreatedReadsBack bool
	// AppendServedJSON, when set, appends to dst the JSON of the stored
	// value as served, byte for byte what DecodeStored followed by
	// json.Marshal gives, without decoding, and reports true; it reports
	// false (dst unchanged) when it cannot prove the two equal, and then
	// the caller decodes. Set for custom resource kinds with FromStorage.
	AppendServedJSON func(dst, value []byte) ([]byte, bool)

	// NormalizeOnDecode, when set, does to a freshly decoded (or patched)
	// object what kube-apiserver's conversion into its internal version
	// does, before anything else sees it, field management included:
	// Secrets merge stringData into data (stringData wins) and drop it, so
	// managedFields name f:data, not f:stringData (s28 create-stringdata).
	// Nil for kinds without such a step. Idempotent; PrepareForCreate and
	// PrepareForUpdate repeat it.
	NormalizeOnDecode func(obj runtime.Object)

	// New returns an empty object of the served version, NewList an empty
	// list.
	New     func() runtime.Object
	NewList func() runtime.Object

	// Strategy holds the kind's create/update hooks. Never nil.
	Strategy Strategy

	// TableColumns and TableRow give the server-side Table printing
	// (kubectl get). kube-apiserver always prints the wide form, so
	// TableColumns includes the priority-1 columns and TableRow returns one
	// cell per column, in column order, Name included; the HTTP layer adds
	// only the row's object. Cells are strings, int64 or the like, as
	// kube-apiserver's printers produce them; Age cells are already
	// rendered ("5m", "<unknown>").
	TableColumns []metav1.TableColumnDefinition
	TableRow     func(obj runtime.Object) ([]interface{}, error)

	// OpenAPISchema, when set, returns the kind's OpenAPI v3 schema as JSON:
	// for a custom resource, the openAPIV3Schema of its
	// CustomResourceDefinition version (apiextensions.k8s.io/v1
	// JSONSchemaProps). /openapi/v3 and /openapi/v2 publish it as
	// kube-apiserver publishes a CRD version: apiVersion, kind and metadata
	// (a reference to ObjectMeta) are set in its properties,
	// x-kubernetes-group-version-kind is added, the list kind gets a schema
	// of its own, and the v2 document drops what v2 cannot say. It is called
	// when the documents are first built after the Kind value is
	// registered (once for v3, once for v2), and the result is kept for the
	// life of that Kind value: a kind whose schema changes is registered
	// again as a new Kind, which rebuilds the documents of its
	// group-version and changes their hash. An error leaves the kind out
	// of the documents. When nil, a built-in
	// kind is described by kube-apiserver's own schemas (see
	// httpapi/internal/openapispec), and any other kind as an object that
	// accepts any fields.
	OpenAPISchema func() ([]byte, error)

	// FieldSet returns the object's field-selector attributes, always
	// including "metadata.name" and, when namespaced, "metadata.namespace".
	// Its keys are the only field-selector keys the kind supports. It
	// accepts objects of the served version and, when the kind is stored in
	// another version, of the storage version too.
	FieldSet func(obj runtime.Object) fields.Set
	// FieldSelectorKeys lists the supported field-selector keys (the keys of
	// FieldSet). For kinds without UnknownFieldLabel, kube-apiserver's error
	// message names "metadata.name", "metadata.namespace" in that order.
	FieldSelectorKeys []string
	// UnknownFieldLabel, when set, returns the error for a field-selector
	// key outside FieldSelectorKeys, worded as the kind's field-label
	// conversion in kube-apiserver words it ("field label not supported:
	// data.k" for Secrets, Namespaces and Events). When nil,
	// CheckFieldSelectorKey uses apimachinery's default wording.
	UnknownFieldLabel func(label string) error

	// Storage hooks, modelled on k8s.io/apiserver's generic registry Store
	// hooks, for kinds that hold state beside the store (Services: cluster
	// IPs and node ports). All are optional; a kind without them behaves
	// as if they did nothing.
	//
	// BeginCreate runs on create after the name is known and before
	// PrepareForCreate's output is validated; it may fill fields
	// (allocated values) in obj, and its error is the answer. The HTTP
	// layer calls finish exactly once: with success true after the store
	// write committed, false when anything later failed or the request was
	// a dry run (so a dry run allocates, answers with the values, and
	// keeps nothing).
	BeginCreate func(ctx context.Context, obj runtime.Object) (finish FinishFunc, err error)
	// BeginUpdate is BeginCreate for an update of old to obj (main
	// resource only, after PrepareForUpdate). Each attempt of a retried
	// update gets its own finish.
	BeginUpdate func(ctx context.Context, obj, old runtime.Object) (finish FinishFunc, err error)
	// PrepareForDelete runs on the first DELETE of obj (no
	// deletionTimestamp yet), before finalizers are looked at: a kind that
	// cleans up before it goes adds its finalizer here, as
	// kube-apiserver's CustomResourceDefinition storage adds
	// customresourcecleanup.apiextensions.k8s.io. It reports whether it
	// changed obj.
	PrepareForDelete func(obj runtime.Object) (changed bool)
	// AfterDelete runs after obj (the stored object) was deleted from the
	// store, whichever path deleted it.
	AfterDelete func(ctx context.Context, obj runtime.Object)
	// LoadState rebuilds the kind's side state from every stored object,
	// at start before any request is served.
	LoadState func(objs []runtime.Object) error

	// Unstructured marks kinds whose objects are
	// *unstructured.Unstructured (custom resources; see
	// CustomResourceKinds). They are decoded by DecodeJSON, never by the
	// Scheme; list items carry kind and apiVersion, as kube-apiserver's
	// custom resource lists do; Protobuf is refused (406) and strategic
	// merge patch too (415); server-side apply types objects with
	// ApplySchema.
	Unstructured bool
	// DecodeJSON decodes a JSON document of the served version into a new
	// object, as kube-apiserver's decoder for the kind does (custom
	// resources: pruning, ObjectMeta coercion, defaulting). gvk is the
	// document's kind, for error messages; strictErrs are its duplicate
	// fields and, when strict, the unknown fields pruning dropped (the
	// fieldValidation directive decides what they become). err means the
	// document does not decode. Set for Unstructured kinds.
	DecodeJSON func(data []byte, strict bool) (obj runtime.Object, gvk *schema.GroupVersionKind, strictErrs []error, err error)
	// ApplySchema returns the OpenAPI schema of an Unstructured kind's
	// objects, whose metadata refers to
	// io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta; server-side apply
	// builds its structured-merge-diff type from it (once per kind, on
	// first use). Nil, or a nil result: types are deduced from the
	// objects.
	ApplySchema func() *spec.Schema
	// PreserveUnknownFields is the CRD's spec.preserveUnknownFields: apply
	// keeps fields its schema does not know.
	PreserveUnknownFields bool
	// Scale, when set, is the kind's "scale" subresource (custom resources
	// with subresources.scale): an autoscaling/v1 Scale over these paths
	// of the object.
	Scale *ScaleSubresource
	// TokenSubresource reports whether the kind has a "token"
	// subresource (ServiceAccounts): POST of an authentication.k8s.io/v1
	// TokenRequest, answered with a signed token for the object (see
	// httpapi.Config.Tokens). Discovery advertises "<resource>/token"
	// with the verb create.
	TokenSubresource bool
	// DeprecationWarning, when set, is sent as a Warning header with every
	// answer about the kind (a deprecated custom resource version).
	DeprecationWarning string

	// Review, when set, makes the kind a review, as kube-apiserver's
	// access and identity reviews (SubjectAccessReview,
	// SelfSubjectReview): it is only ever created, and never stored. A
	// POST runs the create steps that apply to an object that is not
	// stored (options, decoding, system metadata wiped, the namespace
	// from the URL, managedFields), then answers 201 with what Review
	// returns; dryRun changes nothing. Such a kind has the verbs
	// ["create"], no StorageResource, StorageGVK or NewList, and Strategy
	// is never asked.
	Review ReviewFunc
}

// ReviewFunc answers the create of a review kind: it validates obj, the
// decoded request body, as kube-apiserver's storage for the kind does
// (its errors are apierrors StatusErrors: 422 Invalid, 400 BadRequest),
// and returns the object to answer with, its status filled in.
type ReviewFunc func(ctx context.Context, a ReviewAccess, obj runtime.Object) (runtime.Object, error)

// ReviewAccess is what a review is answered from: who asks, and how the
// server authorizes.
type ReviewAccess struct {
	// User is the requesting user; nil when the request has none (no
	// authentication in front of the API), which kube-apiserver answers
	// with 400 "no user present on request".
	User user.Info
	// Authorizer decides requests, as it decides the server's own. Nil
	// means every request is allowed.
	Authorizer authorizer.Authorizer
	// Rules lists the rules that apply to a user in a namespace. Nil
	// means everything is allowed, listed as AlwaysAllow lists it.
	Rules authorizer.RuleResolver
}

// Stored reports whether the kind's objects are kept in the store: every
// kind but the reviews.
func (k *Kind) Stored() bool { return k.Review == nil }

// ScaleSubresource is a custom resource's subresources.scale: the
// dot-separated paths of its spec and status replicas and of its label
// selector (may be empty).
type ScaleSubresource struct {
	SpecReplicasPath   string
	StatusReplicasPath string
	LabelSelectorPath  string
}

// FinishFunc ends what a BeginCreate or BeginUpdate started: success
// reports whether the store write committed.
type FinishFunc func(ctx context.Context, success bool)

// CheckFieldSelectorKey returns nil when key is one of the kind's
// FieldSelectorKeys. Otherwise it returns the error kube-apiserver gives
// (the HTTP layer answers 400 BadRequest with err.Error() as message):
// UnknownFieldLabel's, or apimachinery's default
// `"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"`.
func (k *Kind) CheckFieldSelectorKey(key string) error {
	for _, x := range k.FieldSelectorKeys {
		if x == key {
			return nil
		}
	}
	if k.UnknownFieldLabel != nil {
		return k.UnknownFieldLabel(key)
	}
	return fmt.Errorf("%q is not a known field selector: only %q, %q", key, "metadata.name", "metadata.namespace")
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
//
// The order kube-apiserver uses, and the HTTP layer should follow, is:
// create: Scheme.Default (at decode), set namespace from the URL, generate
// the name, PrepareForCreate, Validate, then Canonicalize (if implemented);
// update: Scheme.Default (at decode, also after patching), set a missing
// resourceVersion to the stored one when AllowUnconditionalUpdate,
// PrepareForUpdate, ValidateGenericUpdate followed by ValidateUpdate, then
// Canonicalize. Validation errors become
// apierrors.NewInvalid(GVK.GroupKind(), name, errs) (422).
type Strategy interface {
	// PrepareForCreate clears fields a client may not set on create (status
	// for kinds with a status subresource) and fills kind-specific defaults
	// (e.g. Secret type Opaque, Namespace phase Active and finalizers).
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate does the same on update, given the stored object:
	// e.g. keep status from old when the kind has a status subresource.
	PrepareForUpdate(obj, old runtime.Object)
	// Validate checks a new object; field paths and messages as
	// kube-apiserver words them. The list is complete: it holds what
	// kube-apiserver's rest.BeforeCreate reports, i.e. the strategy's
	// errors and, only when there are none, the generic object-meta check
	// (names as path segments, labels, annotations, finalizers, owner
	// references). The HTTP layer adds nothing.
	Validate(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update against the stored object (immutable
	// fields, immutable ConfigMaps/Secrets, Secret type): what
	// kube-apiserver's strategy.ValidateUpdate reports, object-meta update
	// rules included. kube-apiserver's rest.BeforeUpdate puts its generic
	// checks first; the HTTP layer does that with ValidateGenericUpdate
	// (errs = ValidateGenericUpdate(...) + ValidateUpdate(...)). Both
	// report some causes, which kube-apiserver really lists twice (s17
	// change-uid, s23 add-finalizer-after-deletion).
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// AllowUnconditionalUpdate reports whether PUT without resourceVersion
	// is allowed (true for all built-in kinds here except Leases, as in
	// kube-apiserver).
	AllowUnconditionalUpdate() bool
	// NameValidator validates metadata.name for this kind, as an
	// apimachinery ValidateNameFunc: prefix is true for generateName. It
	// applies the kind's rule (DNS subdomain for most, DNS label for
	// Namespaces, none for core v1 Events) and then kube-apiserver's
	// generic path-segment rule (not "." or "..", no "/" or "%").
	NameValidator() func(name string, prefix bool) []string
}

// StatusStrategy is the strategy of a kind's "status" subresource.
// Implemented by strategies of kinds with StatusSubresource.
type StatusStrategy interface {
	// PrepareForStatusUpdate keeps from old what a status write may not
	// change (for Namespaces: spec, as kube-apiserver does).
	PrepareForStatusUpdate(obj, old runtime.Object)
	// ValidateStatusUpdate validates a status write, like
	// Strategy.ValidateUpdate (the HTTP layer puts ValidateGenericUpdate
	// first).
	ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList
}

// FinalizeStrategy is the strategy of the "finalize" subresource.
// Implemented by strategies of kinds with FinalizeSubresource.
type FinalizeStrategy interface {
	// PrepareForFinalize keeps from old what a finalize write may not
	// change (status).
	PrepareForFinalize(obj, old runtime.Object)
	// ValidateFinalizeUpdate validates a finalize write, like
	// Strategy.ValidateUpdate (the HTTP layer puts ValidateGenericUpdate
	// first).
	ValidateFinalizeUpdate(obj, old runtime.Object) field.ErrorList
}

// Canonicalizer is implemented by strategies that normalize an object after
// validation, as kube-apiserver's Canonicalize does (Namespaces: the
// kubernetes.io/metadata.name label, which a generated name only gets
// here). Call it after a successful Validate or ValidateUpdate.
type Canonicalizer interface {
	Canonicalize(obj runtime.Object)
}

// WarningStrategy is implemented by strategies that return warnings for
// valid objects (kube-apiserver's WarningsOnCreate/WarningsOnUpdate); the
// HTTP layer sends each as a `Warning: 299 - "..."` header.
type WarningStrategy interface {
	WarningsOnCreate(obj runtime.Object) []string
	WarningsOnUpdate(obj, old runtime.Object) []string
}

// Registry is the set of served kinds. Kinds can be added and removed at
// run time (CustomResourceDefinitions), and every change publishes a new
// immutable Snapshot: a request takes one Snapshot when it starts and sees
// the same kinds until it ends, however the registry changes meanwhile.
// Safe for concurrent use.
type Registry struct {
	// mu serializes writers; readers only load cur.
	mu  sync.Mutex
	cur atomic.Pointer[Snapshot]
	// changed is closed and replaced on every change (guarded by mu).
	changed chan struct{}
}

// Snapshot is one immutable set of kinds. Its methods never block.
type Snapshot struct {
	byGVR map[schema.GroupVersionResource]*Kind
	// kinds is every kind, sorted by group, version, resource.
	kinds []*Kind
	// gen counts the changes before this snapshot.
	gen uint64
	// Indexes of kinds, built with the snapshot so that per-request and
	// per-event lookups cost the same with 5 kinds or 1,000.
	groups        map[string]struct{}
	groupVersions map[schema.GroupVersion]struct{}
	byGVK         map[schema.GroupVersionKind]*Kind
	byStorage     map[string]*Kind
}

// newSnapshot returns the snapshot of generation gen holding the kinds of
// m.
func newSnapshot(m map[schema.GroupVersionResource]*Kind, gen uint64) *Snapshot {
	kinds := make([]*Kind, 0, len(m))
	for _, k := range m {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		a, b := kinds[i].GVK, kinds[j].GVK
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return kinds[i].Resource < kinds[j].Resource
	})
	s := &Snapshot{byGVR: m, kinds: kinds, gen: gen,
		groups:        map[string]struct{}{},
		groupVersions: map[schema.GroupVersion]struct{}{},
		byGVK:         make(map[schema.GroupVersionKind]*Kind, len(kinds)),
		byStorage:     make(map[string]*Kind, len(kinds)),
	}
	for _, k := range kinds {
		s.groups[k.GVK.Group] = struct{}{}
		s.groupVersions[k.GroupVersion()] = struct{}{}
		if _, ok := s.byGVK[k.GVK]; !ok {
			s.byGVK[k.GVK] = k
		}
		if _, ok := s.byStorage[k.StorageResource]; !ok && k.Stored() && (k.FromStorage == nil || k.GVK == k.StorageGVK) {
			s.byStorage[k.StorageResource] = k
		}
	}
	return s
}

// New returns an empty registry.
func New() *Registry {
	r := &Registry{changed: make(chan struct{})}
	r.cur.Store(newSnapshot(map[schema.GroupVersionResource]*Kind{}, 0))
	return r
}

// Snapshot returns the current set of kinds.
func (r *Registry) Snapshot() *Snapshot { return r.cur.Load() }

// Changed returns a channel that is closed at the next change.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Add registers k, replacing any kind with the same group/version/resource.
func (r *Registry) Add(k *Kind) {
	r.update(func(m map[schema.GroupVersionResource]*Kind) {
		m[k.GVK.GroupVersion().WithResource(k.Resource)] = k
	})
}

// Remove unregisters the kind served at gvr, if any.
func (r *Registry) Remove(gvr schema.GroupVersionResource) {
	r.update(func(m map[schema.GroupVersionResource]*Kind) { delete(m, gvr) })
}

// Replace unregisters the kinds served at remove and registers add, in one
// change: a request sees either none of it or all of it. A CRD controller
// that serves hundreds of CRDs publishes one snapshot per round.
func (r *Registry) Replace(remove []schema.GroupVersionResource, add []*Kind) {
	r.update(func(m map[schema.GroupVersionResource]*Kind) {
		for _, gvr := range remove {
			delete(m, gvr)
		}
		for _, k := range add {
			m[k.GVK.GroupVersion().WithResource(k.Resource)] = k
		}
	})
}

// update publishes a snapshot with the changes fn makes to a copy of the
// current kinds.
func (r *Registry) update(fn func(map[schema.GroupVersionResource]*Kind)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	m := make(map[schema.GroupVersionResource]*Kind, len(old.byGVR)+1)
	for gvr, k := range old.byGVR {
		m[gvr] = k
	}
	fn(m)
	r.cur.Store(newSnapshot(m, old.gen+1))
	close(r.changed)
	r.changed = make(chan struct{})
}

// Lookup returns the kind served at gvr in the current snapshot, or nil.
func (r *Registry) Lookup(gvr schema.GroupVersionResource) *Kind { return r.Snapshot().Lookup(gvr) }

// Kinds returns every kind of the current snapshot; see Snapshot.Kinds.
func (r *Registry) Kinds() []*Kind { return r.Snapshot().Kinds() }

// HasGroupVersion reports whether the current snapshot serves any kind at
// gv.
func (r *Registry) HasGroupVersion(gv schema.GroupVersion) bool {
	return r.Snapshot().HasGroupVersion(gv)
}

// Lookup returns the kind served at gvr, or nil.
func (s *Snapshot) Lookup(gvr schema.GroupVersionResource) *Kind { return s.byGVR[gvr] }

// Kinds returns every kind, sorted by group, version, resource. The slice
// is shared: callers must not modify it.
func (s *Snapshot) Kinds() []*Kind { return s.kinds }

// Generation counts the registry changes before this snapshot; two
// snapshots with the same generation hold the same kinds.
func (s *Snapshot) Generation() uint64 { return s.gen }

// HasGroupVersion reports whether any kind is served at gv.
func (s *Snapshot) HasGroupVersion(gv schema.GroupVersion) bool {
	_, ok := s.groupVersions[gv]
	return ok
}

// HasGroup reports whether any kind is served in group.
func (s *Snapshot) HasGroup(group string) bool {
	_, ok := s.groups[group]
	return ok
}

// ByGVK returns the kind of gvk (the first by group, version and resource
// when several resources serve it), or nil.
func (s *Snapshot) ByGVK(gvk schema.GroupVersionKind) *Kind { return s.byGVK[gvk] }

// ByStorage maps each storage resource to one kind that reads it in its
// storage version: the first by group, version and resource among the
// kinds served in their storage version. The map is shared: callers must
// not modify it.
func (s *Snapshot) ByStorage() map[string]*Kind { return s.byStorage }

// InternalTypeName is how kube-apiserver's messages print the type of one
// object of the kind, or of its list ("*core.ConfigMap",
// "*core.ConfigMapList").
func (k *Kind) InternalTypeName(list bool) string {
	if k.Unstructured {
		if list {
			return "*unstructured.UnstructuredList"
		}
		return "*unstructured.Unstructured"
	}
	name := k.GVK.Kind
	if list {
		name = k.ListKind
	}
	return "*" + k.InternalPackage + "." + name
}
