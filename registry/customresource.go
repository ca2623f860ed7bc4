package registry

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kube-openapi/pkg/validation/spec"
	kjson "sigs.k8s.io/json"
)

// This file builds the kinds of a CustomResourceDefinition: one Kind per
// served version, whose objects are *unstructured.Unstructured. The steps
// kube-apiserver's apiextensions-apiserver takes for custom resources
// (pkg/apiserver/customresource_handler.go and
// pkg/registry/customresource) are reproduced over its leaf packages:
// structural schemas, pruning, defaulting, object-meta coercion,
// list-type and OpenAPI validation, and CEL rules
// (x-kubernetes-validations).

// objectMetaRef is the OpenAPI name of ObjectMeta, which the apply schema
// of a custom resource refers to for metadata.
const objectMetaRef = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

// CustomResourceKinds returns one Kind per served version of crd, in the
// order of spec.versions. Objects are stored in the storage version; as
// conversion strategy None only rewrites apiVersion, which stored objects
// leave out, every version reads and writes the same stored bytes. crd is
// not modified: defaults (conversion None, listKind, singular) are applied
// to a copy, as the API server would have stored them. With conversion
// strategy Webhook the storage version is served, and every read or write
// through another version fails with a clear error: no webhook is called.
func CustomResourceKinds(crd *apiextensionsv1.CustomResourceDefinition) ([]*Kind, error) {
	crd = withDefaults(crd)
	webhook := false
	if c := crd.Spec.Conversion; c != nil {
		switch c.Strategy {
		case apiextensionsv1.NoneConverter:
		case apiextensionsv1.WebhookConverter:
			webhook = true
		default:
			return nil, fmt.Errorf("custom resource %s: conversion strategy %q is not supported", crd.Name, c.Strategy)
		}
	}
	var storage string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if storage != "" {
				return nil, fmt.Errorf("custom resource %s: more than one storage version", crd.Name)
			}
			storage = v.Name
		}
	}
	if storage == "" {
		return nil, fmt.Errorf("custom resource %s: no storage version", crd.Name)
	}
	// Versions with the same schema share one crSchema, so its validators
	// and structural schema are built once.
	schemas := map[string]*crSchema{}
	byRaw := map[string]*crSchema{}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		s, err := newCRSchema(crd, v)
		if err != nil {
			return nil, fmt.Errorf("custom resource %s version %s: %w", crd.Name, v.Name, err)
		}
		if s.packed != nil {
			if same, ok := byRaw[string(s.packed)]; ok {
				s = same
			} else {
				byRaw[string(s.packed)] = s
			}
		}
		schemas[v.Name] = s
	}
	names := crd.Spec.Names
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	storageResource := names.Plural + "." + crd.Spec.Group
	storageGVK := schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: names.Kind}
	var kinds []*Kind
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if !v.Served {
			continue
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
		s := schemas[v.Name]
		st := schemas[storage]
		cols, err := newCRColumns(v.AdditionalPrinterColumns)
		if err != nil {
			return nil, fmt.Errorf("custom resource %s version %s: %w", crd.Name, v.Name, err)
		}
		selectable, err := newSelectableFields(v.SelectableFields)
		if err != nil {
			return nil, fmt.Errorf("custom resource %s version %s: %w", crd.Name, v.Name, err)
		}
		keys := []string{"metadata.name"}
		if namespaced {
			keys = append(keys, "metadata.namespace")
		}
		for _, f := range selectable {
			keys = append(keys, f.name)
		}
		strategy := &crStrategy{gvk: gvk, namespaced: namespaced, schema: s}
		if v.Subresources != nil {
			strategy.status = v.Subresources.Status != nil
			strategy.scale = v.Subresources.Scale
		}
		k := &Kind{
			GVK:               gvk,
			Resource:          names.Plural,
			Singular:          names.Singular,
			ListKind:          names.ListKind,
			Namespaced:        namespaced,
			ShortNames:        names.ShortNames,
			Categories:        names.Categories,
			Verbs:             verbsCustomResource,
			StatusSubresource: strategy.status,
			StorageResource:   storageResource,
			StorageGVK:        storageGVK,
			Unstructured:      true,
			New: func() runtime.Object {
				u := &unstructured.Unstructured{Object: map[string]interface{}{}}
				u.SetGroupVersionKind(gvk)
				return u
			},
			NewList: func() runtime.Object {
				l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
				l.SetGroupVersionKind(gvk.GroupVersion().WithKind(names.ListKind))
				return l
			},
			Strategy:          strategy,
			TableColumns:      cols.headers,
			TableRow:          cols.row,
			FieldSet:          func(obj runtime.Object) fields.Set { return crFieldSet(obj, namespaced, selectable) },
			FieldSelectorKeys: keys,
			UnknownFieldLabel: fieldLabelNotSupported,
			DecodeJSON: func(data []byte, strict bool) (runtime.Object, *schema.GroupVersionKind, []error, error) {
				return s.decode(data, gvk, strict)
			},
			NormalizeOnDecode:     s.defaulter(gvk),
			ApplySchema:           func() *spec.Schema { return s.applySchema(gvk) },
			PreserveUnknownFields: crd.Spec.PreserveUnknownFields,
		}
		if sc := strategy.scale; sc != nil {
			k.Scale = &ScaleSubresource{SpecReplicasPath: sc.SpecReplicasPath, StatusReplicasPath: sc.StatusReplicasPath}
			if sc.LabelSelectorPath != nil {
				k.Scale.LabelSelectorPath = *sc.LabelSelectorPath
			}
		}
		if v.Deprecated {
			if v.DeprecationWarning != nil {
				k.DeprecationWarning = *v.DeprecationWarning
			} else {
				k.DeprecationWarning = defaultDeprecationWarning(v.Name, crd.Spec)
			}
		}
		if webhook && v.Name != storage {
			// No webhook is called: reading or writing another version
			// than the storage version fails, as kube-apiserver's
			// answers when its conversion webhook fails (500).
			convErr := fmt.Errorf("conversion webhook for %s failed: edgeapi does not call conversion webhooks", gvk)
			k.ToStorage = func(runtime.Object) (runtime.Object, error) { return nil, convErr }
			k.FromStorage = func(runtime.Object) (runtime.Object, error) { return nil, convErr }
		} else if st.hasDefaults || len(crd.Spec.Versions) > 1 || crd.Generation > 1 {
			// Read from storage as kube-apiserver's storage codec does:
			// pruning to the storage version's schema and its defaults
			// (objects written through another version, or before the
			// schema changed), then pruning to the served version's.
			// Kinds without defaults, with one version and whose CRD's
			// spec never changed (generation 1) skip this: every object
			// they stored went through the same steps under the same
			// schema.
			prune := !crd.Spec.PreserveUnknownFields
			served := v.Name
			k.FromStorage = func(obj runtime.Object) (runtime.Object, error) {
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return nil, fmt.Errorf("%s: unexpected object %T", gvk.Kind, obj)
				}
				stp, err := st.built()
				if err != nil {
					return nil, err
				}
				if stp.structural != nil {
					if prune {
						structuralpruning.Prune(u.Object, stp.structural, true)
					}
					structuraldefaulting.Default(u.Object, stp.structural)
				}
				if served != storage && prune {
					sp, err := s.built()
					if err != nil {
						return nil, err
					}
					if sp.structural != nil {
						structuralpruning.Prune(u.Object, sp.structural, true)
					}
				}
				u.SetGroupVersionKind(gvk)
				return u, nil
			}
			k.CreatedReadsBack = served == storage && !st.metadataDefaults && !(strategy.status && st.statusDefault)
			k.AppendServedJSON = lazyServedJSON(st, s, served != storage, prune, gvk)
		}
		if s.packed != nil {
			// OpenAPI publishes the version's schema (kubectl explain,
			// client-side apply): the JSON the kind keeps anyway.
			k.OpenAPISchema = s.schemaJSON
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// withDefaults returns crd with the API server's defaults (conversion
// None, listKind, singular, the storage version in storedVersions): a
// shallow copy that shares the versions and their schemas with crd, so a
// burst of CRDs does not copy every schema once more.
func withDefaults(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := *crd
	out.Status.StoredVersions = slices.Clone(crd.Status.StoredVersions)
	out.Spec.Conversion = crd.Spec.Conversion.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&out)
	return &out
}

