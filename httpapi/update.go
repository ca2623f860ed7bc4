package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// errDeleteInstead is returned by an update function when the update empties
// the finalizers of an object being deleted: the object goes away instead.
var errDeleteInstead = errors.New("httpapi: finalizers emptied on a deleting object")

// updateFunc computes the new object from the current one. It must not
// modify cur.
type updateFunc func(cur runtime.Object) (runtime.Object, error)

// updateResult is what guaranteedUpdate did.
type updateResult struct {
	obj     runtime.Object // the new object (for a dry run) or nil
	stored  store.Object   // the stored result (zero for a dry run)
	deleted bool           // the object was deleted (finalizers emptied)
}

// guaranteedUpdate is the read-modify-write loop of PUT and PATCH: it reads
// the object, applies fn, runs the generic update steps, and writes with
// the read revision as precondition, retrying when another writer got in
// between. A no-op writes nothing.
func (s *Server) guaranteedUpdate(ctx context.Context, r *request, subresource, manager string, dryRun bool, fn updateFunc) (updateResult, error) {
	return s.guaranteedUpdateOf(ctx, r, subresource, manager, dryRun, fn, true)
}

// guaranteedUpdateReading is guaranteedUpdate for an fn that only reads
// the current object (a PUT ignores it, a JSON or merge patch encodes
// it): fn gets the decoded object itself rather than a copy.
func (s *Server) guaranteedUpdateReading(ctx context.Context, r *request, subresource, manager string, dryRun bool, fn updateFunc) (updateResult, error) {
	return s.guaranteedUpdateOf(ctx, r, subresource, manager, dryRun, fn, false)
}

