package httpapi

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/labstack/echo/v4"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// futureRevWait is how long a read naming a resourceVersion newer than the
// store's waits for it before answering 504, as kube-apiserver does.
var futureRevWait = 3 * time.Second

func (s *Server) handleGet(r *request) error {
	c := r.c
	var opts metav1.GetOptions
	// Without a query there is nothing to decode (most GETs).
	if c.Request().URL.RawQuery != "" {
		if err := metainternalversionscheme.ParameterCodec.DecodeParameters(c.Request().URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
			return s.writeError(c, apierrors.NewBadRequest(err.Error()))
		}
	}
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		rv, err := parseResourceVersion(opts.ResourceVersion)
		if err != nil {
			// kube-apiserver answers 500 here; bad input is a 400.
			return s.writeError(c, apierrors.NewBadRequest(err.Error()))
		}
		if err := s.waitForRev(c.Request().Context(), rv); err != nil {
			return s.writeError(c, err)
		}
	}
	obj, err := s.cfg.Store.Get(c.Request().Context(), s.key(r.kind, r.ri.Namespace, r.ri.Name))
	if err != nil {
		return s.writeError(c, storeError(err, r.gr(), r.ri.Name))
	}
	if r.rep.enc == encProtobuf && r.rep.as == asObject {
		if b, ok := servedProtoObject(r.kind, obj.Value); ok {
			return c.Blob(http.StatusOK, mediaProtobuf, b)
		}
	}
	return s.writeStored(c, http.StatusOK, r.rep, r.kind, obj.Value)
}

// waitForRev waits until the store has reached rev, up to futureRevWait;
// then it is kube-apiserver's 504 "Too large resource version".
func (s *Server) waitForRev(ctx context.Context, rev int64) error {
	if s.cfg.Store.Rev() >= rev {
		return nil
	}
	deadline := time.NewTimer(futureRevWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errRequestTimeout() // the request's deadline came first
			}
			return apierrors.NewTimeoutError("request canceled", 1)
		case <-deadline.C:
			return tooLargeResourceVersion(rev, s.cfg.Store.Rev())
		case <-tick.C:
			if s.cfg.Store.Rev() >= rev {
				return nil
			}
		}
	}
}

// tooLargeResourceVersion is kube-apiserver's 504 for a resourceVersion
// the store has not reached.
func tooLargeResourceVersion(rev, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rev, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// listOptions decodes and validates list/watch query parameters as
// kube-apiserver does (422 Invalid on ListOptions for bad combinations).
func (s *Server) listOptions(r *request) (*metainternalversion.ListOptions, error) {
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.c.Request().URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if errs := metainternalversionvalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
		return nil, newInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if opts.LabelSelector == nil {
		opts.LabelSelector = labels.Everything()
	}
	if opts.FieldSelector == nil {
		opts.FieldSelector = fields.Everything()
	}
	fs, err := opts.FieldSelector.Transform(func(label, value string) (string, string, error) {
		return fieldLabelSupported(r.kind, label, value)
	})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	opts.FieldSelector = fs
	return &opts, nil
}

// fieldLabelSupported checks a field-selector key against the kind, with
// kube-apiserver's messages.
func fieldLabelSupported(k *registry.Kind, label, value string) (string, string, error) {
	if err := k.CheckFieldSelectorKey(label); err != nil {
		return "", "", err
	}
	return label, value, nil
}

// matcher returns the store filter for label and field selectors, nil when
// both select everything.
func matcher(k *registry.Kind, ls labels.Selector, fs fields.Selector) func(*store.Object) bool {
	if ls.Empty() && fs.Empty() {
		return nil
	}
	needObject := false
	if !fs.Empty() {
		for _, req := range fs.Requirements() {
			if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
				needObject = true
			}
		}
	}
	return func(o *store.Object) bool {
		if !fs.Empty() && !needObject {
			set := fields.Set{"metadata.name": o.Key.Name}
			if k.Namespaced {
				set["metadata.namespace"] = o.Key.Namespace
			}
			if !fs.Matches(set) {
				return false
			}
		}
		if needObject {
			obj, err := k.DecodeStored(o.Value)
			if err != nil || !fs.Matches(k.FieldSet(obj)) {
				return false
			}
		}
		if !ls.Empty() {
			var m struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(o.Value, &m); err != nil {
				return false
			}
			if !ls.Matches(labels.Set(m.Metadata.Labels)) {
				return false
			}
		}
		return true
	}
}