// verbsCustomResource are a custom resource's verbs in the order
// kube-apiserver's discovery lists them (unsorted, unlike the built-ins').
var verbsCustomResource = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}

// defaultDeprecationWarning is kube-apiserver's warning for a deprecated
// version without deprecationWarning: it names the newest served version
// that is not deprecated, if any is newer.
func defaultDeprecationWarning(deprecated string, spec apiextensionsv1.CustomResourceDefinitionSpec) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", spec.Group, deprecated, spec.Names.Kind)
	best := ""
	for _, v := range spec.Versions {
		if !v.Served || v.Deprecated || version.CompareKubeAwareVersionStrings(deprecated, v.Name) >= 0 {
			continue
		}
		if best == "" || version.CompareKubeAwareVersionStrings(v.Name, best) > 0 {
			best = v.Name
		}
	}
	if best == "" {
		return msg
	}
	return msg + fmt.Sprintf("; use %s/%s %s", spec.Group, best, spec.Names.Kind)
}

// crSchema is one version's OpenAPI schema and what it gives: the
// structural schema (pruning, defaulting, list types, embedded objects),
// the OpenAPI validators of the object and of its status, and the CEL
// rules. A kind keeps only the schema's JSON until a request needs the
// rest, which is built once, on first use, as kube-apiserver's CRD
// handler builds a CRD's serving information on the first request for
// it: 500 CRDs of which few are used then cost little memory (for the
// bench's 40-field schema the parts take about 95 KiB, its 10.6 KB of JSON
// 0.7 KB compressed; the Gateway API schemas compress 2.5 to 4.8 times).
type crSchema struct {
	preserveUnknown bool
	// packed is the version's openAPIV3Schema as JSON (what OpenAPI
	// publishes), compressed; nil when the version has none (only
	// possible with spec.preserveUnknownFields, which v1 forbids). size
	// is the JSON's length.
	packed []byte
	size   int
	// hasDefaults reports whether a node of the schema has a default;
	// statusDefault whether status itself has one, metadataDefaults
	// whether a node of metadata has one (see Kind.CreatedReadsBack).
	hasDefaults      bool
	statusDefault    bool
	metadataDefaults bool

	// once builds parts (or err) from raw on first use.
	once  sync.Once
	parts *crSchemaParts
	err   error

	// openAPICheck, built from the parts' OpenAPI form on first use, is
	// the quick path of the schema validator for creates (see
	// openAPICheck).
	openAPICheckOnce sync.Once
	openAPICheck     *openAPICheck

	// celOnce compiles the CEL rules on first use: a CEL environment
	// takes about 100 KB, which kinds whose objects are never written
	// need not pay. Creates compile them once more, for celCreateCheck
	// (celCheckOnce); cel.Validator is built only when a create fails
	// that check, or on the first update.
	celOnce      sync.Once
	cel          *cel.Validator
	celCheckOnce sync.Once
	celCheck     *celCreateCheck
}

