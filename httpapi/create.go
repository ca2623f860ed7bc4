package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/audit"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// maxGenerateNameAttempts bounds retries of a generateName that collides.
const maxGenerateNameAttempts = 8

// writeOptions are the query parameters shared by create, update and patch.
type writeOptions struct {
	dryRun          bool
	fieldManager    string
	fieldValidation string
	force           bool
}

// parseWriteOptions decodes the query parameters of a write into
// CreateOptions, UpdateOptions or PatchOptions (optionsKind) and validates
// them with apimachinery's validation, as kube-apiserver does: dryRun,
// fieldManager (length, printable characters), fieldValidation, and for
// patches force (apply only) and a required fieldManager for apply.
func parseWriteOptions(q url.Values, optionsKind string, pt types.PatchType) (writeOptions, error) {
	var (
		errs field.ErrorList
		o    writeOptions
		err  error
	)
	switch optionsKind {
	case "CreateOptions":
		var opts metav1.CreateOptions
		if err = metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err == nil {
			errs = metav1validation.ValidateCreateOptions(&opts)
			o = writeOptions{dryRun: len(opts.DryRun) > 0, fieldManager: opts.FieldManager, fieldValidation: opts.FieldValidation}
		}
	case "UpdateOptions":
		var opts metav1.UpdateOptions
		if err = metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err == nil {
			errs = metav1validation.ValidateUpdateOptions(&opts)
			o = writeOptions{dryRun: len(opts.DryRun) > 0, fieldManager: opts.FieldManager, fieldValidation: opts.FieldValidation}
		}
	default:
		var opts metav1.PatchOptions
		if err = metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err == nil {
			errs = metav1validation.ValidatePatchOptions(&opts, pt)
			o = writeOptions{dryRun: len(opts.DryRun) > 0, fieldManager: opts.FieldManager, fieldValidation: opts.FieldValidation,
				force: opts.Force != nil && *opts.Force}
		}
	}
	if err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if len(errs) > 0 {
		return o, newInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: optionsKind}, "", errs)
	}
	return o, nil
}

// decodeWrite parses the write options (optionsKind names them in errors:
// CreateOptions, UpdateOptions) and decodes the request body into an object
// of r's kind, adding unknown-field warnings to the response.
func (s *Server) decodeWrite(r *request, optionsKind string) (runtime.Object, writeOptions, error) {
	c := r.c
	opts, err := parseWriteOptions(c.Request().URL.Query(), optionsKind, "")
	if err != nil {
		return nil, opts, err
	}
	enc, ok := bodyEncoding(c.Request().Header.Get("Content-Type"))
	if !ok {
		return nil, opts, errUnsupportedMediaType()
	}
	body, err := s.readBody(c)
	if err != nil {
		return nil, opts, err
	}
	obj, warnings, err := s.decodeBody(r.kind, body, enc, opts.fieldValidation)
	if err != nil {
		return nil, opts, err
	}
	audit.SetObjectMeta(c.Request().Context(), registry.Accessor(obj))
	addWarnings(c, warnings)
	return obj, opts, nil
}

func (s *Server) handleCreate(r *request) error {
	c := r.c
	k := r.kind
	if k.Review != nil {
		return s.handleReview(r)
	}
	obj, opts, err := s.decodeWrite(r, "CreateOptions")
	if err != nil {
		return s.writeError(c, err)
	}
	manager := managerName(opts.fieldManager, c.Request().UserAgent())
	out, created, err := s.createObject(c.Request().Context(), r, obj, manager, opts.dryRun)
	if err != nil {
		return s.writeError(c, err)
	}
	if opts.dryRun {
		return s.writeNew(c, http.StatusCreated, r.rep, k, out)
	}
	primeCreated(k, created.Value)
	return s.writeStored(c, http.StatusCreated, r.rep, k, created.Value)
}