// inconsistentContinue is kube-apiserver's message for a continue token
// whose revision has been compacted.
const inconsistentContinue = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// continueToken is the opaque continue position of a paged list: the
// revision of the first page and the last key returned.
type continueToken struct {
	APIVersion string `json:"v"`
	Rev        int64  `json:"rv"`
	Start      string `json:"start"`
}

func encodeContinue(rev int64, namespace, name string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Rev: rev, Start: namespace + "/" + name + "\x00"})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(tok string) (rev int64, namespace, name string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, "", "", fmt.Errorf("continue key is not valid: %v", err)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return 0, "", "", fmt.Errorf("continue key is not valid: %v", err)
	}
	if t.APIVersion != "meta.k8s.io/v1" {
		return 0, "", "", fmt.Errorf("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if t.Rev == 0 || t.Rev < -1 {
		return 0, "", "", fmt.Errorf("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	start := strings.TrimSuffix(t.Start, "\x00")
	namespace, name, _ = strings.Cut(start, "/")
	return t.Rev, namespace, name, nil
}

// parseResourceVersion parses a resourceVersion parameter, with
// kube-apiserver's wording for a bad one.
func parseResourceVersion(rv string) (int64, error) {
	n, err := strconv.ParseUint(rv, 10, 63)
	if err != nil {
		return 0, field.Invalid(field.NewPath("resourceVersion"), rv, err.Error())
	}
	return int64(n), nil
}

// listRevision resolves the resourceVersion semantics of a list: the
// revision to read at (0 = current) and whether limit applies.
func (s *Server) listRevision(ctx context.Context, opts *metainternalversion.ListOptions) (rev int64, useLimit bool, err error) {
	useLimit = opts.Limit > 0
	if opts.Continue != "" {
		switch opts.ResourceVersion {
		case "":
			return 0, useLimit, nil
		case "0":
			// Served from the cache in kube-apiserver: the limit is ignored.
			return 0, false, nil
		}
		return 0, false, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	switch opts.ResourceVersion {
	case "":
		return 0, useLimit, nil
	case "0":
		// Served from the cache in kube-apiserver: any state, no paging.
		if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			return 0, useLimit, nil
		}
		return 0, false, nil
	}
	n, perr := parseResourceVersion(opts.ResourceVersion)
	if perr != nil {
		return 0, false, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", perr))
	}
	exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(opts.ResourceVersionMatch == "" && useLimit)
	if err := s.waitForRev(ctx, n); err != nil {
		return 0, false, err
	}
	if exact {
		return n, useLimit, nil
	}
	return 0, useLimit, nil
}

func (s *Server) handleList(r *request) error {
	c := r.c
	ctx := c.Request().Context()
	opts, err := s.listOptions(r)
	if err != nil {
		return s.writeError(c, err)
	}
	rev, useLimit, err := s.listRevision(ctx, opts)
	if err != nil {
		return s.writeError(c, err)
	}
	lo := store.ListOptions{
		Resource:  r.kind.StorageResource,
		Namespace: r.ri.Namespace,
		Rev:       rev,
		Filter:    matcher(r.kind, opts.LabelSelector, opts.FieldSelector),
	}
	if opts.Continue != "" {
		crev, ns, name, err := decodeContinue(opts.Continue)
		if err != nil {
			return s.writeError(c, apierrors.NewBadRequest("invalid continue token: "+err.Error()))
		}
		lo.Rev, lo.AfterNamespace, lo.AfterName = crev, ns, name
		if crev == -1 || crev > s.cfg.Store.Rev() {
			// -1: an inconsistent continuation at the latest revision.
			// A token past this store's revision (one another replica
			// gave, before this one saw its revision) lists at the
			// latest too. At the current revision it lists at exactly
			// crev: on etcd the revision moves with every write to the
			// cluster, and the pages must stay at the token's.
			lo.Rev = 0
		}
	}
	if useLimit {
		// A limit past int (2^31-1 on 32-bit ARM) would wrap, to 0 or
		// below, which the store reads as no limit.
		lo.Limit = int(min(opts.Limit, math.MaxInt))
	}
	grant, err := s.listMemory.acquire(ctx, minListGrant, 2*int64(cmp.Or(s.cfg.ListBufferBytes, DefaultListBufferBytes)), largeBodyWait)
	if err != nil {
		return s.writeError(c, s.waitedTooLong(c))
	}
	defer func() { s.listMemory.release(grant) }()
	per := listMemoryPerValueByte(r.rep)
	lo.MaxBytes = int(max(grant/per, 1))
	res, err := s.cfg.Store.List(ctx, lo)
	if err != nil {
		if errors.Is(err, store.ErrCompacted) && opts.Continue != "" {
			// kube-apiserver's answer: 410 with a token that continues at
			// the latest revision (rv -1), for a client that accepts an
			// inconsistent list.
			se := apierrors.NewResourceExpired(inconsistentContinue)
			se.ErrStatus.ListMeta.Continue = encodeContinue(-1, lo.AfterNamespace, lo.AfterName)
			return s.writeError(c, se)
		}
		if errors.Is(err, store.ErrCompacted) {
			return s.writeError(c, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old."))
		}
		return s.writeError(c, storeError(err, r.gr(), ""))
	}
	if res.Cut {
		// The rest is read in pages at res.Rev, which compaction must
		// leave readable meanwhile. Only lists this large pay for the
		// hold; one compacted between the first page and the hold is
		// answered as any list at a compacted revision is.
		defer s.cfg.Store.Hold(res.Rev)()
		if res.Rev < s.cfg.Store.CompactedRev() {
			return s.writeError(c, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old."))
		}
		p := &listPager{store: s.cfg.Store, opts: lo, pageBytes: min(lo.MaxBytes, listPageBytes), keepBytes: lo.MaxBytes}
		p.opts.MaxBytes = 0
		return s.streamList(r, p, &res, useLimit)
	}
	// Built whole: what it holds is known now.
	var values int64
	for i := range res.Objects {
		values += int64(len(res.Objects[i].Value))
	}
	s.listMemory.shrink(&grant, min(grant, values*per+minListGrant))
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(res.Rev, 10)}
	if useLimit && res.More && len(res.Objects) > 0 {
		last := res.Objects[len(res.Objects)-1].Key
		lm.Continue = encodeContinue(res.Rev, last.Namespace, last.Name)
		if lo.Filter == nil && res.Remaining > 0 {
			n := res.Remaining
			lm.RemainingItemCount = &n
		}
	}
	return s.writeList(c, r, res.Objects, &lm)
}

// minListGrant is the least memory a LIST runs with: it then reads and
// writes pages of half of it, or an eighth for the representations that
// decode (see listMemoryPerValueByte). It waits for it as long as for a
// large body's slot.
const minListGrant = 256 << 10

// listMemoryPerValueByte is the memory a LIST takes per byte of stored
// values it holds, for the representation it writes: the values and the
// response built from them for JSON and Protobuf; Tables, metadata lists
// and YAML decode the objects first, which takes several times more.
func listMemoryPerValueByte(rep representation) int64 {
	if rep.as == asObject && rep.enc != encYAML {
		return 2
	}
	return 8
}

// writeList writes stored objects as a list of r's kind. For JSON the stored
// bytes are spliced into the list without decoding.
func (s *Server) writeList(c echo.Context, r *request, objs []store.Object, lm *metav1.ListMeta) error {
	k := r.kind
	switch r.rep.as {
	case asTable:
		values := make([][]byte, len(objs))
		for i := range objs {
			values[i] = objs[i].Value
		}
		t, err := s.tableFor(k, r.rep, values, lm, c.QueryParam("includeObject"))
		if err != nil {
			return s.writeError(c, err)
		}
		return s.writeTyped(c, http.StatusOK, r.rep, t)
	case asPartialObjectMetadata:
		return s.writeError(c, errNotAcceptableTransform(
			"you requested PartialObjectMetadata, but the requested object is a list ("+k.InternalTypeName(true)+")"))
	case asPartialObjectMetadataList:
		list := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + orV1(r.rep.metaVersion)},
			ListMeta: *lm,
			Items:    make([]metav1.PartialObjectMetadata, 0, len(objs)),
		}
		for i := range objs {
			pom, err := partialMetadata(k, objs[i].Value, r.rep.metaVersion)
			if err != nil {
				return s.writeError(c, err)
			}
			// Items keep their kind and apiVersion, as kube-apiserver's
			// do (asPartialObjectMetadataList sets them on each).
			list.Items = append(list.Items, *pom)
		}
		return s.writeTyped(c, http.StatusOK, r.rep, list)
	}
	if r.rep.enc == encProtobuf && protoPlanFor(k) != nil {
		return s.writeProtoList(c, k, objs, lm)
	}
	size := 128
	perItem := 1
	if k.Unstructured {
		// Custom resource items carry kind and apiVersion.
		perItem += len(`{"kind":"","apiVersion":""}`) + len(k.GVK.Kind) + len(k.GVK.GroupVersion().String())
	}
	for i := range objs {
		size += len(objs[i].Value) + perItem
	}
	buf := getListBuf(size)
	defer func() { putListBuf(buf) }()
	buf = append(buf, `{"kind":`...)
	buf = strconv.AppendQuote(buf, k.ListKind)
	buf = append(buf, `,"apiVersion":`...)
	buf = strconv.AppendQuote(buf, k.GVK.GroupVersion().String())
	lmb, err := json.Marshal(lm)
	if err != nil {
		return s.writeError(c, err)
	}
	buf = append(buf, `,"metadata":`...)
	buf = append(buf, lmb...)
	buf = append(buf, `,"items":[`...)
	for i := range objs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = appendItemJSON(buf, k, objs[i].Value); err != nil {
			return s.writeError(c, err)
		}
	}
	buf = append(buf, "]}"...)
	if r.rep.enc == encProtobuf {
		list, err := registry.Scheme.New(k.GVK.GroupVersion().WithKind(k.ListKind))
		if err != nil {
			return s.writeError(c, err)
		}
		if err := json.Unmarshal(buf, list); err != nil {
			return s.writeError(c, err)
		}
		list.GetObjectKind().SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.ListKind))
		return s.writeTyped(c, http.StatusOK, r.rep, list)
	}
	return s.writeJSONBytes(c, http.StatusOK, r.rep, buf)
}