// validateCreate returns the OpenAPI schema validator's errors for obj,
// being created: none, without running it, when openAPICheck passes obj.
func (s *crSchema) validateCreate(p *crSchemaParts, obj map[string]interface{}) field.ErrorList {
	s.openAPICheckOnce.Do(func() { s.openAPICheck = newOpenAPICheck(p.openAPI) })
	if s.openAPICheck.passes(obj) {
		return nil
	}
	return apiservervalidation.ValidateCustomResource(nil, obj, p.validator)
}

// createCheck returns the rules' check for creates (see celCreateCheck).
func (s *crSchema) createCheck(p *crSchemaParts) *celCreateCheck {
	s.celCheckOnce.Do(func() { s.celCheck = newCELCreateCheck(p.structural, celconfig.PerCallLimit) })
	return s.celCheck
}

// crSchemaParts is what a schema is built into. Without a schema every
// field is nil.
type crSchemaParts struct {
	structural      *structuralschema.Structural
	validator       apiservervalidation.SchemaValidator
	statusValidator apiservervalidation.SchemaValidator
	// openAPI is the validator's OpenAPI form (for openAPICheck).
	openAPI *spec.Schema
	// hasRules is whether the schema has x-kubernetes-validations
	// rules that cel.Validator runs (any outside allOf).
	hasRules bool
}

// built returns the schema's parts, building them on the first call. A
// schema that cannot be built (CRD validation refuses such schemas, so
// only a CRD stored by an older, laxer version could have one) gives
// every request that needs it kube-apiserver's 500 for it.
func (s *crSchema) built() (*crSchemaParts, error) {
	s.once.Do(func() {
		p, err := s.build()
		if err != nil {
			s.err = apierrors.NewInternalError(fmt.Errorf("the server could not properly serve the CR schema: %w", err))
			return
		}
		s.parts = p
	})
	return s.parts, s.err
}

// build makes the parts from raw.
func (s *crSchema) build() (*crSchemaParts, error) {
	p := &crSchemaParts{}
	if s.packed == nil {
		return p, nil
	}
	raw, err := s.schemaJSON()
	if err != nil {
		return nil, err
	}
	var v1 apiextensionsv1.JSONSchemaProps
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &v1); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	// Descriptions are for OpenAPI, which publishes the JSON: pruning,
	// defaulting, validation, CEL and apply never read them, and the
	// parts would keep two copies.
	dropDescriptions(&v1)
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	st, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), st); len(errs) > 0 {
		return nil, fmt.Errorf("schema is not structural: %v", errs.ToAggregate())
	}
	st = st.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(st); err != nil {
		return nil, fmt.Errorf("prune defaults: %w", err)
	}
	p.structural = st
	p.hasRules = hasRules(st)
	if p.validator, p.openAPI, err = apiservervalidation.NewSchemaValidator(internal); err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	if status, ok := internal.Properties["status"]; ok {
		if p.statusValidator, _, err = apiservervalidation.NewSchemaValidator(&status); err != nil {
			return nil, fmt.Errorf("status schema validator: %w", err)
		}
	}
	return p, nil
}

// celValidator returns the compiled x-kubernetes-validations rules, nil
// when there are none.
func (s *crSchema) celValidator(p *crSchemaParts) *cel.Validator {
	s.celOnce.Do(func() {
		if p.structural != nil {
			s.cel = cel.NewValidator(p.structural, true, celconfig.PerCallLimit)
		}
	})
	return s.cel
}

// schemaJSON returns the version's schema as JSON (a new copy each call).
func (s *crSchema) schemaJSON() ([]byte, error) {
	b, err := inflate(s.packed, s.size)
	if err != nil {
		return nil, fmt.Errorf("unpack schema: %w", err)
	}
	return b, nil
}

// deflaters and inflaters reuse the compressors' state (a flate.Writer
// takes 600 KB) across kinds.
var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed) // a valid level: no error
		return w
	}}
	inflaters sync.Pool
)

