package httpapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/edgeapi/edgeapi/httpapi/internal/handlers"
	"github.com/edgeapi/edgeapi/registry"
)

// maxJSONPatchOperations is kube-apiserver's cap on JSON patch operations.
const maxJSONPatchOperations = 10000

// maxJSONPatchCopyBytes is kube-apiserver's JSONPatchMaxCopyBytes default
// (server.NewConfig): the most bytes the "copy" operations of one JSON
// patch may add. Without it, 2,000 copies of a 1.3 MB list took the daemon
// past 4 GB in 40 s.
const maxJSONPatchCopyBytes = 3 << 20

func init() {
	// json-patch v4 reads the limit from this package variable only, as
	// kube-apiserver sets it in its server's New.
	jsonpatch.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes
}

func (s *Server) handlePatch(r *request) error {
	c := r.c
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	pt := types.PatchType(mt)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.ApplyYAMLPatchType:
	case types.StrategicMergePatchType:
		if r.kind.Unstructured {
			return s.writeError(c, errUnsupportedPatchTypeCR())
		}
	default:
		if r.kind.Unstructured {
			return s.writeError(c, errUnsupportedPatchTypeCR())
		}
		return s.writeError(c, errUnsupportedPatchType())
	}
	opts, err := parseWriteOptions(c.Request().URL.Query(), "PatchOptions", pt)
	if err != nil {
		return s.writeError(c, err)
	}
	if pt == types.ApplyYAMLPatchType {
		return s.handleApply(r, opts)
	}
	patch, err := s.readBody(c)
	if err != nil {
		return s.writeError(c, err)
	}
	var warnings []string
	manager := managerName(opts.fieldManager, c.Request().UserAgent())
	res, err := s.guaranteedUpdateReading(c.Request().Context(), r, r.ri.Subresource, manager, opts.dryRun, func(cur runtime.Object) (runtime.Object, error) {
		obj, w, err := s.applyPatchKind(r.kind, pt, patch, cur, opts.fieldValidation)
		warnings = w
		if err == nil {
			normalize(r.kind, obj)
		}
		return obj, err
	})
	if err != nil {
		return s.writeError(c, err)
	}
	addWarnings(c, warnings)
	return s.writeUpdateResult(r, res, opts.dryRun)
}

// applyPatch applies a JSON, merge or strategic merge patch to cur, as
// kube-apiserver's patcher does, including its error codes and its
// handling of unknown fields per fieldValidation.
func (s *Server) applyPatch(pt types.PatchType, patch []byte, cur runtime.Object, validation string) (runtime.Object, []string, error) {
	return s.applyPatchKind(nil, pt, patch, cur, validation)
}

