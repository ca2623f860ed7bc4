package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"github.com/labstack/echo/v4"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// A LIST whose stored values add up to more than Config.ListBufferBytes is
// not built in memory: it is read from the store in pages of about
// listPageBytes, all at the list's revision (held from compaction meanwhile),
// and each page is encoded and written before the next is read. The bytes
// are the ones the buffered path writes. A list of 20 ConfigMaps of 2.5 MB
// took 254 MiB as JSON and 796 MiB as YAML when built whole.
const (
	// DefaultListBufferBytes is the size up to which a list is built in
	// memory.
	DefaultListBufferBytes = 4 << 20
	// DefaultListMemoryBytes is the memory the LISTs in flight share
	// (Config.ListMemoryBytes): four at a time get all they ask for.
	DefaultListMemoryBytes = 4 * 2 * DefaultListBufferBytes
	listPageBytes          = 1 << 20
	// listFlushBytes is how much encoded output is gathered per write.
	listFlushBytes = 64 << 10
)

// listsStreamed counts the lists written by streamList.
var listsStreamed atomic.Int64

// listPager reads the rest of a list that the store cut at MaxBytes.
type listPager struct {
	store store.Store
	opts  store.ListOptions // Rev fixed; Limit the total wanted (0: all)
	// pageBytes is the size of stored values per page, at most
	// listPageBytes: less when the list got less memory (see memgate.go).
	pageBytes int
	// keepBytes bounds the encoded items a Protobuf list keeps between
	// its two passes (Config.ListBufferBytes when zero).
	keepBytes int
}

// page is p's page size.
func (p *listPager) page() int { return cmp.Or(p.pageBytes, listPageBytes) }

// pages calls fn with each page of the list in order, starting with
// *first (the page already read with p.opts, which it clears so that it can
// be collected once written), and returns the last page read and the
// number of objects. fn must not retain the objects: each page is read
// into the slice of the one before.
func (p *listPager) pages(ctx context.Context, first *store.ListResult, fn func([]store.Object) error) (last store.ListResult, n int, err error) {
	res := *first
	*first = store.ListResult{}
	o := p.opts
	o.Rev, o.MaxBytes = res.Rev, p.page()
	for {
		if err := fn(res.Objects); err != nil {
			return res, n, err
		}
		n += len(res.Objects)
		if !res.Cut {
			return res, n, nil
		}
		k := res.Objects[len(res.Objects)-1].Key
		o.AfterNamespace, o.AfterName = k.Namespace, k.Name
		// fn is done with the page: the next one is read into it.
		o.Objects = res.Objects[:0]
		if p.opts.Limit > 0 {
			o.Limit = p.opts.Limit - n
		}
		if res, err = p.store.List(ctx, o); err != nil {
			return res, n, err
		}
	}
}

// restart reads the list's first page again.
func (p *listPager) restart(ctx context.Context, rev int64) (store.ListResult, error) {
	o := p.opts
	o.Rev, o.MaxBytes = rev, p.page()
	return p.store.List(ctx, o)
}