// writeProtoList writes stored objects as a Protobuf list, each item
// written by the transcoder: the bytes the typed list's Marshal makes,
// without decoding the objects into it.
func (s *Server) writeProtoList(c echo.Context, k *registry.Kind, objs []store.Object, lm *metav1.ListMeta) error {
	// The items are encoded after room for the list's head, which needs
	// their sizes first, in a buffer of the stored values' size: the
	// Protobuf of an object is smaller than its JSON.
	const headRoom = 512
	size := headRoom + 16
	for i := range objs {
		size += len(objs[i].Value) + 8
	}
	buf := make([]byte, headRoom, size)
	pi := &protoItems{kind: k, keepBytes: math.MaxInt, buf: buf[headRoom:headRoom]}
	if err := pi.add(objs); err != nil {
		return s.writeError(c, err)
	}
	e := &protoListEncoder{kind: k, items: pi}
	head, err := e.begin(lm)
	if err != nil {
		return s.writeError(c, err)
	}
	var out []byte
	if len(head) <= headRoom && cap(pi.buf) == size-headRoom {
		// The items are still in buf: the head goes just before them.
		out = buf[headRoom-len(head) : headRoom+len(pi.buf)]
		copy(out, head)
	} else {
		out = append(append(make([]byte, 0, len(head)+len(pi.buf)+16), head...), pi.buf...)
	}
	return c.Blob(http.StatusOK, mediaProtobuf, e.end(out))
}

func orV1(v string) string {
	if v == "" {
		return "v1"
	}
	return v
}

// listBufs holds the buffers writeList builds lists in, once written: a
// LIST of 10,000 ConfigMaps in pages of 500 made twenty buffers of
// 700 KB, half of its garbage. Only buffers of at most maxPooledListBuf
// are kept, and the pool empties as the collector runs, so an idle
// daemon holds none for long.
var listBufs sync.Pool

// maxPooledListBuf is the largest buffer listBufs keeps.
const maxPooledListBuf = 2 << 20

// getListBuf returns an empty buffer of at least size bytes: a pooled one
// if it is large enough, else a new one, whose capacity, for a size that
// it can be pooled at, is rounded up to a power of two so that pages of
// about one size reuse it.
func getListBuf(size int) []byte {
	if size > maxPooledListBuf {
		return make([]byte, 0, size)
	}
	if p, ok := listBufs.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:0]
	}
	return make([]byte, 0, min(1<<bits.Len(uint(size-1)), maxPooledListBuf))
}

// putListBuf hands b back to listBufs, unless it is too large to keep.
func putListBuf(b []byte) {
	if cap(b) > maxPooledListBuf || cap(b) == 0 {
		return
	}
	listBufs.Put(&b)
}
