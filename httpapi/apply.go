package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// handleApply is server-side apply: PATCH with application/apply-patch+yaml.
// The object is created when it does not exist.
func (s *Server) handleApply(r *request, opts writeOptions) error {
	c := r.c
	k := r.kind
	body, err := s.readBody(c)
	if err != nil {
		return s.writeError(c, err)
	}
	if err := checkYAMLExpansion(body, s.cfg.MaxRequestBodyBytes); err != nil {
		return s.writeError(c, err)
	}
	patchObj := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := decodeApplyPatch(body, &patchObj.Object); err != nil {
		return s.writeError(c, apierrors.NewBadRequest("error decoding YAML: "+err.Error()))
	}
	if patchObj.Object == nil {
		patchObj.Object = map[string]interface{}{}
	}
	if k.Unstructured {
		// A custom resource's integers must be int64, as its JSON bodies
		// decode them (CEL rules and the scale subresource refuse a
		// float64 where the schema says integer); the apply body was
		// decoded with every number a float64.
		wholeFloatsToInts(patchObj.Object)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(patchObj.Object, "metadata", "managedFields"); ok {
		return s.writeError(c, apierrors.NewBadRequest("metadata.managedFields must be nil"))
	}
	fm, err := s.fieldManagers.get(k, r.ri.Subresource)
	if err != nil {
		return s.writeError(c, apierrors.NewInternalError(err))
	}
	ctx := c.Request().Context()
	for {
		_, gerr := s.cfg.Store.Get(ctx, s.key(k, r.ri.Namespace, r.ri.Name))
		if errors.Is(gerr, store.ErrNotFound) && r.ri.Subresource == "" {
			live := k.New()
			live.GetObjectKind().SetGroupVersionKind(k.GVK)
			obj, err := fm.Apply(live, patchObj, opts.fieldManager, opts.force)
			if err != nil {
				return s.writeError(c, applyError(err))
			}
			m := registry.Accessor(obj)
			if m.GetName() == "" {
				m.SetName(r.ri.Name)
			}
			if m.GetName() != r.ri.Name {
				// Else the object of the body's name would be created
				// instead, and once it exists every such apply would
				// loop here on AlreadyExists for ever.
				return s.writeError(c, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), r.ri.Name)))
			}
			out, created, err := s.createObject(ctx, r, obj, "", opts.dryRun)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return s.writeError(c, err)
			}
			if opts.dryRun {
				return s.writeNew(c, http.StatusCreated, r.rep, k, out)
			}
			return s.writeStored(c, http.StatusCreated, r.rep, k, created.Value)
		}
		if gerr != nil {
			return s.writeError(c, storeError(gerr, r.gr(), r.ri.Name))
		}
		res, err := s.guaranteedUpdate(ctx, r, r.ri.Subresource, "", opts.dryRun, func(cur runtime.Object) (runtime.Object, error) {
			obj, err := fm.Apply(cur, patchObj, opts.fieldManager, opts.force)
			if err != nil {
				return nil, applyError(err)
			}
			return obj, nil
		})
		if err != nil {
			var se *apierrors.StatusError
			if errors.As(err, &se) && apierrors.IsNotFound(se) {
				continue
			}
			return s.writeError(c, err)
		}
		return s.writeUpdateResult(r, res, opts.dryRun)
	}
}

// wholeFloatsToInts replaces, in place, each float64 in v that is a whole
// number within int64's range by that int64, as
// k8s.io/apimachinery/pkg/util/json does when it decodes unstructured
// objects.
func wholeFloatsToInts(v interface{}) interface{} {
	switch v := v.(type) {
	case float64:
		if i := int64(v); float64(i) == v && v >= -(1<<63) && v < 1<<63 {
			return i
		}
	case map[string]interface{}:
		for k, e := range v {
			v[k] = wholeFloatsToInts(e)
		}
	case []interface{}:
		for i, e := range v {
			v[i] = wholeFloatsToInts(e)
		}
	}
	return v
}

// decodeApplyPatch decodes an apply patch as kube-apiserver does, with
// sigs.k8s.io/yaml, which parses YAML and converts it to JSON before it
// decodes that. A body that is a plain JSON object (what client-go and
// most clients send) decodes as JSON directly, with the same result: the
// conversion keeps JSON's values, and both end in encoding/json (numbers
// as float64, the last duplicate key winning). Anything else, and any body
// JSON rejects, goes through YAML, which words the errors.
func decodeApplyPatch(body []byte, into *map[string]interface{}) error {
	if t := bytes.TrimLeft(body, " \r\n"); len(t) > 0 && t[0] == '{' && plainJSON(body) {
		if m, ok := decodePlainJSONObject(body); ok && shortKeys(m) {
			*into = m
			return nil
		}
		m := map[string]interface{}{}
		if json.Unmarshal(body, &m) == nil && shortKeys(m) {
			*into = m
			return nil
		}
	}
	return yaml.Unmarshal(body, into)
}

// plainJSON reports whether body avoids what YAML reads differently from
// JSON: escapes (YAML 1.1 has no \/ and rejects surrogate \u escapes),
// tabs, and bytes that are not UTF-8.
func plainJSON(body []byte) bool {
	return bytes.IndexByte(body, '\\') < 0 && bytes.IndexByte(body, '\t') < 0 && utf8.Valid(body)
}

// maxPlainKey is the longest object key decodeApplyPatch takes from JSON:
// YAML stops looking for a key's ':' 1,024 characters after the key began.
const maxPlainKey = 1000

// shortKeys reports whether every object key in v is at most maxPlainKey
// bytes long.
func shortKeys(v interface{}) bool {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, e := range v {
			if len(k) > maxPlainKey || !shortKeys(e) {
				return false
			}
		}
	case []interface{}:
		for _, e := range v {
			if !shortKeys(e) {
				return false
			}
		}
	}
	return true
}

// applyError keeps Status errors (conflicts) and makes anything else a 400
// rather than kube-apiserver's 500 for a bad apply body.
func applyError(err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}
