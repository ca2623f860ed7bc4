package httpapi

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

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
	patchObj := &unstructured.Unstructured{Object: map[string]interface{}{}}
	if err := yaml.Unmarshal(body, &patchObj.Object); err != nil {
		return s.writeError(c, apierrors.NewBadRequest("error decoding YAML: "+err.Error()))
	}
	if patchObj.Object == nil {
		patchObj.Object = map[string]interface{}{}
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
			m := accessor(obj)
			if m.GetName() == "" {
				m.SetName(r.ri.Name)
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

// applyError keeps Status errors (conflicts) and makes anything else a 400
// rather than kube-apiserver's 500 for a bad apply body.
func applyError(err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}