// applyPatchKind is applyPatch for an object of kind k; k nil means a
// typed object of the Scheme.
func (s *Server) applyPatchKind(k *registry.Kind, pt types.PatchType, patch []byte, cur runtime.Object, validation string) (runtime.Object, []string, error) {
	kind := s.kindOf(cur)
	curJS, err := json.Marshal(cur)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	checkUnknown := validation == validationStrict || validation == validationWarn || validation == ""
	var strictErrs []error
	var patchedJS []byte
	switch pt {
	case types.JSONPatchType:
		if checkUnknown {
			errs, err := handlers.StrictJSONPatchErrors(patch)
			if err != nil {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
			strictErrs = errs
		}
		ops, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		if err := checkJSONPatchCost(ops, curJS, patch); err != nil {
			return nil, nil, err
		}
		if patchedJS, err = applyJSONPatch(ops, curJS); err != nil {
			return nil, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case types.MergePatchType:
		if err := checkMergePatchCost(patch); err != nil {
			return nil, nil, err
		}
		if checkUnknown {
			v := map[string]interface{}{}
			errs, err := kjson.UnmarshalStrict(patch, &v)
			if err != nil {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
			strictErrs = errs
		}
		patchedJS, err = mergePatch(curJS, patch)
		if err == jsonpatch.ErrBadJSONPatch {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	case types.StrategicMergePatchType:
		return s.strategicPatch(kind, patch, cur, validation)
	}
	if k != nil && k.Unstructured {
		return decodeUnstructuredPatched(k, patchedJS, strictErrs, validation, func() string { return string(patchedJS) })
	}
	return s.decodePatched(kind, patchedJS, strictErrs, validation, func() string { return string(patchedJS) })
}

// applyJSONPatch is ops.Apply with its panics on a malformed operation made
// an error: json-patch v4 dereferences the missing value of a "replace" or
// "test" of the whole document (path ""), and net/http then closes the
// connection without an answer; kube-apiserver answers its panic filter's
// 500. doc is this request's own copy.
func applyJSONPatch(ops jsonpatch.Patch, doc []byte) (patched []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			patched, err = nil, fmt.Errorf("invalid JSON patch: %v", p)
		}
	}()
	return ops.Apply(doc)
}

// decodePatched decodes a patched document into a new object of the
// current one's kind, applying fieldValidation. quoted gives the patch's
// value for an Invalid answer; it is called only for one, as it copies or
// formats up to the whole document.
func (s *Server) decodePatched(gvk schema.GroupVersionKind, patchedJS []byte, strictErrs []error, validation string, quoted func() string) (runtime.Object, []string, error) {
	into, err := newObject(gvk)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	if obj, ok := decodeCleanJSON(patchedJS, gvk, func() runtime.Object { return into }); ok {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return finishPatched(obj, strictErrs, validation, quoted)
	}
	if into, err = newObject(gvk); err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	def := gvk
	obj, _, err := s.codecs.json.Decode(patchedJS, &def, into)
	if err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict {
			return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), quoted(), err.Error())})
		}
		strictErrs = append(strictErrs, strictErr.Errors()...)
	}
	if got := obj.GetObjectKind().GroupVersionKind(); got != gvk {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), quoted(),
			fmt.Sprintf("%s in version %q cannot be handled as a %s", got.Kind, got.Version, gvk.Kind))})
	}
	return finishPatched(obj, strictErrs, validation, quoted)
}

func finishPatched(obj runtime.Object, strictErrs []error, validation string, quoted func() string) (runtime.Object, []string, error) {
	if len(strictErrs) == 0 || validation == validationIgnore {
		return obj, nil, nil
	}
	if validation == validationStrict {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), quoted(), runtime.NewStrictDecodingError(strictErrs).Error())})
	}
	warnings := make([]string, 0, len(strictErrs))
	for _, e := range strictErrs {
		warnings = append(warnings, e.Error())
	}
	return obj, warnings, nil
}

// strategicPatch applies a strategic merge patch using the Go type of the
// object as the schema (patch strategies and merge keys).
func (s *Server) strategicPatch(gvk schema.GroupVersionKind, patch []byte, cur runtime.Object, validation string) (runtime.Object, []string, error) {
	orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	patchMap := map[string]interface{}{}
	var strictErrs []error
	if validation == validationStrict || validation == validationWarn || validation == "" {
		if strictErrs, err = kjson.UnmarshalStrict(patch, &patchMap); err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	} else if err := kjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap); err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	if err := checkStrategicListSizes(orig, patchMap, ""); err != nil {
		return nil, nil, err
	}
	schemaObj, err := newObject(gvk)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	patched, err := strategicMergeMapPatch(orig, patchMap, schemaObj)
	if err != nil {
		return nil, nil, strategicPatchError(err)
	}
	into, _ := newObject(gvk)
	quoted := func() string { return fmt.Sprintf("%+v", patchMap) }
	returnUnknown := validation == validationStrict || validation == validationWarn || validation == ""
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, into, returnUnknown); err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict {
			return nil, nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), quoted(), err.Error())})
		}
		strictErrs = append(strictErrs, strictErr.Errors()...)
	}
	into.GetObjectKind().SetGroupVersionKind(gvk)
	return finishPatched(into, strictErrs, validation, quoted)
}