// deflate compresses b: a CRD schema's descriptions repeat, and its JSON
// takes a sixth or less.
func deflate(b []byte) []byte {
	var buf bytes.Buffer
	w := deflaters.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	deflaters.Put(w)
	return bytes.Clone(buf.Bytes())
}

// inflate returns the size bytes deflate compressed into packed.
func inflate(packed []byte, size int) ([]byte, error) {
	src := bytes.NewReader(packed)
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(src)
	} else if err := r.(flate.Resetter).Reset(src, nil); err != nil {
		return nil, err
	}
	defer inflaters.Put(r)
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, err
	}
	return out, nil
}

// dropDescriptions clears the description of s and of the nodes below it
// that a structural schema keeps (properties, items, additionalProperties).
func dropDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Description = ""
	if s.Items != nil {
		dropDescriptions(s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		dropDescriptions(s.AdditionalProperties.Schema)
	}
	for k, p := range s.Properties {
		dropDescriptions(&p)
		s.Properties[k] = p
	}
}

// newCRSchema keeps v's schema as JSON; its parts are built on first use.
func newCRSchema(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*crSchema, error) {
	s := &crSchema{preserveUnknown: crd.Spec.PreserveUnknownFields}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		if !crd.Spec.PreserveUnknownFields {
			return nil, fmt.Errorf("schema.openAPIV3Schema is required")
		}
		return s, nil
	}
	b, err := json.Marshal(v.Schema.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("marshal schema: %w", err)
	}
	s.packed, s.size = deflate(b), len(b)
	s.hasDefaults = hasDefaultsV1(v.Schema.OpenAPIV3Schema)
	if st, ok := v.Schema.OpenAPIV3Schema.Properties["status"]; ok {
		s.statusDefault = st.Default != nil && len(st.Default.Raw) > 0 && string(st.Default.Raw) != "null"
	}
	if md, ok := v.Schema.OpenAPIV3Schema.Properties["metadata"]; ok {
		s.metadataDefaults = hasDefaultsV1(&md)
	}
	return s, nil
}

// lazyServedJSON returns Kind.AppendServedJSON for a kind read through the
// storage version's schema st and, when servedDiffers, pruned to its own
// version's schema s: built on the first read, as the schemas are; a
// schema that cannot be built leaves every object to decoding (which then
// answers the schema's error).
func lazyServedJSON(st, s *crSchema, servedDiffers, prune bool, gvk schema.GroupVersionKind) func(dst, value []byte) ([]byte, bool) {
	var (
		once sync.Once
		sj   *servedJSON
	)
	return func(dst, value []byte) ([]byte, bool) {
		once.Do(func() {
			stp, err := st.built()
			if err != nil {
				return
			}
			var served *structuralschema.Structural
			if servedDiffers {
				sp, err := s.built()
				if err != nil {
					return
				}
				served = sp.structural
			}
			sj = newServedJSON(stp.structural, served, prune, gvk.Group, gvk.Version, gvk.Kind)
		})
		if sj == nil {
			return dst, false
		}
		return sj.appendServed(dst, value)
	}
}

// hasRules reports whether any node of s outside allOf has
// x-kubernetes-validations (when cel.NewValidator returns a validator).
func hasRules(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if len(s.XValidations) > 0 || hasRules(s.Items) {
		return true
	}
	if s.AdditionalProperties != nil && hasRules(s.AdditionalProperties.Structural) {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(&p) {
			return true
		}
	}
	return false
}

// hasDefaultsV1 reports whether a node of the structural schema that s
// gives has a default: s or, below it, its properties, items or
// additionalProperties (the only places a structural schema has nodes).
func hasDefaultsV1(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if d := s.Default; d != nil && len(d.Raw) > 0 && string(d.Raw) != "null" {
		return true
	}
	if s.Items != nil && hasDefaultsV1(s.Items.Schema) {
		return true
	}
	if s.AdditionalProperties != nil && hasDefaultsV1(s.AdditionalProperties.Schema) {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaultsV1(&p) {
			return true
		}
	}
	return false
}