// guaranteedUpdateOf is guaranteedUpdate, giving fn a copy of the current
// object when copyCur is set.
func (s *Server) guaranteedUpdateOf(ctx context.Context, r *request, subresource, manager string, dryRun bool, fn updateFunc, copyCur bool) (updateResult, error) {
	k := r.kind
	key := s.key(k, r.ri.Namespace, r.ri.Name)
	gr := r.gr()
	var res updateResult
	// finish ends the BeginUpdate of the latest attempt (a retry ends the
	// previous one as failed); success only for a committed write.
	var finish registry.FinishFunc
	endAttempt := func(success bool) {
		if finish != nil {
			finish(ctx, success)
			finish = nil
		}
	}
	defer endAttempt(false)
	tryUpdate := func(cur store.Object) ([]byte, error) {
		endAttempt(false)
		if r.c != nil && len(cur.Value) > largeBodyBytes {
			// Patching or replacing a large stored object costs what a
			// large body does (decoding, merging, field management, a
			// few copies of it), whatever the size of the request: it
			// takes a large-request slot too.
			if err := s.admitLargeBody(r.c); err != nil {
				return nil, err
			}
		}
		old, err := k.DecodeStored(cur.Value)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		in := old
		if copyCur {
			in = old.DeepCopyObject()
		}
		obj, err := fn(in)
		if err != nil {
			return nil, err
		}
		if obj, finish, err = s.beforeUpdate(ctx, r, obj, old, subresource, manager); err != nil {
			return nil, err
		}
		m := registry.Accessor(obj)
		if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 {
			res.obj = obj
			return nil, errDeleteInstead
		}
		value, err := k.EncodeStorage(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		res.obj = obj
		if dryRun {
			return nil, errDryRun
		}
		return value, nil
	}
	for {
		stored, err := s.cfg.Store.GuaranteedUpdate(ctx, key, tryUpdate)
		switch {
		case err == nil:
			endAttempt(true)
			res.stored = stored
			return res, nil
		case errors.Is(err, errDryRun):
			return res, nil
		case errors.Is(err, errDeleteInstead):
			if dryRun {
				res.deleted = true
				return res, nil
			}
			cur, gerr := s.cfg.Store.Get(ctx, key)
			if gerr != nil {
				return res, storeError(gerr, gr, r.ri.Name)
			}
			del, derr := s.cfg.Store.Delete(ctx, key, store.Preconditions{ModRev: cur.ModRev})
			if errors.Is(derr, store.ErrConflict) {
				continue
			}
			if derr != nil {
				return res, storeError(derr, gr, r.ri.Name)
			}
			endAttempt(false)
			if deleted, derr := k.DecodeStored(cur.Value); derr == nil {
				afterDelete(ctx, k, deleted)
			}
			// The answer is the object as updated, with the resourceVersion
			// it had before the delete, as kube-apiserver answers.
			value, err := k.EncodeStorage(res.obj)
			if err != nil {
				return res, apierrors.NewInternalError(err)
			}
			if value, err = store.StampRevision(value, cur.ModRev); err != nil {
				return res, apierrors.NewInternalError(err)
			}
			del.Value = value
			res.stored, res.deleted = del, true
			return res, nil
		}
		return res, storeError(err, gr, r.ri.Name)
	}
}

// errDryRun stops the update loop after every stage ran.
var errDryRun = errors.New("httpapi: dry run")

// beforeUpdate runs the generic and kind-specific update steps on obj, the
// proposed new state of old.
//
// For the main resource it also runs the kind's BeginUpdate, after
// PrepareForUpdate and before validation; the returned finish (nil when the
// kind has none or the update failed) must be called once the write
// committed or failed.
func (s *Server) beforeUpdate(ctx context.Context, r *request, obj, old runtime.Object, subresource, manager string) (_ runtime.Object, _ registry.FinishFunc, err error) {
	k := r.kind
	// Field management sees the object as the client sent it, before the
	// strategy runs, as in kube-apiserver. Apply (manager "") recorded its
	// fields already.
	if manager != "" {
		fm, err := s.fieldManagers.get(k, subresource)
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		obj = s.fieldManagers.updates.update(fm, k.GVK, old, obj, manager)
	}
	if err := s.admitWrite(ctx, obj, old); err != nil {
		return nil, nil, err
	}
	m, om := registry.Accessor(obj), registry.Accessor(old)
	if err := checkNamespace(k, m, r.ri.Namespace); err != nil {
		return nil, nil, err
	}
	if m.GetName() == "" {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", r.ri.Name))
	}
	if m.GetName() != r.ri.Name {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), r.ri.Name))
	}
	if uid := m.GetUID(); r.ri.Verb == "update" && uid != "" && uid != om.GetUID() {
		// A uid in a PUT body is a precondition, checked by the storage
		// before the resourceVersion (kube-apiserver's
		// DefaultUpdatedObjectInfo.Preconditions). A patch that changes
		// the uid is a 422 from validation instead.
		return nil, nil, errUIDPrecondition(k, r.gr(), r.ri.Namespace, r.ri.Name, uid, om.GetUID())
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != om.GetResourceVersion() {
		return nil, nil, apierrors.NewConflict(r.gr(), r.ri.Name, errors.New(conflictMessage))
	}
	if m.GetResourceVersion() == "" && !k.Strategy.AllowUnconditionalUpdate() {
		return nil, nil, apierrors.NewInvalid(k.GVK.GroupKind(), m.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), m.GetResourceVersion(), "must be specified for an update")})
	}
	m.SetResourceVersion(om.GetResourceVersion())
	m.SetGeneration(om.GetGeneration())
	var errs field.ErrorList
	switch subresource {
	case "status":
		ss, ok := k.Strategy.(registry.StatusStrategy)
		if !ok {
			return nil, nil, errNotFoundResource()
		}
		ss.PrepareForStatusUpdate(obj, old)
	case "finalize":
		fs, ok := k.Strategy.(registry.FinalizeStrategy)
		if !ok {
			return nil, nil, errNotFoundResource()
		}
		fs.PrepareForFinalize(obj, old)
	default:
		k.Strategy.PrepareForUpdate(obj, old)
	}
	if m.GetUID() == "" {
		m.SetUID(om.GetUID())
	}
	if ct := om.GetCreationTimestamp(); !ct.IsZero() {
		m.SetCreationTimestamp(ct)
	}
	if om.GetDeletionTimestamp() != nil {
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	} else {
		m.SetDeletionTimestamp(nil)
	}
	if om.GetDeletionGracePeriodSeconds() != nil && m.GetDeletionGracePeriodSeconds() == nil {
		m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	}
	var finish registry.FinishFunc
	if subresource == "" && k.BeginUpdate != nil {
		if finish, err = k.BeginUpdate(ctx, obj, old); err != nil {
			return nil, nil, err
		}
		// Any error below ends the reservation.
		defer func() {
			if err != nil {
				finish(ctx, false)
			}
		}()
	}
	errs = append(errs, registry.ValidateGenericUpdate(obj, old, k.Namespaced)...)
	switch subresource {
	case "status":
		errs = append(errs, k.Strategy.(registry.StatusStrategy).ValidateStatusUpdate(obj, old)...)
	case "finalize":
		errs = append(errs, k.Strategy.(registry.FinalizeStrategy).ValidateFinalizeUpdate(obj, old)...)
	default:
		errs = append(errs, k.Strategy.ValidateUpdate(obj, old)...)
	}
	if len(errs) > 0 {
		return nil, nil, newInvalid(k.GVK.GroupKind(), m.GetName(), errs)
	}
	if c, ok := k.Strategy.(registry.Canonicalizer); ok {
		c.Canonicalize(obj)
	}
	if ws, ok := k.Strategy.(registry.WarningStrategy); ok && subresource == "" && r.c != nil {
		addWarnings(r.c, ws.WarningsOnUpdate(obj, old))
	}
	// A write that changes nothing keeps managedFields' times too.
	if equalButManagedTimes(obj, old) {
		registry.Accessor(obj).SetManagedFields(om.GetManagedFields())
	}
	return obj, finish, nil
}