// create runs the generic and kind-specific create steps and stores obj.
// For a dry run nothing is stored and the returned store.Object is empty.
func (s *Server) createObject(ctx context.Context, r *request, obj runtime.Object, manager string, dryRun bool) (runtime.Object, store.Object, error) {
	k := r.kind
	if err := s.admitWrite(ctx, obj, nil); err != nil {
		return nil, store.Object{}, err
	}
	m := registry.Accessor(obj)
	if err := checkNamespace(k, m, r.ri.Namespace); err != nil {
		return nil, store.Object{}, err
	}
	if m.GetResourceVersion() != "" {
		return nil, store.Object{}, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if k.Namespaced {
		if err := s.namespaceAcceptsCreate(ctx, k, m); err != nil {
			return nil, store.Object{}, err
		}
	}
	// Field management sees the object as the client sent it, before
	// the strategy's defaults, as in kube-apiserver.
	if manager != "" {
		fm, err := s.fieldManagers.get(k, "")
		if err != nil {
			return nil, store.Object{}, apierrors.NewInternalError(err)
		}
		live := k.New()
		live.GetObjectKind().SetGroupVersionKind(k.GVK)
		obj = s.fieldManagers.creates.updateCreate(fm, live, obj, manager)
		m = registry.Accessor(obj)
	}
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	k.Strategy.PrepareForCreate(obj)
	m.SetUID(uuidNew())
	m.SetCreationTimestamp(metav1.Now().Rfc3339Copy())
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if generated {
		m.SetName(generateName(m.GetGenerateName()))
	}
	// The kind's BeginCreate (Service IP and port allocation) runs before
	// validation, as kube-apiserver's does; whatever happens next,
	// finish tells it whether the write committed.
	committed := false
	if k.BeginCreate != nil {
		finish, err := k.BeginCreate(ctx, obj)
		if err != nil {
			return nil, store.Object{}, err
		}
		defer func() { finish(ctx, committed) }()
	}
	if errs := k.Strategy.Validate(obj); len(errs) > 0 {
		return nil, store.Object{}, newInvalid(k.GVK.GroupKind(), m.GetName(), errs)
	}
	if c, ok := k.Strategy.(registry.Canonicalizer); ok {
		c.Canonicalize(obj)
	}
	if ws, ok := k.Strategy.(registry.WarningStrategy); ok && r.c != nil {
		addWarnings(r.c, ws.WarningsOnCreate(obj))
	}
	if dryRun {
		// A dry run still reports a name that is taken.
		if _, err := s.cfg.Store.Get(ctx, s.key(k, m.GetNamespace(), m.GetName())); err == nil {
			return nil, store.Object{}, apierrors.NewAlreadyExists(schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}, m.GetName())
		}
		return obj, store.Object{}, nil
	}
	gr := schema.GroupResource{Group: k.GVK.Group, Resource: k.Resource}
	for attempt := 0; ; attempt++ {
		value, err := k.EncodeStorage(obj)
		if err != nil {
			return nil, store.Object{}, apierrors.NewInternalError(err)
		}
		created, err := s.cfg.Store.Create(ctx, s.key(k, m.GetNamespace(), m.GetName()), string(m.GetUID()), value)
		if err == nil {
			committed = true
			return obj, created, nil
		}
		if generated && errors.Is(err, store.ErrExists) && attempt < maxGenerateNameAttempts {
			m.SetName(generateName(m.GetGenerateName()))
			continue
		}
		err = storeError(err, gr, m.GetName())
		if apierrors.IsAlreadyExists(err) {
			s.markBeingDeleted(ctx, k, m, err)
		}
		return nil, store.Object{}, err
	}
}

// markBeingDeleted rewords an AlreadyExists error when the existing object
// is being deleted, as kube-apiserver does.
func (s *Server) markBeingDeleted(ctx context.Context, k *registry.Kind, m metav1.Object, err error) {
	cur, gerr := s.cfg.Store.Get(ctx, s.key(k, m.GetNamespace(), m.GetName()))
	if gerr != nil {
		return
	}
	old, derr := k.DecodeStored(cur.Value)
	if derr != nil || registry.Accessor(old).GetDeletionTimestamp() == nil {
		return
	}
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		se.ErrStatus.Message = "object is being deleted: " + se.ErrStatus.Message
	}
}

// checkNamespace reconciles the object's namespace with the URL's, as
// kube-apiserver does: filled in when empty, 400 when different, cleared
// for cluster-scoped kinds.
func checkNamespace(k *registry.Kind, m metav1.Object, urlNamespace string) error {
	if !k.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch ns := m.GetNamespace(); {
	case ns == "":
		m.SetNamespace(urlNamespace)
	case ns != urlNamespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// maxGeneratedNameLength is how much of a generateName prefix is kept, so
// that prefix plus the random suffix fits 63 characters.
const (
	randomLength           = 5
	maxGeneratedNameLength = 63 - randomLength
)

func generateName(base string) string {
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	return base + utilrand.String(randomLength)
}

func uuidNew() types.UID { return types.UID(uuid.NewString()) }