// streamList writes a list whose first page, first, the store cut short.
// The list metadata comes before the items in JSON and Protobuf, so when
// the metadata depends on the end of the list (a continue token) or the
// encoding needs sizes first (Protobuf), the list is read twice.
func (s *Server) streamList(r *request, p *listPager, first *store.ListResult, useLimit bool) error {
	listsStreamed.Add(1)
	c := r.c
	ctx := c.Request().Context()
	k := r.kind
	rev := first.Rev
	lm := metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}

	switch r.rep.as {
	case asTable:
		// A Table holds a row per object, not the objects: rows are made
		// page by page, and only they are kept.
		var table *metav1.Table
		var last store.Object
		lastPage, _, err := p.pages(ctx, first, func(page []store.Object) error {
			values := make([][]byte, len(page))
			for i := range page {
				values[i] = page[i].Value
			}
			t, err := s.tableFor(k, r.rep, values, &lm, c.QueryParam("includeObject"))
			if err != nil {
				return err
			}
			if table == nil {
				table = t
			} else {
				table.Rows = append(table.Rows, t.Rows...)
			}
			if len(page) > 0 {
				last = store.Object{Key: page[len(page)-1].Key}
			}
			return nil
		})
		if err != nil {
			return s.writeError(c, listPageError(err, r))
		}
		setContinue(&lm, useLimit, lastPage, []store.Object{last}, p.opts.Filter != nil)
		table.ListMeta = lm
		return s.writeTyped(c, http.StatusOK, r.rep, table)
	case asPartialObjectMetadataList:
		list := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + orV1(r.rep.metaVersion)},
		}
		var last store.Object
		lastPage, _, err := p.pages(ctx, first, func(page []store.Object) error {
			for i := range page {
				pom, err := partialMetadata(k, page[i].Value, r.rep.metaVersion)
				if err != nil {
					return err
				}
				list.Items = append(list.Items, *pom)
				last = store.Object{Key: page[i].Key}
			}
			return nil
		})
		if err != nil {
			return s.writeError(c, listPageError(err, r))
		}
		setContinue(&lm, useLimit, lastPage, []store.Object{last}, p.opts.Filter != nil)
		list.ListMeta = lm
		return s.writeTyped(c, http.StatusOK, r.rep, list)
	case asPartialObjectMetadata:
		return s.writeError(c, errNotAcceptableTransform(
			"you requested PartialObjectMetadata, but the requested object is a list ("+k.InternalTypeName(true)+")"))
	}

	// The first pass: the metadata, and for Protobuf each item, encoded
	// once (see protoItems).
	var pi *protoItems
	proto := r.rep.enc == encProtobuf
	if useLimit || proto {
		var lastObjs []store.Object
		if proto {
			pi = &protoItems{kind: k, keepBytes: cmp.Or(p.keepBytes, s.cfg.ListBufferBytes, DefaultListBufferBytes)}
		}
		// A whole list (no limit) of a transcoded kind sizes the items
		// past the kept ones in one scan once the bound is reached (see
		// sizeByScan); the typed path's decoding, 15 times slower, is
		// not done inside one read transaction.
		scan := proto && !useLimit && p.opts.Limit == 0 && protoPlanFor(k) != nil
		last, _, err := p.pages(ctx, first, func(page []store.Object) error {
			if len(page) > 0 {
				lastObjs = page[len(page)-1:]
			}
			if !proto {
				return nil
			}
			if err := pi.add(page); err != nil {
				return err
			}
			if scan && len(pi.sizes) > 0 {
				return errSizeByScan
			}
			return nil
		})
		if err == errSizeByScan {
			err = pi.sizeByScan(ctx, p, rev, lastObjs[0].Key)
		}
		if err != nil {
			return s.writeError(c, storeError(err, r.gr(), ""))
		}
		if useLimit {
			if len(lastObjs) > 0 {
				lastObjs = []store.Object{{Key: lastObjs[0].Key}}
			}
			setContinue(&lm, useLimit, last, lastObjs, p.opts.Filter != nil)
		}
		switch {
		case !proto:
			again, err := p.restart(ctx, rev)
			if err != nil {
				return s.writeError(c, storeError(err, r.gr(), ""))
			}
			first = &again
		case len(pi.sizes) > 0:
			// The items past the kept ones are read again, from the
			// last kept one on.
			p = pi.rest(p)
			again, err := p.restart(ctx, rev)
			if err != nil {
				return s.writeError(c, storeError(err, r.gr(), ""))
			}
			first = &again
		default:
			first = nil
		}
	}

	var w listEncoder
	switch r.rep.enc {
	case encProtobuf:
		w = &protoListEncoder{kind: k, items: pi}
	case encYAML:
		w = &yamlListEncoder{kind: k}
	default:
		w = &jsonListEncoder{kind: k}
	}
	out := &flushWriter{w: c.Response()}
	head, err := w.begin(&lm)
	if err != nil {
		return s.writeError(c, err)
	}
	c.Response().Header().Set(echo.HeaderContentType, w.mediaType())
	c.Response().WriteHeader(http.StatusOK)
	out.buf = append(out.buf, head...)
	if proto {
		// The kept items, as encoded in the first pass: a body this
		// large is compressed for a client that asks, though its first
		// write is the head alone.
		expectBody(c.Response(), len(out.buf)+pi.size())
		if err := out.flush(); err != nil {
			panic(http.ErrAbortHandler)
		}
		if err := pi.writeKept(c.Response()); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	var n int
	if first != nil {
		_, n, err = p.pages(ctx, first, func(page []store.Object) error {
			for i := range page {
				if out.buf, err = w.item(out.buf, page[i].Value); err != nil {
					return err
				}
				if err := out.maybeFlush(); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil && proto && n != len(pi.sizes) {
		err = fmt.Errorf("list changed between passes: %d items, then %d", len(pi.sizes), n)
	}
	if err != nil {
		// The status line is out: all that is left is to cut the
		// response short, which the client sees as an unexpected end.
		if ctx.Err() == nil {
			s.log.Sugar().Errorw("list stream failed", "path", c.Request().URL.Path, "error", err)
		}
		panic(http.ErrAbortHandler)
	}
	out.buf = w.end(out.buf)
	return out.flush()
}

// listPageError maps an error of a page read or conversion: Status errors
// (a conversion's) as they are, store errors through storeError.
func listPageError(err error, r *request) error {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return err
	}
	return storeError(err, r.gr(), "")
}

// setContinue sets lm's continue token and remaining count from the last
// page of a limited list; objs ends with the last object returned.
func setContinue(lm *metav1.ListMeta, useLimit bool, last store.ListResult, objs []store.Object, filtered bool) {
	if !useLimit || !last.More || len(objs) == 0 {
		return
	}
	key := objs[len(objs)-1].Key
	lm.Continue = encodeContinue(last.Rev, key.Namespace, key.Name)
	if !filtered && last.Remaining > 0 {
		n := last.Remaining
		lm.RemainingItemCount = &n
	}
}

// flushWriter gathers output and writes it in chunks of listFlushBytes.
type flushWriter struct {
	w     http.ResponseWriter
	buf   []byte
	wrote bool
}

// maybeFlush writes what is gathered once it reaches listFlushBytes; the
// first write waits for more than gzipThreshold, so that a list that large
// is compressed as a whole when the client asks (see compress.go), as
// kube-apiserver compresses it, and a smaller one is not.
func (f *flushWriter) maybeFlush() error {
	if len(f.buf) < listFlushBytes || !f.wrote && len(f.buf) <= gzipThreshold {
		return nil
	}
	return f.flush()
}

func (f *flushWriter) flush() error {
	_, err := f.w.Write(f.buf)
	f.buf = f.buf[:0]
	f.wrote = true
	return err
}

// A listEncoder writes a list item by item: begin's bytes, each item's,
// then end's.
type listEncoder interface {
	mediaType() string
	begin(lm *metav1.ListMeta) ([]byte, error)
	item(dst, value []byte) ([]byte, error)
	end(dst []byte) []byte
}

// jsonListEncoder writes the JSON writeList builds.
type jsonListEncoder struct {
	kind *registry.Kind
	n    int
}

func (e *jsonListEncoder) mediaType() string { return mediaJSON }

func (e *jsonListEncoder) begin(lm *metav1.ListMeta) ([]byte, error) {
	return appendListHead(nil, e.kind, lm)
}

func (e *jsonListEncoder) item(dst, value []byte) ([]byte, error) {
	if e.n > 0 {
		dst = append(dst, ',')
	}
	e.n++
	return appendItemJSON(dst, e.kind, value)
}

func (e *jsonListEncoder) end(dst []byte) []byte { return append(dst, "]}"...) }

// appendListHead appends a JSON list's members up to the items' opening
// bracket.
func appendListHead(dst []byte, k *registry.Kind, lm *metav1.ListMeta) ([]byte, error) {
	lmb, err := json.Marshal(lm)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"kind":`...)
	dst = strconv.AppendQuote(dst, k.ListKind)
	dst = append(dst, `,"apiVersion":`...)
	dst = strconv.AppendQuote(dst, k.GVK.GroupVersion().String())
	dst = append(dst, `,"metadata":`...)
	dst = append(dst, lmb...)
	return append(dst, `,"items":[`...), nil
}

// yamlListEncoder writes the YAML jsonToYAML makes of the list's JSON: its
// members in go-yaml's order (apiVersion, items, kind, metadata), and each
// item as yamlElement writes it.
type yamlListEncoder struct {
	kind *registry.Kind
	lm   *metav1.ListMeta
	n    int
}

func (e *yamlListEncoder) mediaType() string { return mediaYAML }

func (e *yamlListEncoder) begin(lm *metav1.ListMeta) ([]byte, error) {
	e.lm = lm
	return jsonToYAML(fmt.Appendf(nil, `{"apiVersion":%q}`, e.kind.GVK.GroupVersion().String()))
}

func (e *yamlListEncoder) item(dst, value []byte) ([]byte, error) {
	item, err := itemJSON(e.kind, value)
	if err != nil {
		return dst, err
	}
	y, err := yamlElement("items", item, e.n == 0)
	e.n++
	return append(dst, y...), err
}

func (e *yamlListEncoder) end(dst []byte) []byte {
	// Neither can fail: both are a string and a ListMeta.
	y, _ := jsonToYAML(fmt.Appendf(nil, `{"kind":%q}`, e.kind.ListKind))
	dst = append(dst, y...)
	lmb, _ := json.Marshal(e.lm)
	y, _ = jsonToYAML(append(append([]byte(`{"metadata":`), lmb...), '}'))
	return append(dst, y...)
}

// protoListEncoder writes the Protobuf that the runtime's serializer
// writes for the typed list: the "k8s\0" prefix, then a runtime.Unknown
// with the list's TypeMeta, the list message as raw, and empty
// contentEncoding and contentType. The list message is its ListMeta
// (field 1) and its items (field 2), so its length, which comes first,
// needs every item's size: items, from the first pass.
type protoListEncoder struct {
	kind  *registry.Kind
	items *protoItems
	// n counts the items written.
	n int
}

func (e *protoListEncoder) mediaType() string { return mediaProtobuf }

// protoMessage is what the generated Kubernetes types implement.
type protoMessage interface {
	Size() int
	Marshal() ([]byte, error)
	MarshalToSizedBuffer(dAtA []byte) (int, error)
}

func (e *protoListEncoder) begin(lm *metav1.ListMeta) ([]byte, error) {
	lmb, err := lm.Marshal()
	if err != nil {
		return nil, err
	}
	raw := 1 + protowire.SizeBytes(len(lmb)) + e.items.size()
	b := append([]byte(nil), protoMagic...)
	b = appendProtoTypeMeta(b, e.kind.GVK.GroupVersion().String(), e.kind.ListKind)
	b = protowire.AppendTag(b, 2, protowire.BytesType) // Unknown.raw
	b = protowire.AppendVarint(b, uint64(raw))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // List.metadata
	return protowire.AppendBytes(b, lmb), nil
}

// item appends an item of the second pass, which must have the size the
// first pass gave it: the list's length is out already.
func (e *protoListEncoder) item(dst, value []byte) ([]byte, error) {
	start := len(dst)
	dst, err := appendProtoItem(dst, e.kind, value)
	if err != nil {
		return dst, err
	}
	i := e.n
	e.n++
	if e.items == nil || i >= len(e.items.sizes) {
		return dst, fmt.Errorf("list changed between passes: more than %d items", i)
	}
	if msg, _ := protowire.ConsumeBytes(dst[start+1:]); len(msg) != e.items.sizes[i] {
		protoSizes.forget()
		return dst, fmt.Errorf("list item %d changed between passes: %d bytes, then %d", i, e.items.sizes[i], len(msg))
	}
	return dst, nil
}

func (e *protoListEncoder) end(dst []byte) []byte { return appendProtoUnknownEnd(dst) }

// protoItems is the first pass of a streamed Protobuf list: each item is
// encoded once, and kept while the kept items take at most keepBytes (the
// list buffer: the bound of a list built in memory); of the items after
// those only the size is kept, found in protoSizes or measured
// (protoItemSize), and they are read and encoded again in the second
// pass. A list of 10,000 ConfigMaps of 1 KB was decoded twice and read
// twice, which took 3.5 times as long as the JSON list.
//
// A streamed list keeps its items in blocks of about protoBlockBytes,
// each compressed with S2 when that saves an eighth of it: the bound is on
// the bytes held, so the more the items compress, the fewer are read and
// encoded again. Decompressing a block costs a fraction of reading its
// items from the store and encoding them again.
type protoItems struct {
	kind      *registry.Kind
	keepBytes int
	// buf holds the kept items of a list built in memory (keepBytes
	// math.MaxInt), framed as the list's field 2.
	buf []byte
	// blocks hold a streamed list's kept items, sealed; block is the
	// one being filled; held is the bytes blocks take, keptBytes the
	// kept items' encoded bytes.
	blocks          []protoBlock
	block           []byte
	held, keptBytes int
	kept            int
	// lastKept is the key of the last kept item.
	lastKept store.Key
	// sizes are the message sizes of the items after the kept ones.
	sizes []int
	// zbuf is where blocks are compressed.
	zbuf []byte
	// scratch is where items are encoded to be kept or sized; keys,
	// found, missKeys and missSizes are a page's protoSizes look-up.
	scratch          []byte
	keys, missKeys   []servedKey
	found, missSizes []int
}

// protoBlock is a sealed block of kept items: S2-compressed when
// compressed.
type protoBlock struct {
	b          []byte
	compressed bool
}

// protoBlockBytes is the size of a block of kept items.
const protoBlockBytes = 64 << 10

// size is the bytes the list's items take, framed as its field 2.
func (pi *protoItems) size() int {
	n := len(pi.buf) + pi.keptBytes
	for _, m := range pi.sizes {
		n += 1 + protowire.SizeBytes(m)
	}
	return n
}

// add encodes a page of the list's items.
func (pi *protoItems) add(page []store.Object) error {
	for i := range page {
		if len(pi.sizes) > 0 {
			return pi.sizeRest(page[i:])
		}
		if pi.keepBytes == math.MaxInt {
			// Everything is kept (a list built in memory): straight
			// into buf.
			b, err := appendProtoItem(pi.buf, pi.kind, page[i].Value)
			if err != nil {
				return err
			}
			pi.buf = b
			pi.kept++
			continue
		}
		b, err := appendProtoItem(pi.scratch[:0], pi.kind, page[i].Value)
		if err != nil {
			return err
		}
		pi.scratch = b
		if pi.held+len(pi.block)+len(b) > pi.keepBytes && len(pi.block) > 0 {
			// Sealed, the block may take less.
			pi.seal()
		}
		if pi.held+len(pi.block)+len(b) <= pi.keepBytes || pi.kept == 0 {
			if pi.block == nil {
				pi.block = make([]byte, 0, protoBlockBytes)
			}
			pi.block = append(pi.block, b...)
			pi.kept++
			pi.keptBytes += len(b)
			pi.lastKept = page[i].Key
			if len(pi.block) >= protoBlockBytes {
				pi.seal()
			}
			continue
		}
		// Past the bound: this item and the rest are sized only.
		msg, _ := protowire.ConsumeBytes(b[1:])
		pi.sizes = append(pi.sizes, len(msg))
		protoSizes.put([]servedKey{servedKeyOf(pi.kind, page[i].Value)}, pi.sizes[len(pi.sizes)-1:])
	}
	return nil
}

// seal closes the block being filled: compressed when that saves an
// eighth of it, else as it is.
func (pi *protoItems) seal() {
	if len(pi.block) == 0 {
		return
	}
	pi.zbuf = slices.Grow(pi.zbuf[:0], s2.MaxEncodedLen(len(pi.block)))
	c := s2.Encode(pi.zbuf[:cap(pi.zbuf)], pi.block)
	var blk protoBlock
	if len(c) <= len(pi.block)-len(pi.block)/8 {
		blk = protoBlock{b: slices.Clone(c), compressed: true}
	} else {
		blk = protoBlock{b: slices.Clone(pi.block)}
	}
	pi.blocks = append(pi.blocks, blk)
	pi.held += len(blk.b)
	pi.block = pi.block[:0]
}

// writeKept writes the kept items, in order, and lets them go.
func (pi *protoItems) writeKept(w io.Writer) error {
	if len(pi.buf) > 0 {
		if _, err := w.Write(pi.buf); err != nil {
			return err
		}
	}
	pi.buf = nil
	var dec []byte
	for i, blk := range pi.blocks {
		b := blk.b
		if blk.compressed {
			n, err := s2.DecodedLen(b)
			if err != nil {
				return fmt.Errorf("decode kept items: %w", err)
			}
			if b, err = s2.Decode(slices.Grow(dec[:0], n)[:n], b); err != nil {
				return fmt.Errorf("decode kept items: %w", err)
			}
			dec = b
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		pi.blocks[i] = protoBlock{}
	}
	pi.blocks = nil
	if len(pi.block) > 0 {
		if _, err := w.Write(pi.block); err != nil {
			return err
		}
	}
	pi.block = nil
	return nil
}

// sizeRest appends the sizes of objs, items after the kept ones: from
// protoSizes where it has them, else measured, and then cached.
func (pi *protoItems) sizeRest(objs []store.Object) error {
	n := len(objs)
	pi.keys = slices.Grow(pi.keys[:0], n)[:n]
	pi.found = slices.Grow(pi.found[:0], n)[:n]
	protoSizes.lookup(pi.kind, objs, pi.keys, pi.found)
	pi.missKeys, pi.missSizes = pi.missKeys[:0], pi.missSizes[:0]
	for i := range objs {
		m := pi.found[i]
		if m < 0 {
			var err error
			if m, err = pi.itemSize(objs[i].Value); err != nil {
				return err
			}
			pi.missKeys = append(pi.missKeys, pi.keys[i])
			pi.missSizes = append(pi.missSizes, m)
		}
		pi.sizes = append(pi.sizes, m)
	}
	if len(pi.missKeys) > 0 {
		protoSizes.put(pi.missKeys, pi.missSizes)
	}
	return nil
}

// errSizeByScan stops a first pass's paging: sizeByScan sizes the rest.
var errSizeByScan = errors.New("size the rest by a scan")

// sizeByScan sizes the items after key, the last one paged, in one read
// of the store at rev whose filter sizes each item (that passes p's
// filter) and passes none: the store then neither copies nor keeps the
// values, which it does for the items it returns. The read's transaction
// does no more than the hashing (and, for an item not in protoSizes,
// transcoding) that paging would, and writes nothing to the client.
func (pi *protoItems) sizeByScan(ctx context.Context, p *listPager, rev int64, key store.Key) error {
	o := p.opts
	o.Rev, o.MaxBytes, o.Limit = rev, 0, 0
	o.AfterNamespace, o.AfterName = key.Namespace, key.Name
	filter := p.opts.Filter
	var err error
	var missKeys []servedKey
	var missSizes []int
	o.Filter = func(obj *store.Object) bool {
		if err != nil || filter != nil && !filter(obj) {
			return false
		}
		sk := servedKeyOf(pi.kind, obj.Value)
		m, ok := protoSizes.get(sk)
		if !ok {
			if m, err = pi.itemSize(obj.Value); err != nil {
				return false
			}
			missKeys, missSizes = append(missKeys, sk), append(missSizes, m)
		}
		pi.sizes = append(pi.sizes, m)
		return false
	}
	if _, lerr := p.store.List(ctx, o); lerr != nil {
		return lerr
	}
	if err != nil {
		return err
	}
	protoSizes.put(missKeys, missSizes)
	return nil
}

// itemSize is the message size of the list item value.
func (pi *protoItems) itemSize(value []byte) (int, error) {
	return protoItemSize(pi.kind, value)
}

// rest returns the pager of the items after the kept ones.
func (pi *protoItems) rest(p *listPager) *listPager {
	o := p.opts
	if pi.kept > 0 {
		o.AfterNamespace, o.AfterName = pi.lastKept.Namespace, pi.lastKept.Name
		if o.Limit > 0 {
			o.Limit -= pi.kept
		}
	}
	return &listPager{store: p.store, opts: o}
}

// appendProtoItem appends a stored value as a Protobuf list item: field 2
// of the list message, holding the typed object.
func appendProtoItem(dst []byte, k *registry.Kind, value []byte) ([]byte, error) {
	if p := protoPlanFor(k); p != nil {
		if b, err := appendProtoJSON(dst, 2, p, value); err == nil {
			return b, nil
		}
	}
	return appendProtoItemTyped(dst, k, value)
}

// protoItemSize is the size of the message appendProtoItem writes for a
// stored value (without its tag and length), found without writing it.
func protoItemSize(k *registry.Kind, value []byte) (int, error) {
	if p := protoPlanFor(k); p != nil {
		if n, err := protoJSONSize(p, value); err == nil {
			return n, nil
		}
	}
	m, err := protoItem(k, value)
	if err != nil {
		return 0, err
	}
	return m.Size(), nil
}

// appendProtoItemTyped is appendProtoItem through the typed object.
func appendProtoItemTyped(dst []byte, k *registry.Kind, value []byte) ([]byte, error) {
	m, err := protoItem(k, value)
	if err != nil {
		return dst, err
	}
	n := m.Size()
	dst = protowire.AppendTag(dst, 2, protowire.BytesType) // List.items
	dst = protowire.AppendVarint(dst, uint64(n))
	dst = slices.Grow(dst, n)
	if _, err := m.MarshalToSizedBuffer(dst[len(dst) : len(dst)+n]); err != nil {
		return dst, err
	}
	return dst[:len(dst)+n], nil
}

// protoItem decodes a stored value to the typed object a Protobuf list
// item is.
func protoItem(k *registry.Kind, value []byte) (protoMessage, error) {
	obj, err := k.DecodeStored(value)
	if err != nil {
		return nil, err
	}
	m, ok := obj.(protoMessage)
	if !ok {
		return nil, fmt.Errorf("encode %T as protobuf: %w", obj, runtime.NewNotRegisteredErrForType("protobuf", nil))
	}
	return m, nil
}