// decode decodes a JSON document into an object of gvk as kube-apiserver's
// decoder for custom resources does: duplicate fields, and with strict the
// fields pruning drops (`unknown field "spec.x"`), are strict errors;
// ObjectMeta is coerced; then the schema's defaults are applied. The
// returned kind is the document's (for error messages); err words what
// kube-apiserver's decoder reports for a body that does not decode.
func (s *crSchema) decode(data []byte, gvk schema.GroupVersionKind, strict bool) (runtime.Object, *schema.GroupVersionKind, []error, error) {
	m := map[string]interface{}{}
	var strictErrs []error
	var err error
	if strict {
		strictErrs, err = kjson.UnmarshalStrict(data, &m)
	} else {
		err = kjson.UnmarshalCaseSensitivePreserveInts(data, &m)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	u := &unstructured.Unstructured{Object: m}
	actual := u.GroupVersionKind()
	if _, ok := m["kind"].(string); !ok || actual.Kind == "" {
		return nil, &actual, nil, fmt.Errorf("Object 'Kind' is missing in '%s'", data)
	}
	p, err := s.built()
	if err != nil {
		return nil, &actual, nil, err
	}
	unknown, err := s.coerce(p, u, gvk, strict)
	if err != nil {
		return nil, &actual, nil, err
	}
	for _, p := range unknown {
		strictErrs = append(strictErrs, fmt.Errorf("unknown field %q", p))
	}
	return u, &actual, strictErrs, nil
}

// defaulter returns the kind's NormalizeOnDecode: the schema's defaults,
// for objects of gvk's group and kind (kube-apiserver's
// unstructuredDefaulter). Nil without defaults.
func (s *crSchema) defaulter(gvk schema.GroupVersionKind) func(runtime.Object) {
	if !s.hasDefaults {
		return nil
	}
	return func(obj runtime.Object) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GroupVersionKind().GroupKind() != gvk.GroupKind() {
			return
		}
		if p, err := s.built(); err == nil && p.structural != nil {
			structuraldefaulting.Default(u.Object, p.structural)
		}
	}
}

// coerce is apiextensions-apiserver's unstructuredSchemaCoercer.apply for
// a request: it prunes fields the schema does not know (returning their
// paths when track is set), drops nulls the schema does not allow, and
// coerces ObjectMeta (and that of embedded resources).
func (s *crSchema) coerce(p *crSchemaParts, u *unstructured.Unstructured, gvk schema.GroupVersionKind, track bool) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	var (
		objectMeta      *metav1.ObjectMeta
		foundObjectMeta bool
		unknown         []string
	)
	simpleMeta, simple := coercedSimpleMetadata(u.Object["metadata"])
	if !simple {
		objectMeta, foundObjectMeta, unknown, err = schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
			ReturnUnknownFieldPaths: track,
		})
		if err != nil {
			return nil, err
		}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	if st := p.structural; gv.Group == gvk.Group && kind == gvk.Kind && st != nil {
		if !s.preserveUnknown {
			unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, st, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: track})...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, st)
		}
		ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, st, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: track})
		if ferr != nil {
			return nil, ferr
		}
		unknown = append(unknown, paths...)
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if simple {
		u.Object["metadata"] = simpleMeta
	} else if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// coercedSimpleMetadata returns what the ObjectMeta coercion of a decoded
// body (GetObjectMetaWithOptions, then SetObjectMeta: JSON into
// metav1.ObjectMeta and back to unstructured) makes of metadata, for the
// metadata of most bodies: only name, generateName and namespace
// (strings), labels and annotations (objects of strings) and finalizers
// (a list of strings). The round trip drops those that are empty and
// keeps the rest, and finds no unknown field. For any other metadata it
// reports false and the caller takes the round trip (about 10 µs).
func coercedSimpleMetadata(metadata interface{}) (map[string]interface{}, bool) {
	md, ok := metadata.(map[string]interface{})
	if !ok || md == nil {
		return nil, false
	}
	out := make(map[string]interface{}, len(md))
	for k, v := range md {
		switch k {
		case "name", "generateName", "namespace":
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			if s != "" {
				out[k] = s
			}
		case "labels", "annotations":
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil, false
			}
			if len(m) == 0 {
				continue
			}
			c := make(map[string]interface{}, len(m))
			for mk, mv := range m {
				s, ok := mv.(string)
				if !ok {
					return nil, false
				}
				c[mk] = s
			}
			out[k] = c
		case "finalizers":
			l, ok := v.([]interface{})
			if !ok {
				return nil, false
			}
			if len(l) == 0 {
				continue
			}
			c := make([]interface{}, len(l))
			for i, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, false
				}
				c[i] = s
			}
			out[k] = c
		default:
			return nil, false
		}
	}
	return out, true
}

// applySchema returns the OpenAPI schema server-side apply types objects
// with: the structural schema, with apiVersion and kind strings and
// metadata a reference to ObjectMeta, as kube-apiserver's OpenAPI builder
// gives it. Nil without a schema (apply then deduces types), or when the
// schema cannot be built (the decoding of the applied object has then
// failed with that error already).
func (s *crSchema) applySchema(gvk schema.GroupVersionKind) *spec.Schema {
	p, err := s.built()
	if err != nil || p.structural == nil {
		return nil
	}
	out := p.structural.ToKubeOpenAPI()
	if out.Properties == nil {
		out.Properties = map[string]spec.Schema{}
	}
	out.Properties["apiVersion"] = *spec.StringProperty()
	out.Properties["kind"] = *spec.StringProperty()
	out.Properties["metadata"] = *spec.RefSchema("#/definitions/" + objectMetaRef)
	out.AddExtension("x-kubernetes-group-version-kind", []interface{}{
		map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
	})
	return out
}

// crStrategy is apiextensions-apiserver's customResourceStrategy and its
// status strategy, for one version.
type crStrategy struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	schema     *crSchema
	status     bool
	scale      *apiextensionsv1.CustomResourceSubresourceScale
}

var (
	_ StatusStrategy  = (*crStrategy)(nil)
	_ WarningStrategy = (*crStrategy)(nil)
)