// strategicMergeMapPatch is strategicpatch.StrategicMergeMapPatch with its
// panics on a malformed patch made a 400. apimachinery uses the patch's
// values as map keys and compares them with ==, so a $retainKeys or
// $setElementOrder entry, or a merge key's value, that is a list or an
// object panics ("hash of unhashable type []interface {}"), and net/http
// then closes the connection without an answer; kube-apiserver answers
// its panic filter's 500. Checking every such place beforehand would copy
// the library's logic; the maps are this request's own, so nothing shared
// is left half changed.
func strategicMergeMapPatch(orig, patch map[string]interface{}, schemaObj runtime.Object) (patched map[string]interface{}, err error) {
	defer func() {
		if p := recover(); p != nil {
			patched, err = nil, fmt.Errorf("invalid strategic merge patch: %v", p)
		}
	}()
	return strategicpatch.StrategicMergeMapPatch(orig, patch, schemaObj)
}

// strategicPatchError maps strategic merge patch errors as kube-apiserver
// does, except that unknown directives are a 400 here rather than a 500.
func strategicPatchError(err error) error {
	switch err {
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return apierrors.NewBadRequest(err.Error())
}

// kindOf returns the GVK set on obj.
func (s *Server) kindOf(obj runtime.Object) schema.GroupVersionKind {
	return obj.GetObjectKind().GroupVersionKind()
}

// newObject returns a new typed object of gvk with its kind set.
func newObject(gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := registry.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// maxStrategicListEntries bounds the entries of a list that a strategic
// merge patch merges or orders: those of the object's list and of the
// patch's list, its $setElementOrder and its $deleteFromPrimitiveList
// together. apimachinery's strategicpatch deduplicates, orders and matches
// list entries pairwise, in time quadratic in them: merging 50,000
// finalizers into 50,000, or ordering 50,000, went unanswered for more
// than 60 s; ordering 5,000 against 5,000 took 3.2 s, and merging them
// 1.2 s. kube-apiserver uses the same code and has no bound; at 2,048
// entries the quadratic part stays near 0.1 s.
const maxStrategicListEntries = 2048

// checkStrategicListSizes walks the maps of patch along with those of
// orig (the object) and refuses, with a 413 in the words of
// kube-apiserver's JSON patch operation cap, a patch that would merge more
// than maxStrategicListEntries entries in one list. It visits each map
// entry of the patch once.
func checkStrategicListSizes(orig, patch map[string]interface{}, at string) error {
	// sizes counts the entries of the lists merged (pairwise), by name;
	// a $deleteFromPrimitiveList alone is a linear set difference.
	var sizes map[string]int
	for k, v := range patch {
		name := strings.TrimPrefix(k, "$deleteFromPrimitiveList/")
		name = strings.TrimPrefix(name, "$setElementOrder/")
		switch v := v.(type) {
		case []interface{}:
			if sizes == nil {
				sizes = map[string]int{}
			}
			sizes[name] += len(v)
		case map[string]interface{}:
			if o, ok := orig[name].(map[string]interface{}); ok {
				if err := checkStrategicListSizes(o, v, at+name+"."); err != nil {
					return err
				}
			} else if err := checkStrategicListSizes(nil, v, at+name+"."); err != nil {
				return err
			}
		}
	}
	for name, n := range sizes {
		if _, merged := patch[name]; !merged {
			if _, ordered := patch["$setElementOrder/"+name]; !ordered {
				continue
			}
		}
		if o, ok := orig[name].([]interface{}); ok {
			n += len(o)
		}
		if n > maxStrategicListEntries {
			return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum entries in a list merged by a strategic merge patch is %d, got %d in %s", maxStrategicListEntries, n, at+name))
		}
	}
	return nil
}