// equalButManagedTimes reports whether obj and old are equal but for the
// times of their managedFields entries, for no-op detection. Both are the
// request's own: each gets entries without times for the comparison, and
// its own back after it (copying the objects instead cost more than the
// comparison).
func equalButManagedTimes(obj, old runtime.Object) bool {
	restoreObj := withoutManagedTimes(obj)
	defer restoreObj()
	restoreOld := withoutManagedTimes(old)
	defer restoreOld()
	return equality.Semantic.DeepEqual(obj, old)
}

// withoutManagedTimes replaces obj's managedFields by copies of its
// entries without times, and returns what puts the original back.
func withoutManagedTimes(obj runtime.Object) (restore func()) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// The entries of an unstructured object are maps: the time key
		// is left out of a copy of each, and the list put back as it was.
		md, _ := u.Object["metadata"].(map[string]interface{})
		entries, ok := md["managedFields"].([]interface{})
		if !ok {
			return func() {}
		}
		stripped := make([]interface{}, len(entries))
		for i, e := range entries {
			em, ok := e.(map[string]interface{})
			if !ok {
				stripped[i] = e
				continue
			}
			c := make(map[string]interface{}, len(em))
			for k, v := range em {
				if k != "time" {
					c[k] = v
				}
			}
			stripped[i] = c
		}
		md["managedFields"] = stripped
		return func() { md["managedFields"] = entries }
	}
	m := registry.Accessor(obj)
	entries := m.GetManagedFields()
	if len(entries) == 0 {
		return func() {}
	}
	stripped := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		e.Time = nil
		stripped[i] = e
	}
	m.SetManagedFields(stripped)
	return func() { m.SetManagedFields(entries) }
}

func (s *Server) handleUpdate(r *request) error {
	c := r.c
	k := r.kind
	obj, opts, err := s.decodeWrite(r, "UpdateOptions")
	if err != nil {
		return s.writeError(c, err)
	}
	if name := registry.Accessor(obj).GetName(); name != r.ri.Name {
		return s.writeError(c, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, r.ri.Name)))
	}
	if err := checkNamespace(k, registry.Accessor(obj), r.ri.Namespace); err != nil {
		return s.writeError(c, err)
	}
	manager := managerName(opts.fieldManager, c.Request().UserAgent())
	res, err := s.guaranteedUpdateReading(c.Request().Context(), r, r.ri.Subresource, manager, opts.dryRun, func(runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if apierrors.IsNotFound(err) && k.AllowCreateOnUpdate && r.ri.Subresource == "" {
		// Events and Leases are created by PUT, as in kube-apiserver.
		if registry.Accessor(obj).GetResourceVersion() != "" {
			return s.writeError(c, err)
		}
		out, created, cerr := s.createObject(c.Request().Context(), r, obj, manager, opts.dryRun)
		if cerr != nil {
			return s.writeError(c, cerr)
		}
		if opts.dryRun {
			return s.writeNew(c, http.StatusCreated, r.rep, k, out)
		}
		return s.writeStored(c, http.StatusCreated, r.rep, k, created.Value)
	}
	if err != nil {
		return s.writeError(c, err)
	}
	return s.writeUpdateResult(r, res, opts.dryRun)
}

func (s *Server) writeUpdateResult(r *request, res updateResult, dryRun bool) error {
	if dryRun || res.stored.Value == nil {
		return s.writeNew(r.c, http.StatusOK, r.rep, r.kind, res.obj)
	}
	return s.writeStored(r.c, http.StatusOK, r.rep, r.kind, res.stored.Value)
}

// addWarnings adds one Warning header per message, as kube-apiserver does;
// a message already sent (a retried update's) is not repeated.
func addWarnings(c echo.Context, warnings []string) {
	hdr := c.Response().Header()
	for _, h := range warningHeaders(warnings) {
		if !slices.Contains(hdr.Values("Warning"), h) {
			hdr.Add("Warning", h)
		}
	}
}
