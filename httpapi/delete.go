package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Finalizers that edgeapi's garbage collector and namespace lifecycle act on.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents
	finalizerForeground = metav1.FinalizerDeleteDependents
	finalizerKubernetes = "kubernetes"
)

// systemNamespaces may not be deleted.
var systemNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// deleteOptions decodes DeleteOptions from the body or, without a body, the
// query, and validates them as kube-apiserver does. A body must decode to a
// DeleteOptions: anything else is refused before anything is deleted.
//
// kube-apiserver decodes a single delete's body with the meta scheme
// (DeleteOptions is unversioned there, so any apiVersion is accepted, and an
// unknown kind fails to decode) and a collection delete's body with the
// resource's own scheme (where a known kind decodes, then fails the type
// check). It answers both failures with a 500; edgeapi answers 400 with the
// same message, because the input is at fault.
func (s *Server) deleteOptions(r *request, collection bool) (*metav1.DeleteOptions, error) {
	c := r.c
	opts := &metav1.DeleteOptions{}
	body, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		enc, ok := bodyEncoding(c.Request().Header.Get("Content-Type"))
		if !ok {
			return nil, errUnsupportedMediaType()
		}
		if enc == encYAML {
			if err := checkYAMLExpansion(body, s.cfg.MaxRequestBodyBytes); err != nil {
				return nil, err
			}
		}
		var dec runtime.Decoder = s.codecs.forEncoding(enc)
		if !collection {
			dec = s.codecs.metaDecoder(enc)
		}
		def := schema.GroupVersionKind{Group: metav1.GroupName, Version: "v1", Kind: "DeleteOptions"}
		obj, _, err := dec.Decode(body, &def, opts)
		if err != nil && !runtime.IsStrictDecodingError(err) {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if obj != runtime.Object(opts) {
			return nil, apierrors.NewBadRequest("decoded object cannot be converted to DeleteOptions")
		}
	} else if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.Request().URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if _, ok := c.Request().URL.Query()["dryRun"]; ok && len(body) > 0 {
		opts.DryRun = c.Request().URL.Query()["dryRun"]
	}
	errs := metav1validation.ValidateDeleteOptions(opts)
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	if len(errs) > 0 {
		return nil, newInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

func (s *Server) handleDelete(r *request) error {
	c := r.c
	opts, err := s.deleteOptions(r, false)
	if err != nil {
		return s.writeError(c, err)
	}
	if r.kind.Resource == "namespaces" && systemNamespaces[r.ri.Name] {
		return s.writeError(c, apierrors.NewForbidden(r.gr(), r.ri.Name, errors.New("this namespace may not be deleted")))
	}
	res, err := s.deleteObject(c.Request().Context(), r.kind, r.ri.Namespace, r.ri.Name, opts)
	if err != nil {
		return s.writeError(c, err)
	}
	if res.deleted {
		return s.writeStatusSuccess(c, r.rep, &metav1.StatusDetails{
			Name: r.ri.Name, Group: r.kind.GVK.Group, Kind: r.kind.Resource, UID: res.uid,
		})
	}
	if res.obj != nil {
		return s.writeNew(c, http.StatusOK, r.rep, r.kind, res.obj)
	}
	return s.writeStored(c, http.StatusOK, r.rep, r.kind, res.stored.Value)
}

// deleteResult is what deleteObject did.
type deleteResult struct {
	// deleted: the object is gone (or would be, for a dry run).
	deleted bool
	uid     types.UID
	// before is the object as it was when deleted.
	before []byte
	// stored is the object left in place with deletionTimestamp set.
	stored store.Object
	// obj is the dry-run result of a deletion that would only mark.
	obj runtime.Object
}

// deleteObject deletes one object, honouring preconditions, finalizers and
// the propagation policy: an object with finalizers is only marked with
// deletionTimestamp; a Namespace is marked Terminating and finalized by
// the namespace controller.
func (s *Server) deleteObject(ctx context.Context, k *registry.Kind, namespace, name string, opts *metav1.DeleteOptions) (deleteResult, error) {
	key := s.key(k, namespace, name)
	gr := schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
	dryRun := len(opts.DryRun) > 0
	for {
		cur, err := s.cfg.Store.Get(ctx, key)
		if err != nil {
			return deleteResult{}, storeError(err, gr, name)
		}
		obj, err := k.DecodeStored(cur.Value)
		if err != nil {
			return deleteResult{}, apierrors.NewInternalError(err)
		}
		m := registry.Accessor(obj)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return deleteResult{}, apierrors.NewConflict(schema.GroupResource{Resource: k.GVK.Kind}, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return deleteResult{}, apierrors.NewConflict(schema.GroupResource{Resource: k.GVK.Kind}, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		prepared := false
		if k.PrepareForDelete != nil && m.GetDeletionTimestamp() == nil {
			prepared = k.PrepareForDelete(obj)
		}
		marked, changed := markForDeletion(k, obj, opts)
		changed = changed || prepared
		if marked {
			if !changed {
				return deleteResult{stored: cur}, nil
			}
			if dryRun {
				return deleteResult{obj: obj}, nil
			}
			value, err := k.EncodeStorage(obj)
			if err != nil {
				return deleteResult{}, apierrors.NewInternalError(err)
			}
			updated, err := s.cfg.Store.Update(ctx, key, store.Preconditions{ModRev: cur.ModRev}, value)
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			if err != nil {
				return deleteResult{}, storeError(err, gr, name)
			}
			return deleteResult{stored: updated}, nil
		}
		if dryRun {
			return deleteResult{deleted: true, uid: m.GetUID(), before: cur.Value}, nil
		}
		_, err = s.cfg.Store.Delete(ctx, key, store.Preconditions{ModRev: cur.ModRev})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return deleteResult{}, storeError(err, gr, name)
		}
		afterDelete(ctx, k, obj)
		return deleteResult{deleted: true, uid: m.GetUID(), before: cur.Value}, nil
	}
}

// markForDeletion applies a delete to an object that must stay until its
// finalizers are gone: it adds the propagation policy's finalizer and sets
// deletionTimestamp. marked reports whether the object stays; changed
// whether obj was modified.
func markForDeletion(k *registry.Kind, obj runtime.Object, opts *metav1.DeleteOptions) (marked, changed bool) {
	m := registry.Accessor(obj)
	finalizers := m.GetFinalizers()
	policy := metav1.DeletePropagationBackground
	if opts.PropagationPolicy != nil {
		policy = *opts.PropagationPolicy
	} else if opts.OrphanDependents != nil && *opts.OrphanDependents {
		policy = metav1.DeletePropagationOrphan
	}
	if m.GetDeletionTimestamp() == nil || policy != metav1.DeletePropagationBackground {
		switch policy {
		case metav1.DeletePropagationOrphan:
			if !hasString(finalizers, finalizerOrphan) {
				finalizers = append(removeString(finalizers, finalizerForeground), finalizerOrphan)
			}
		case metav1.DeletePropagationForeground:
			if !hasString(finalizers, finalizerForeground) {
				finalizers = append(removeString(finalizers, finalizerOrphan), finalizerForeground)
			}
		}
	}
	if k.Resource == "namespaces" {
		return markNamespace(obj, finalizers)
	}
	if len(finalizers) == 0 {
		return false, false
	}
	if len(finalizers) != len(m.GetFinalizers()) {
		m.SetFinalizers(finalizers)
		changed = true
	}
	if m.GetDeletionTimestamp() == nil {
		now := metav1.Now().Rfc3339Copy()
		m.SetDeletionTimestamp(&now)
		zero := int64(0)
		m.SetDeletionGracePeriodSeconds(&zero)
		changed = true
	}
	return true, changed
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func removeString(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func (s *Server) handleDeleteCollection(r *request) error {
	c := r.c
	ctx := c.Request().Context()
	opts, err := s.deleteOptions(r, true)
	if err != nil {
		return s.writeError(c, err)
	}
	lopts, err := s.listOptions(r)
	if err != nil {
		return s.writeError(c, err)
	}
	res, err := s.cfg.Store.List(ctx, store.ListOptions{
		Resource:  r.kind.StorageResource,
		Namespace: r.ri.Namespace,
		Filter:    matcher(r.kind, lopts.LabelSelector, lopts.FieldSelector),
	})
	if err != nil {
		return s.writeError(c, storeError(err, r.gr(), ""))
	}
	out := make([]store.Object, 0, len(res.Objects))
	for _, o := range res.Objects {
		dr, err := s.deleteObject(ctx, r.kind, o.Key.Namespace, o.Key.Name, opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return s.writeError(c, err)
		}
		// kube-apiserver answers with the items as listed, before deletion.
		_ = dr
		out = append(out, o)
	}
	return s.writeList(c, r, out, &metav1.ListMeta{ResourceVersion: strconv.FormatInt(res.Rev, 10)})
}

// afterDelete runs the kind's AfterDelete hook, if any, for obj, which the
// store no longer holds.
func afterDelete(ctx context.Context, k *registry.Kind, obj runtime.Object) {
	if k.AfterDelete != nil {
		k.AfterDelete(ctx, obj)
	}
}
