package httpapi

import (
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/httpapi/internal/applyschema"
	"github.com/edgeapi/edgeapi/registry"
)

// This file holds what the request path does differently for Unstructured
// kinds (custom resources): decoding through the kind's DecodeJSON, the
// media types and patch types kube-apiserver's custom resource handler
// accepts, and server-side apply typed by the kind's schema.

// crPatchTypes are the patch types kube-apiserver serves for custom
// resources, in the order its 415 lists them.
const crPatchTypes = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"

// errUnsupportedPatchTypeCR is kube-apiserver's 415 for a strategic merge
// patch (or any unknown patch type) of a custom resource: the custom
// resource handler's negotiation error, not go-restful's.
func errUnsupportedPatchTypeCR() *apierrors.StatusError {
	return statusError(415, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+crPatchTypes, false)
}

// errNotAcceptableCR is the 406 of kube-apiserver's custom resource
// handler (negotiation's errNotAcceptable, no details): custom resources
// refuse Protobuf, though the handler lists it among its media types.
func errNotAcceptableCR() *apierrors.StatusError {
	return statusError(406, metav1.StatusReasonNotAcceptable, "only the following media types are accepted: "+supportedMediaTypesList, false)
}

// errNotMarshalable is protobuf's error for a type without a Protobuf
// form, which kube-apiserver's custom resource handler reports for a
// Protobuf body.
func errNotMarshalable() error {
	return fmt.Errorf("object %v does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message", reflect.TypeOf(&unstructured.Unstructured{}))
}

// decodeUnstructuredBody is decodeBody for Unstructured kinds.
func (s *Server) decodeUnstructuredBody(k *registry.Kind, body []byte, enc encoding, validation string) (runtime.Object, []string, error) {
	strict := validation != validationIgnore
	var yamlStrictErrs []error
	data := body
	switch enc {
	case encProtobuf:
		var gvk *schema.GroupVersionKind
		var unk runtime.Unknown
		if _, got, err := s.codecs.proto.Decode(body, nil, &unk); err == nil {
			gvk = got
		}
		return nil, nil, decodeError(k, gvk, errNotMarshalable(), body)
	case encYAML:
		if err := checkYAMLExpansion(body, s.cfg.MaxRequestBodyBytes); err != nil {
			return nil, nil, err
		}
		js, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, nil, decodeError(k, nil, err, body)
		}
		if strict {
			// Duplicate fields, which YAMLToJSON drops, as
			// kube-apiserver's strict YAML serializer finds them.
			if _, err := yaml.YAMLToJSONStrict(body); err != nil {
				yamlStrictErrs = append(yamlStrictErrs, err)
			}
		}
		data = js
	}
	obj, gvk, strictErrs, err := k.DecodeJSON(data, strict)
	if isStatusError(err) {
		return nil, nil, err // the kind cannot be served (500)
	}
	if err != nil {
		if _, ierr := kjson.DefaultMetaFactory.Interpret(data); ierr != nil {
			// What kube-apiserver's serializer reports first for a
			// document that does not parse.
			err = ierr
		}
		return nil, nil, decodeError(k, gvk, err, body)
	}
	strictErrs = append(yamlStrictErrs, strictErrs...)
	var warnings []string
	if len(strictErrs) > 0 {
		switch validation {
		case validationStrict:
			return nil, nil, decodeError(k, gvk, runtime.NewStrictDecodingError(strictErrs), body)
		case validationIgnore:
		default:
			for _, e := range strictErrs {
				warnings = append(warnings, e.Error())
			}
		}
	}
	if gv := gvk.GroupVersion(); gv != k.GVK.GroupVersion() {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%v)", gv.String(), k.GVK.GroupVersion().String()))
	}
	normalize(k, obj)
	return obj, warnings, nil
}

// decodeUnstructuredPatched is decodePatched for Unstructured kinds.
func decodeUnstructuredPatched(k *registry.Kind, patchedJS []byte, strictErrs []error, validation string, quoted func() string) (runtime.Object, []string, error) {
	obj, _, errs, err := k.DecodeJSON(patchedJS, validation != validationIgnore)
	if isStatusError(err) {
		return nil, nil, err // the kind cannot be served (500)
	}
	if err != nil {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), quoted(), err.Error())})
	}
	return finishPatched(obj, append(strictErrs, errs...), validation, quoted)
}

// crTypeConverter types the objects of one Unstructured kind for
// structured-merge-diff: with the kind's schema (and ObjectMeta's from the
// built-in apply schema), or deduced from the objects when it has none.
type crTypeConverter struct {
	pt typed.ParseableType
}