// PrepareForCreate drops status when the status subresource is on and
// sets generation 1.
func (c *crStrategy) PrepareForCreate(obj runtime.Object) {
	u := obj.(*unstructured.Unstructured)
	if c.status {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
}

// PrepareForUpdate keeps the stored status when the status subresource is
// on, and bumps generation when anything but metadata changed.
func (c *crStrategy) PrepareForUpdate(obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if c.status {
		_, inNew := u.Object["status"]
		oldStatus, inOld := o.Object["status"]
		switch {
		case inOld:
			u.Object["status"] = oldStatus
		case inNew:
			delete(u.Object, "status")
		}
	}
	if !apiequality.Semantic.DeepEqual(withoutMetadata(u.Object), withoutMetadata(o.Object)) {
		u.SetGeneration(o.GetGeneration() + 1)
	}
}

func withoutMetadata(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// PrepareForStatusUpdate keeps everything but status (managedFields
// included, which field management already computed) from old.
func (c *crStrategy) PrepareForStatusUpdate(obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	status, ok := u.Object["status"]
	mf := u.GetManagedFields()
	*u = *o.DeepCopy()
	u.SetManagedFields(mf)
	if ok {
		u.Object["status"] = status
	} else {
		delete(u.Object, "status")
	}
}

func (c *crStrategy) AllowUnconditionalUpdate() bool { return false }

func (c *crStrategy) NameValidator() func(string, bool) []string {
	return withPathSegment(apimachineryvalidation.NameIsDNSSubdomain)
}

// Validate is the strategy's Validate followed, when it passes, by
// rest.BeforeCreate's generic object-meta check (which then passes too).
func (c *crStrategy) Validate(obj runtime.Object) field.ErrorList {
	u := obj.(*unstructured.Unstructured)
	p, ferrs := c.parts()
	if ferrs != nil {
		return ferrs
	}
	errs := c.validateTypeMeta(u)
	if len(errs) == 0 {
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(validationMeta{u}, c.namespaced, apimachineryvalidation.NameIsDNSSubdomain, metadataPath)...)
		if p.validator != nil {
			errs = append(errs, c.schema.validateCreate(p, u.Object)...)
		}
		errs = append(errs, c.validateScaleSpec(u)...)
		errs = append(errs, c.validateScaleStatus(u)...)
	}
	if st := p.structural; st != nil {
		errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, st, false)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, st, u.Object)...)
	}
	errs = append(errs, c.validateCEL(p, u.Object, nil, errs, nil)...)
	// rest.BeforeCreate's generic object-meta check (ValidateGenericCreate)
	// runs only when errs is empty, and then would find nothing: the check
	// above passed, and differs from it only in checking names as path
	// segments, which every DNS subdomain is.
	return errs
}

// validationMeta is an Unstructured as object-meta validation reads it:
// GetManagedFields converts plain entries (known members of the right
// types, a time that parses) without the unstructured converter, which
// marshals each entry's fieldsV1 to JSON (about 10 µs an entry). Its
// entries have no FieldsV1, which validation does not read; for any
// other managedFields it is the Unstructured's.
type validationMeta struct{ *unstructured.Unstructured }

func (m validationMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	v, found, err := unstructured.NestedFieldNoCopy(m.Object, "metadata", "managedFields")
	if !found || err != nil {
		return nil
	}
	items, ok := v.([]interface{})
	if !ok {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(items))
	for _, item := range items {
		e, ok := plainManagedFieldsEntry(item)
		if !ok {
			return m.Unstructured.GetManagedFields()
		}
		out = append(out, e)
	}
	return out
}

// plainManagedFieldsEntry converts an entry with only known members of
// the types the unstructured converter accepts, except fieldsV1.
func plainManagedFieldsEntry(item interface{}) (metav1.ManagedFieldsEntry, bool) {
	var e metav1.ManagedFieldsEntry
	m, ok := item.(map[string]interface{})
	if !ok {
		return e, false
	}
	for k, v := range m {
		if k == "fieldsV1" {
			if _, ok := v.(map[string]interface{}); !ok {
				return e, false
			}
			continue
		}
		s, ok := v.(string)
		if !ok {
			return e, false
		}
		switch k {
		case "manager":
			e.Manager = s
		case "operation":
			e.Operation = metav1.ManagedFieldsOperationType(s)
		case "apiVersion":
			e.APIVersion = s
		case "fieldsType":
			e.FieldsType = s
		case "subresource":
			e.Subresource = s
		case "time":
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return e, false
			}
			e.Time = &metav1.Time{Time: t.Local()}
		default:
			return e, false
		}
	}
	return e, true
}

