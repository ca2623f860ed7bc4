package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kjson "sigs.k8s.io/json"

	"github.com/edgeapi/edgeapi/registry"
)

// The "scale" subresource of custom resources with
// subresources.scale: an autoscaling/v1 Scale read from and written to the
// replica paths of the object, as apiextensions-apiserver's ScaleREST
// does. Writes go through the main resource's update steps (strategy,
// validation, generation), recorded in managedFields as subresource
// "scale". Server-side apply of a Scale is not served.

// invalidSpecReplicas marks a Scale built from an object without spec
// replicas, as kube-apiserver does.
const invalidSpecReplicas = math.MinInt32

// handleScale serves GET, PUT and PATCH of <resource>/<name>/scale.
func (s *Server) handleScale(r *request) error {
	c := r.c
	k := r.kind
	switch r.ri.Verb {
	case "get":
		cur, err := s.cfg.Store.Get(c.Request().Context(), s.key(k, r.ri.Namespace, r.ri.Name))
		if err != nil {
			return s.writeError(c, storeError(err, r.gr(), r.ri.Name))
		}
		obj, err := k.DecodeStored(cur.Value)
		if err != nil {
			return s.writeError(c, apierrors.NewInternalError(err))
		}
		scale, _, err := scaleOf(k.Scale, obj.(*unstructured.Unstructured))
		if err != nil {
			return s.writeError(c, apierrors.NewInternalError(err))
		}
		return s.writeTyped(c, http.StatusOK, r.rep, scale)
	case "update", "patch":
	default:
		return s.writeError(c, errMethodNotAllowed())
	}
	var pt types.PatchType
	optionsKind := "UpdateOptions"
	if r.ri.Verb == "patch" {
		mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
		pt = types.PatchType(mt)
		if pt != types.JSONPatchType && pt != types.MergePatchType {
			return s.writeError(c, errUnsupportedPatchTypeCR())
		}
		optionsKind = "PatchOptions"
	} else if enc, ok := bodyEncoding(c.Request().Header.Get("Content-Type")); !ok || enc != encJSON {
		return s.writeError(c, errUnsupportedMediaType())
	}
	opts, err := parseWriteOptions(c.Request().URL.Query(), optionsKind, pt)
	if err != nil {
		return s.writeError(c, err)
	}
	body, err := s.readBody(c)
	if err != nil {
		return s.writeError(c, err)
	}
	manager := managerName(opts.fieldManager, c.Request().UserAgent())
	res, err := s.guaranteedUpdate(c.Request().Context(), r, "scale", manager, opts.dryRun, func(cur runtime.Object) (runtime.Object, error) {
		u := cur.(*unstructured.Unstructured)
		old, found, err := scaleOf(k.Scale, u)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if !found {
			old.Spec.Replicas = invalidSpecReplicas
		}
		doc := body
		if pt != "" {
			oldJS, err := json.Marshal(old)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			if doc, err = patchScale(pt, body, oldJS); err != nil {
				return nil, err
			}
		}
		var scale autoscalingv1.Scale
		if err := kjson.UnmarshalCaseSensitivePreserveInts(doc, &scale); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if scale.Spec.Replicas == invalidSpecReplicas {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", k.Scale.SpecReplicasPath))
		}
		out := u.DeepCopy()
		path := strings.Split(strings.TrimPrefix(k.Scale.SpecReplicasPath, "."), ".")
		if err := unstructured.SetNestedField(out.Object, int64(scale.Spec.Replicas), path...); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if scale.ResourceVersion != "" {
			// A resourceVersion in the Scale is a precondition.
			out.SetResourceVersion(scale.ResourceVersion)
		}
		return out, nil
	})
	if err != nil {
		return s.writeError(c, err)
	}
	var obj runtime.Object
	if res.stored.Value != nil && !opts.dryRun {
		if obj, err = k.DecodeStored(res.stored.Value); err == nil {
			registry.Accessor(obj).SetResourceVersion(fmt.Sprint(res.stored.ModRev))
		}
	} else {
		obj = res.obj
	}
	if err != nil || obj == nil {
		return s.writeError(c, apierrors.NewInternalError(fmt.Errorf("scale: no object")))
	}
	scale, _, err := scaleOf(k.Scale, obj.(*unstructured.Unstructured))
	if err != nil {
		return s.writeError(c, apierrors.NewInternalError(err))
	}
	return s.writeTyped(c, http.StatusOK, r.rep, scale)
}

// patchScale applies a JSON or merge patch to the JSON of a Scale, with
// the bounds of patches of any object.
func patchScale(pt types.PatchType, patch, doc []byte) ([]byte, error) {
	if pt == types.MergePatchType {
		if err := checkMergePatchCost(patch); err != nil {
			return nil, err
		}
		out, err := jsonpatch.MergePatch(doc, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	}
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ops) > maxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
	}
	if err := checkJSONPatchCost(ops, doc, patch); err != nil {
		return nil, err
	}
	out, err := applyJSONPatch(ops, doc)
	if err != nil {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return out, nil
}

// scaleOf is kube-apiserver's scaleFromCustomResource: the Scale of a
// custom resource; found reports whether it has spec replicas.
func scaleOf(sc *registry.ScaleSubresource, u *unstructured.Unstructured) (*autoscalingv1.Scale, bool, error) {
	specPath := strings.Split(strings.TrimPrefix(sc.SpecReplicasPath, "."), ".")
	spec, found, err := unstructured.NestedInt64(u.Object, specPath...)
	if err != nil {
		return nil, false, err
	}
	if spec < 0 || spec > math.MaxInt32 {
		return nil, false, fmt.Errorf("the spec replicas field %q is out of range: %d", sc.SpecReplicasPath, spec)
	}
	statusPath := strings.Split(strings.TrimPrefix(sc.StatusReplicasPath, "."), ".")
	status, _, err := unstructured.NestedInt64(u.Object, statusPath...)
	if err != nil {
		return nil, false, err
	}
	if status < 0 || status > math.MaxInt32 {
		return nil, false, fmt.Errorf("the status replicas field %q is out of range: %d", sc.StatusReplicasPath, status)
	}
	var selector string
	if sc.LabelSelectorPath != "" {
		p := strings.Split(strings.TrimPrefix(sc.LabelSelectorPath, "."), ".")
		if selector, _, err = unstructured.NestedString(u.Object, p...); err != nil {
			return nil, false, err
		}
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(spec)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(status), Selector: selector},
	}, found, nil
}