// newCRTypeConverter builds the type converter of k, as kube-apiserver's
// custom resource handler does from the CRD's OpenAPI schema.
func newCRTypeConverter(k *registry.Kind) (managedfields.TypeConverter, error) {
	var sch *spec.Schema
	if k.ApplySchema != nil {
		sch = k.ApplySchema()
	}
	if sch == nil {
		return managedfields.NewDeducedTypeConverter(), nil
	}
	name := k.GVK.Group + "." + k.GVK.Version + "." + k.GVK.Kind
	cr, err := schemaconv.ToSchemaFromOpenAPI(map[string]*spec.Schema{name: sch}, k.PreserveUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("convert schema of %s: %w", k.GVK, err)
	}
	parser := &typed.Parser{Schema: smdschema.Schema{Types: reachableTypes(name, crApplyTypes(cr.Types))}}
	return crTypeConverter{pt: parser.Type(name)}, nil
}

// crApplyTypes is the types of a custom resource's schema followed by the
// built-in apply schema's types of other names (ObjectMeta and what it
// refers to, for metadata).
func crApplyTypes(cr []smdschema.TypeDef) []smdschema.TypeDef {
	types := append([]smdschema.TypeDef(nil), cr...)
	have := make(map[string]bool, len(cr))
	for _, t := range cr {
		have[t.Name] = true
	}
	for _, t := range applyschema.Parser().Schema.Types {
		if !have[t.Name] {
			types = append(types, t)
		}
	}
	return types
}

// reachableTypes returns the types of all that the type named root refers
// to, itself included, in their order in all. A kind's type converter
// keeps only these, and the index structured-merge-diff builds over them:
// with every built-in type, each custom resource kind that was written
// kept about 25 KiB more.
func reachableTypes(root string, all []smdschema.TypeDef) []smdschema.TypeDef {
	byName := make(map[string]int, len(all))
	for i, t := range all {
		if _, dup := byName[t.Name]; !dup {
			byName[t.Name] = i
		}
	}
	want := map[string]bool{}
	var visitAtom func(a smdschema.Atom)
	visitRef := func(r smdschema.TypeRef) {
		if n := r.NamedType; n != nil && !want[*n] {
			if i, ok := byName[*n]; ok {
				want[*n] = true
				visitAtom(all[i].Atom)
			}
		}
		visitAtom(r.Inlined)
	}
	visitAtom = func(a smdschema.Atom) {
		if a.List != nil {
			visitRef(a.List.ElementType)
		}
		if a.Map != nil {
			for _, f := range a.Map.Fields {
				visitRef(f.Type)
			}
			visitRef(a.Map.ElementType)
		}
	}
	visitRef(smdschema.TypeRef{NamedType: &root})
	out := make([]smdschema.TypeDef, 0, len(want))
	for i, t := range all {
		if want[t.Name] && byName[t.Name] == i {
			out = append(out, t)
		}
	}
	return out
}

func (c crTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource type converter: unexpected object %T", obj)
	}
	return c.pt.FromUnstructured(u.UnstructuredContent(), opts...)
}

func (c crTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	m, ok := v.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("custom resource type converter: value is not an object")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// crConvertor converts between the served versions of an Unstructured
// kind as conversion strategy None does: only apiVersion changes.
type crConvertor struct{}

func (crConvertor) Convert(in, out, context interface{}) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("custom resource conversion: unexpected %T to %T", in, out)
	}
	dst.Object = src.DeepCopy().Object
	return nil
}

func (crConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource conversion: unexpected %T", in)
	}
	gvk := u.GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok {
		return nil, fmt.Errorf("custom resource conversion: %v is not suitable for %v", gvk, target)
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(to)
	return out, nil
}

func (crConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// crDefaulter applies an Unstructured kind's defaults (its
// NormalizeOnDecode) to objects server-side apply builds.
type crDefaulter struct{ k *registry.Kind }

func (d crDefaulter) Default(obj runtime.Object) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		normalize(d.k, obj)
	}
}

// crCreator creates empty Unstructured objects of a kind.
type crCreator struct{}

func (crCreator) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// isStatusError reports whether a kind's DecodeJSON failed with an API
// status of its own (a custom resource schema that cannot be built: 500)
// rather than because of the document.
func isStatusError(err error) bool {
	var st apierrors.APIStatus
	return err != nil && errors.As(err, &st)
}