// ValidateUpdate is the strategy's ValidateUpdate (the HTTP layer puts
// ValidateGenericUpdate first).
func (c *crStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	// Ratcheting (CRDValidationRatcheting, GA and locked on): a value the
	// update leaves unchanged is not refused for breaking the schema.
	p, ferrs := c.parts()
	if ferrs != nil {
		return ferrs
	}
	correlated := c.correlate(p, u, o)
	errs := c.validateTypeMeta(u)
	if len(errs) == 0 {
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(u, o, metadataPath)...)
		if p.validator != nil {
			errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, o.Object, p.validator,
				apiservervalidation.WithRatcheting(correlated))...)
		}
		errs = append(errs, c.validateScaleSpec(u)...)
		errs = append(errs, c.validateScaleStatus(u)...)
	}
	if st := p.structural; st != nil {
		errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, st, false)...)
		// Ratcheting: a list that was already invalid may stay so.
		if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, st, o.Object); len(oldErrs) == 0 {
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, st, u.Object)...)
		}
	}
	errs = append(errs, c.validateCEL(p, u.Object, o.Object, errs, correlated)...)
	return errs
}

// correlate pairs the new object with the old for ratcheting.
func (c *crStrategy) correlate(p *crSchemaParts, u, o *unstructured.Unstructured) *common.CorrelatedObject {
	return common.NewCorrelatedObject(u.Object, o.Object, &model.Structural{Structural: p.structural})
}

// parts returns the built schema of the version, or the error that
// building it gave as the validation's only cause.
func (c *crStrategy) parts() (*crSchemaParts, field.ErrorList) {
	p, err := c.schema.built()
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	return p, nil
}

// ValidateStatusUpdate validates a status write against the status schema.
func (c *crStrategy) ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	p, ferrs := c.parts()
	if ferrs != nil {
		return ferrs
	}
	correlated := c.correlate(p, u, o)
	errs := c.validateTypeMeta(u)
	if len(errs) == 0 {
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(u, o, metadataPath)...)
		if status, ok := u.Object["status"]; ok && p.statusValidator != nil {
			var opts []apiservervalidation.ValidationOption
			if p.structural != nil {
				opts = append(opts, apiservervalidation.WithRatcheting(correlated.Key("status")))
			}
			errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, o.Object["status"], p.statusValidator, opts...)...)
		}
		errs = append(errs, c.validateScaleStatus(u)...)
	}
	if st := p.structural; st != nil {
		if newErrs := structurallisttype.ValidateListSetsAndMaps(nil, st, u.Object); len(newErrs) > 0 {
			if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, st, o.Object); len(oldErrs) == 0 {
				errs = append(errs, newErrs...)
			}
		}
	}
	errs = append(errs, c.validateCEL(p, u.Object, o.Object, errs, correlated)...)
	return errs
}

// validateCEL evaluates the x-kubernetes-validations rules, unless errs
// holds an error that makes them unsafe to run (kube-apiserver's
// hasBlockingErr), within kube-apiserver's runtime cost budget.
func (c *crStrategy) validateCEL(p *crSchemaParts, obj, old map[string]interface{}, errs field.ErrorList, correlated *common.CorrelatedObject) field.ErrorList {
	if !p.hasRules {
		return nil
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}
		}
	}
	if old == nil && c.schema.createCheck(p).passes(context.Background(), obj, celconfig.RuntimeCELCostBudget) {
		return nil
	}
	v := c.schema.celValidator(p)
	if v == nil {
		return nil
	}
	var oldObj interface{}
	if old != nil {
		oldObj = old
	}
	var opts []cel.Option
	if correlated != nil {
		opts = append(opts, cel.WithRatcheting(correlated))
	}
	celErrs, _ := v.Validate(context.Background(), nil, p.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return celErrs
}

func (c *crStrategy) validateTypeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if k := u.GetKind(); k != c.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), k, fmt.Sprintf("must be %v", c.gvk.Kind)))
	}
	if v := u.GetAPIVersion(); v != c.gvk.Group+"/"+c.gvk.Version {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), v, fmt.Sprintf("must be %v", c.gvk.Group+"/"+c.gvk.Version)))
	}
	return errs
}

func (c *crStrategy) validateScaleSpec(u *unstructured.Unstructured) field.ErrorList {
	if c.scale == nil {
		return nil
	}
	return validateReplicas(u, c.scale.SpecReplicasPath)
}

func (c *crStrategy) validateScaleStatus(u *unstructured.Unstructured) field.ErrorList {
	if c.scale == nil {
		return nil
	}
	errs := validateReplicas(u, c.scale.StatusReplicasPath)
	if c.scale.LabelSelectorPath != nil {
		p := strings.TrimPrefix(*c.scale.LabelSelectorPath, ".")
		sel, _, err := unstructured.NestedString(u.Object, strings.Split(p, ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*c.scale.LabelSelectorPath), sel, err.Error()))
		}
	}
	return errs
}

func validateReplicas(u *unstructured.Unstructured, path string) field.ErrorList {
	p := strings.TrimPrefix(path, ".")
	n, _, err := unstructured.NestedInt64(u.Object, strings.Split(p, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, err.Error())}
	case n < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// WarningsOnCreate warns about finalizer names that are not
// domain-qualified, as kube-apiserver does for custom resources.
func (c *crStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return finalizerWarnings(obj.(*unstructured.Unstructured).GetFinalizers(), nil)
}

// WarningsOnUpdate warns about added finalizer names.
func (c *crStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	return finalizerWarnings(obj.(*unstructured.Unstructured).GetFinalizers(), old.(*unstructured.Unstructured).GetFinalizers())
}

func finalizerWarnings(finalizers, old []string) []string {
	seen := map[string]bool{}
	for _, f := range old {
		seen[f] = true
	}
	added := map[string]bool{}
	for _, f := range finalizers {
		if !seen[f] {
			added[f] = true
		}
	}
	fldPath := field.NewPath("metadata", "finalizers")
	var warnings []string
	for _, f := range sortedKeys(added) {
		for _, msg := range validation.IsQualifiedName(f) {
			warnings = append(warnings, fmt.Sprintf("%s: %q: %s", fldPath.String(), f, msg))
		}
		if !strings.Contains(f, "/") && !standardFinalizers[f] {
			if strings.Contains(f, ".") {
				warnings = append(warnings, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers", fldPath.String(), f))
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers", fldPath.String(), f))
			}
		}
	}
	return warnings
}

// crColumns is apiextensions-apiserver's table convertor for one version:
// Name, then the additionalPrinterColumns (or Age when there are none),
// evaluated as JSONPath.
type crColumns struct {
	headers []metav1.TableColumnDefinition
	paths   []*jsonpath.JSONPath
}

func newCRColumns(defs []apiextensionsv1.CustomResourceColumnDefinition) (*crColumns, error) {
	if len(defs) == 0 {
		defs = []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"},
		}
	}
	c := &crColumns{headers: []metav1.TableColumnDefinition{nameColumn()}}
	for _, d := range defs {
		p := jsonpath.New(d.Name)
		if err := p.Parse(fmt.Sprintf("{%s}", d.JSONPath)); err != nil {
			return nil, fmt.Errorf("unrecognized column definition %q", d.JSONPath)
		}
		p.AllowMissingKeys(true)
		desc := fmt.Sprintf("Custom resource definition column (in JSONPath format): %s", d.JSONPath)
		if d.Description != "" {
			desc = d.Description
		}
		c.paths = append(c.paths, p)
		c.headers = append(c.headers, metav1.TableColumnDefinition{
			Name: d.Name, Type: d.Type, Format: d.Format, Description: desc, Priority: d.Priority,
		})
	}
	return c, nil
}

func (c *crColumns) row(obj runtime.Object) ([]interface{}, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource table: unexpected object %T", obj)
	}
	cells := make([]interface{}, 1, 1+len(c.paths))
	cells[0] = u.GetName()
	var buf bytes.Buffer
	for i, p := range c.paths {
		results, err := p.FindResults(u.Object)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			cells = append(cells, nil)
			continue
		}
		value := results[0][0].Interface()
		typ := c.headers[i+1].Type
		if typ == "string" {
			if err := p.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err == nil {
				cells = append(cells, buf.String())
				buf.Reset()
			} else {
				cells = append(cells, nil)
			}
			continue
		}
		cells = append(cells, cellForJSONValue(typ, value))
	}
	return cells, nil
}

// cellForJSONValue is kube-apiserver's cell of a non-string column.
func cellForJSONValue(typ string, value interface{}) interface{} {
	if value == nil {
		return nil
	}
	switch typ {
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "string":
		if s, ok := value.(string); ok {
			return s
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			if t.IsZero() {
				return "<unknown>"
			}
			return duration.HumanDuration(now().Sub(t.Time))
		}
	}
	return nil
}

// selectableField is one spec.versions[].selectableFields entry.
type selectableField struct {
	name string
	path *jsonpath.JSONPath
}

func newSelectableFields(defs []apiextensionsv1.SelectableField) ([]selectableField, error) {
	out := make([]selectableField, 0, len(defs))
	for _, d := range defs {
		p := jsonpath.New("selectableField")
		p.AllowMissingKeys(true)
		if err := p.Parse("{" + d.JSONPath + "}"); err != nil {
			return nil, fmt.Errorf("selectable field %q: %w", d.JSONPath, err)
		}
		out = append(out, selectableField{name: strings.TrimPrefix(d.JSONPath, "."), path: p})
	}
	return out, nil
}

// crFieldSet is the custom resource's field-selector attributes:
// metadata.name, metadata.namespace (namespaced kinds) and each selectable
// field, "" when absent, else the value printed with %v.
func crFieldSet(obj runtime.Object, namespaced bool, selectable []selectableField) fields.Set {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	set := fields.Set{"metadata.name": u.GetName()}
	if namespaced {
		set["metadata.namespace"] = u.GetNamespace()
	}
	for _, f := range selectable {
		set[f.name] = ""
		results, err := f.path.FindResults(u.Object)
		if err != nil || len(results) != 1 || len(results[0]) != 1 {
			continue
		}
		if v := results[0][0].Interface(); v != nil {
			set[f.name] = fmt.Sprint(v)
		}
	}
	return set
}

// decodeStoredUnstructured decodes a stored custom resource.
func decodeStoredUnstructured(value []byte) (*unstructured.Unstructured, error) {
	m := map[string]interface{}{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(value, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
