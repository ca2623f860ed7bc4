package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Watch timing. Vars so tests can shorten them.
var (
	// bookmarkInterval is how often a watch with allowWatchBookmarks gets
	// a BOOKMARK (kube-apiserver: about once a minute).
	bookmarkInterval = time.Minute
	// watchWriteTimeout bounds how long one write may take: a client that
	// stops reading has its stream closed instead of holding it (and
	// shutdown) forever.
	watchWriteTimeout = 30 * time.Second
	// preTimeoutBookmark is how long before a watch's timeout its last
	// BOOKMARK is sent, so the client resumes from a fresh revision.
	preTimeoutBookmark = 2 * time.Second
	// minWatchTimeout is the lower end of the server-side watch timeout,
	// randomized up to twice as long, as kube-apiserver's
	// --min-request-timeout.
	minWatchTimeout = 30 * time.Minute
)

// initialEventsEndAnnotation marks the BOOKMARK that ends the initial events
// of a watch-list (sendInitialEvents=true).
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

// maxEventsPerFlush bounds the events a watch writes between two flushes.
const maxEventsPerFlush = 64

// drainBuffers holds the slices watch streams drain events into, so that an
// idle stream keeps none.
var drainBuffers = sync.Pool{New: func() any {
	b := make([]*store.CachedEvent, 0, maxEventsPerFlush)
	return &b
}}

// watchStream is one watch response: JSON WatchEvents, one per line,
// written as they come and flushed once per batch of events.
//
// A stream has no goroutine of its own while idle: the watcher's onReady
// and the stream's timer kick it, and a kick starts a goroutine that
// writes what is pending and ends (see kick and serve). On an HTTP/1.1
// connection the stream also takes the connection over from net/http (see
// hijackWatch), so that an idle watch costs about a kilobyte of memory and
// no goroutine at all, instead of net/http's buffers and goroutines.
type watchStream struct {
	s *Server
	// release, when set, is Config.AdmitWatch's, called by finish.
	release func()
	kind    *registry.Kind
	rep     representation
	match   func(*store.Object) bool
	include string
	// proto: the stream is Protobuf (length-prefixed WatchEvents whose
	// objects carry the Protobuf envelope), else JSON lines. Objects and
	// PartialObjectMetadata can be Protobuf; Tables cannot.
	proto bool
	out   watchOut
	w     *store.Watcher
	// metrics count the events written (nil without Config.Metrics).
	metrics *watchSeries

	// end is when the watch times out; bookmarks whether the client asked
	// for them, nextBookmark when the next one is due.
	end          time.Time
	bookmarks    bool
	nextBookmark time.Time
	// timer kicks the stream at timerAt, the next of end and nextBookmark.
	timer   *time.Timer
	timerAt time.Time
	// delivered is the revision of the last event written (or the start).
	delivered int64
	// sentColumns: a Table watch sends column definitions only once.
	sentColumns bool
	// memoKeys are the CachedEvent.Memo keys of this stream's encodings,
	// by event type (ADDED, MODIFIED, DELETED), built once.
	memoKeys [3]string

	// pooled: the stream runs on the stream workers (it owns its
	// connection, whose writes can time out without losing data).
	pooled bool
	// lastWrite is when events were last written (UnixNano): a stream
	// kicked again sooner than watchCoalesce after it waits, so that under
	// a steady stream of events each watch gets one write per interval.
	lastWrite atomic.Int64
	// state is streamIdle, streamRunning, streamDirty or streamEnded.
	state atomic.Int32
	// gone is set when the client went away or the server is closing.
	gone atomic.Bool
	// finished is closed once the stream ended.
	finished chan struct{}
}

// Stream states: a kick on an idle stream starts serve; a kick on a
// running one marks it dirty, so that serve runs another step before it
// stops.
const (
	streamIdle int32 = iota
	streamRunning
	streamDirty
	streamEnded
)

// watchOut is where a watch stream's lines go. write may keep line until
// the next flush: lines are shared encodings or fresh allocations, never
// modified after they are written.
type watchOut interface {
	write(line []byte) error
	flush() error
	// close ends the response.
	close()
	// abort makes a blocked write fail at once (client gone, server
	// shutdown).
	abort()
	// setWorker says whether writes run on a stream worker: then a write
	// the client does not take within workerWriteTimeout fails with
	// errSlowClient and stays pending for the next flush, instead of
	// blocking for up to watchWriteTimeout.
	setWorker(bool)
}

// memoKey returns the key under which the encoding of an event of type typ
// is shared by every plain-JSON watch of the same kind.
func (ws *watchStream) memoKey(typ string) string {
	i := 0
	switch typ {
	case "MODIFIED":
		i = 1
	case "DELETED":
		i = 2
	}
	if ws.memoKeys[i] == "" {
		enc := "json "
		if ws.proto {
			enc = "protobuf "
		}
		ws.memoKeys[i] = enc + typ + " " + ws.kind.GVK.String()
	}
	return ws.memoKeys[i]
}

// handleWatch serves a watch. startWatch sets it up and sends its initial
// events; a stream that writes through net/http (HTTP/2, TLS) then keeps
// this goroutine until it ends, waiting here. The two are apart so that
// the waiting goroutine's stack holds only this small frame above the
// middleware, not startWatch's: an idle watch's stack then fits in a
// quarter of 16 KiB, which lets the runtime shrink it to 8 KiB.
func (s *Server) handleWatch(r *request) error {
	ws, out, err := s.startWatch(r)
	if out != nil {
		defer out.handlerReturns()
	}
	if ws == nil {
		return err
	}
	stop := context.AfterFunc(r.c.Request().Context(), ws.cancel)
	defer stop()
	ws.serve(false)
	<-ws.finished
	return nil
}

// startWatch sets a watch up and sends its initial events. For a stream
// that writes through net/http it returns the stream, registered, for
// handleWatch to wait on, and its output, whose handlerReturns the caller
// must call once it returns; a watch it answered otherwise (an error, a
// hijacked connection that other goroutines serve now) gives a nil
// stream.
//
//go:noinline
func (s *Server) startWatch(r *request) (_ *watchStream, _ *responseOut, err error) {
	c := r.c
	opts, err := s.listOptions(r)
	if err != nil {
		return nil, nil, s.writeError(c, err)
	}
	if r.rep.as == asTable {
		if err := checkIncludeObject(c.QueryParam("includeObject")); err != nil {
			return nil, nil, s.writeError(c, err)
		}
	}
	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ws := &watchStream{
		s: s, kind: r.kind, rep: r.rep, include: c.QueryParam("includeObject"),
		proto:     r.rep.enc == encProtobuf && (r.rep.as == asObject || r.rep.as == asPartialObjectMetadata),
		match:     matcher(r.kind, opts.LabelSelector, opts.FieldSelector),
		end:       time.Now().Add(timeout),
		bookmarks: opts.AllowWatchBookmarks,
		finished:  make(chan struct{}),
		metrics:   s.cfg.Metrics.watch(r.kind.GVK.Group, r.kind.GVK.Version, r.kind.Resource),
	}
	// release is AdmitWatch's: this handler calls it if it returns before
	// the stream is registered, and finish after.
	var release func()
	registered := false
	if s.cfg.AdmitWatch != nil {
		var ok bool
		if release, ok = s.cfg.AdmitWatch(c.Response(), c.Request()); !ok {
			s.recordTermination(c.Request(), c.Response().Status)
			return nil, nil, nil
		}
		defer func() {
			if !registered {
				release()
			}
		}()
	}
	reqCtx := c.Request().Context()
	// initial is the first page of the initial events' objects; pager,
	// when the store cut it short, reads the rest at its revision, page
	// by page as they are written (a watch-list of 100,000 objects held
	// them all at once: 130 MB for 1 KiB ConfigMaps).
	var initial store.ListResult
	var pager *listPager
	var startRev int64
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	rv := opts.ResourceVersion
	switch {
	case sendInitial, opts.SendInitialEvents == nil && (rv == "" || rv == "0"):
		if rv != "" && rv != "0" {
			n, err := parseRV(rv)
			if err != nil {
				return nil, nil, s.writeError(c, err)
			}
			if err := s.waitForRev(reqCtx, n); err != nil {
				return nil, nil, s.writeError(c, err)
			}
		}
		lo := store.ListOptions{Resource: r.kind.StorageResource, Namespace: r.ri.Namespace, Filter: ws.match, MaxBytes: listPageBytes}
		res, err := s.cfg.Store.List(reqCtx, lo)
		if err != nil {
			return nil, nil, s.writeError(c, storeError(err, r.gr(), ""))
		}
		if res.Cut {
			// The rest is read at res.Rev, which compaction must leave
			// readable until it is written (see handleList).
			defer s.cfg.Store.Hold(res.Rev)()
			if res.Rev < s.cfg.Store.CompactedRev() {
				return nil, nil, s.writeError(c, tooOldResourceVersion(res.Rev, s.cfg.Store.CompactedRev()))
			}
			lo.MaxBytes = 0
			pager = &listPager{store: s.cfg.Store, opts: lo}
		}
		initial, startRev = res, res.Rev
	case rv == "" || rv == "0":
		startRev = s.cfg.Store.Rev()
	default:
		n, err := parseRV(rv)
		if err != nil {
			return nil, nil, s.writeError(c, err)
		}
		startRev = n
	}
	ws.delivered = startRev
	if ws.bookmarks {
		ws.nextBookmark = ws.bookmarkAfter(time.Now())
	}

	// The stream runs on this goroutine until the initial events are out:
	// kicks meanwhile only mark it dirty.
	ws.state.Store(streamRunning)
	w, werr := s.watchCache.WatchFunc(reqCtx, r.kind.StorageResource, r.ri.Namespace, startRev, ws.kick)
	resp := c.Response()
	if ws.proto {
		resp.Header().Set("Content-Type", mediaProtobufWatch)
	} else {
		resp.Header().Set("Content-Type", mediaJSON)
	}
	resp.Header().Set("Cache-Control", "no-cache, private")
	hijacked := false
	var netOut *responseOut
	if out, ok := s.hijackWatch(c); ok {
		ws.out, hijacked, ws.pooled = out, true, true
	} else {
		// HTTP/2, TLS or a test recorder: the stream writes through
		// net/http, and handleWatch waits for it to end.
		netOut = &responseOut{resp: resp, rc: http.NewResponseController(resp.Writer)}
		ws.out = netOut
		resp.WriteHeader(http.StatusOK)
		resp.Flush()
	}
	if werr != nil {
		if errors.Is(werr, store.ErrCompacted) {
			ws.writeError(tooOldResourceVersion(startRev, s.cfg.Store.CompactedRev()))
		} else {
			ws.writeError(storeError(werr, r.gr(), ""))
		}
		ws.out.close()
		return nil, netOut, nil
	}
	ws.w = w
	if err := ws.writeInitial(reqCtx, &initial, pager); err != nil {
		if !errors.Is(err, errStreamGone) {
			ws.writeError(storeError(err, r.gr(), ""))
		}
		ws.gone.Store(true)
	}
	if sendInitial && ws.bookmarks {
		ws.writeBookmark(startRev, true)
	}
	if ws.out.flush() != nil {
		ws.gone.Store(true)
	}
	ws.release, registered = release, true
	s.addStream(ws, hijacked)
	ws.timer = time.AfterFunc(time.Until(ws.end), ws.kick)
	ws.timerAt = ws.end
	if !hijacked {
		return ws, netOut, nil
	}
	ws.serve(false)
	return nil, nil, nil
}

// errStreamGone is writeInitial's error when the client's stream failed.
var errStreamGone = errors.New("watch stream gone")

// writeInitial writes an ADDED event for each object of the list whose
// first page is *first, and of the pages pager reads after it when it is
// not nil; an error is the store's, or errStreamGone.
func (ws *watchStream) writeInitial(ctx context.Context, first *store.ListResult, pager *listPager) error {
	write := func(objs []store.Object) error {
		for i := range objs {
			if ws.writeObject("ADDED", objs[i].Value, nil) != nil {
				return errStreamGone
			}
		}
		return nil
	}
	if pager == nil {
		objs := first.Objects
		*first = store.ListResult{}
		return write(objs)
	}
	_, _, err := pager.pages(ctx, first, write)
	return err
}

// bookmarkAfter is when the next BOOKMARK is due after now: every
// bookmarkInterval, and once more shortly before the watch times out, as
// kube-apiserver's watch cache sends them.
func (ws *watchStream) bookmarkAfter(now time.Time) time.Time {
	next := now.Add(bookmarkInterval)
	if last := ws.end.Add(-preTimeoutBookmark); last.After(now) && last.Before(next) {
		next = last
	}
	return next
}

// cancel ends the stream because the client went away or the server is
// closing, unblocking a write in progress.
func (ws *watchStream) cancel() {
	ws.gone.Store(true)
	ws.out.abort()
	ws.kick()
}

// kick makes the stream write what is pending: it queues the stream for
// the stream workers (or starts serve on a goroutine of its own) if it is
// idle, else makes the running serve go round once more. It never blocks
// (it runs on the commit path, see store.WatchFunc).
func (ws *watchStream) kick() {
	for {
		switch st := ws.state.Load(); st {
		case streamIdle:
			if ws.state.CompareAndSwap(st, streamRunning) {
				ws.s.runStream(ws)
				return
			}
		case streamRunning:
			if ws.state.CompareAndSwap(st, streamDirty) {
				return
			}
		default:
			return
		}
	}
}

// serve runs steps until the stream is idle (no kick came during the last
// step) or ended. On a stream worker (onWorker), a client too slow to take
// a write within workerWriteTimeout moves the stream to a goroutine of its
// own, so that one slow client never holds up the others.
func (ws *watchStream) serve(onWorker bool) {
	ws.out.setWorker(onWorker)
	for {
		switch ws.step() {
		case stepEnded:
			ws.finish()
			return
		case stepSlow:
			go ws.serve(false)
			return
		}
		if ws.state.CompareAndSwap(streamRunning, streamIdle) {
			return
		}
		ws.state.Store(streamRunning)
	}
}

// Outcomes of a step.
const (
	stepOK    = iota // the stream goes on
	stepEnded        // the stream has ended
	stepSlow         // a write is still pending: go on off the workers
)

// step writes the events the watcher has and a BOOKMARK if one is due,
// and says whether the stream has ended: timed out, the client gone, the
// watcher closed (too slow, server closing) or a write failed.
func (ws *watchStream) step() int {
	if ws.gone.Load() || ws.w.Err() != nil {
		return stepEnded
	}
	now := time.Now()
	if !now.Before(ws.end) {
		return stepEnded
	}
	if err := ws.drain(now); err != nil {
		if errors.Is(err, errSlowClient) {
			return stepSlow
		}
		if errors.Is(err, store.ErrCompacted) {
			ws.writeError(tooOldResourceVersion(ws.w.Rev(), ws.s.cfg.Store.CompactedRev()))
		}
		return stepEnded
	}
	if ws.bookmarks && !now.Before(ws.nextBookmark) {
		ws.writeBookmark(ws.w.ProgressRev(ws.delivered), false)
		ws.nextBookmark = ws.bookmarkAfter(now)
		if err := ws.out.flush(); err != nil {
			if errors.Is(err, errSlowClient) {
				return stepSlow
			}
			return stepEnded
		}
	}
	at := ws.end
	if ws.bookmarks && ws.nextBookmark.Before(at) {
		at = ws.nextBookmark
	}
	if !at.Equal(ws.timerAt) {
		ws.timer.Reset(time.Until(at))
		ws.timerAt = at
	}
	return stepOK
}

// finish ends the response and releases the stream.
func (ws *watchStream) finish() {
	ws.state.Store(streamEnded)
	ws.timer.Stop()
	ws.w.Stop()
	ws.out.close()
	ws.s.removeStream(ws)
	if ws.release != nil {
		ws.release()
	}
	close(ws.finished)
}

// drain writes every event the watcher has now and flushes once; now is
// when the step began.
func (ws *watchStream) drain(now time.Time) error {
	bp := drainBuffers.Get().(*[]*store.CachedEvent)
	defer func() {
		clear((*bp)[:cap(*bp)])
		*bp = (*bp)[:0]
		drainBuffers.Put(bp)
	}()
	wrote := false
	for {
		evs, err := ws.w.Drain(ws.s.baseCtx, (*bp)[:0], maxEventsPerFlush)
		for _, ev := range evs {
			if werr := ws.writeEvent(ev); werr != nil {
				return werr
			}
			ws.delivered = ev.Rev()
			wrote = true
		}
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			if wrote {
				ws.lastWrite.Store(now.UnixNano())
			}
			return ws.out.flush()
		}
	}
}

func parseRV(rv string) (int64, error) {
	n, err := parseResourceVersion(rv)
	if err != nil {
		// kube-apiserver answers 500 here; bad input is a 400.
		return 0, apierrors.NewBadRequest(err.Error())
	}
	return n, nil
}

// tooOldResourceVersion is kube-apiserver's 410 for a watch that starts
// before the compacted revision.
func tooOldResourceVersion(rev, compacted int64) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rev, compacted))
}

// writeEvent writes a committed event, applying the selectors with
// kube-apiserver's transitions: an object that stops matching arrives as
// DELETED (its previous state at the new revision), one that starts
// matching as ADDED.
func (ws *watchStream) writeEvent(ev *store.CachedEvent) error {
	typ := ev.Type.String()
	value := ev.Object.Value
	if ws.match != nil {
		cur := ws.match(&ev.Object)
		switch ev.Type {
		case store.Added, store.Deleted:
			if !cur {
				return nil
			}
		case store.Modified:
			prev := store.Object{Key: ev.Object.Key, Value: ev.PrevValue}
			was := ws.match(&prev)
			switch {
			case cur && !was:
				typ = "ADDED"
			case !cur && was:
				typ = "DELETED"
				stamped, err := store.StampRevision(ev.PrevValue, ev.Rev())
				if err != nil {
					return err
				}
				return ws.writeObject(typ, stamped, nil)
			case !cur && !was:
				return nil
			}
		}
	}
	return ws.writeObject(typ, value, ev)
}

// writeObject writes one event. When ev is given and the representation
// is a plain object, the encoded event is shared with every other watcher.
func (ws *watchStream) writeObject(typ string, value []byte, ev *store.CachedEvent) error {
	k := ws.kind
	var line []byte
	switch {
	case ws.proto && ws.rep.as == asPartialObjectMetadata:
		pom, err := partialMetadata(k, value, ws.rep.metaVersion)
		if err != nil {
			return err
		}
		if line, err = ws.s.protoEvent(typ, pom); err != nil {
			return err
		}
	case ws.proto:
		line = ws.shared(ev, typ, func() []byte {
			if b, ok := protoEventStored(typ, k, value); ok {
				return b
			}
			obj, err := k.DecodeStored(value)
			if err != nil {
				return nil
			}
			b, err := ws.s.protoEvent(typ, obj)
			if err != nil {
				return nil
			}
			return b
		})
	case ws.rep.as == asObject:
		line = ws.shared(ev, typ, func() []byte {
			obj, err := objectJSON(k, value)
			if err != nil {
				return nil
			}
			b := make([]byte, 0, len(obj)+32)
			b = append(b, `{"type":"`...)
			b = append(b, typ...)
			b = append(b, `","object":`...)
			b = append(b, obj...)
			return append(b, "}\n"...)
		})
	default:
		obj, err := ws.transformed(value, ws.include)
		if err != nil {
			return err
		}
		line, err = json.Marshal(metav1.WatchEvent{Type: typ, Object: rawExt(obj)})
		if err != nil {
			return err
		}
		line = append(line, '\n')
	}
	return ws.send(line)
}

// send writes one encoded event and counts it in the watch event
// metrics, as kube-apiserver counts each event it writes to a watch (a
// write that errSlowClient left pending counts: it is sent later).
func (ws *watchStream) send(line []byte) error {
	err := ws.out.write(line)
	if err == nil || errors.Is(err, errSlowClient) {
		ws.metrics.sent(len(line))
	}
	return err
}

// shared returns build's encoding of an event of type typ, shared through
// ev's memo with every stream of the same kind and encoding; without ev
// (an event that exists only for this stream) it builds it afresh.
func (ws *watchStream) shared(ev *store.CachedEvent, typ string, build func() []byte) []byte {
	if ev == nil {
		return build()
	}
	return ev.Memo(ws.memoKey(typ), build)
}

// protoEvent encodes one event of a Protobuf watch as kube-apiserver does:
// a 4-byte big-endian length, then the WatchEvent in plain Protobuf whose
// object is encoded with the Protobuf envelope.
func (s *Server) protoEvent(typ string, obj runtime.Object) ([]byte, error) {
	var inner bytes.Buffer
	if err := s.codecs.proto.Encode(obj, &inner); err != nil {
		return nil, fmt.Errorf("encode watch event object: %w", err)
	}
	we := metav1.WatchEvent{Type: typ, Object: rawExt(inner.Bytes())}
	n := we.Size()
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	if _, err := we.MarshalToSizedBuffer(b[4:]); err != nil {
		return nil, fmt.Errorf("encode watch event: %w", err)
	}
	return b, nil
}

// transformed returns the event object as a Table row (with the row's
// object as include asks) or metadata.
func (ws *watchStream) transformed(value []byte, include string) ([]byte, error) {
	k := ws.kind
	switch ws.rep.as {
	case asTable:
		t, err := ws.s.tableFor(k, ws.rep, [][]byte{value}, nil, include)
		if err != nil {
			return nil, err
		}
		if ws.sentColumns {
			t.ColumnDefinitions = nil
		}
		ws.sentColumns = true
		return json.Marshal(t)
	default:
		pom, err := partialMetadata(k, value, ws.rep.metaVersion)
		if err != nil {
			return nil, err
		}
		return json.Marshal(pom)
	}
}

// writeBookmark writes a BOOKMARK carrying only the resourceVersion.
func (ws *watchStream) writeBookmark(rev int64, initialEnd bool) {
	k := ws.kind
	if ws.proto {
		var obj runtime.Object
		if ws.rep.as == asPartialObjectMetadata {
			obj = &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + orV1(ws.rep.metaVersion)}}
		} else {
			obj = k.New()
			obj.GetObjectKind().SetGroupVersionKind(k.GVK)
		}
		m := registry.Accessor(obj)
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEnd {
			m.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
		}
		if b, err := ws.s.protoEvent("BOOKMARK", obj); err == nil {
			_ = ws.send(b)
		}
		return
	}
	meta := map[string]interface{}{"resourceVersion": strconv.FormatInt(rev, 10)}
	if initialEnd {
		meta["annotations"] = map[string]string{initialEventsEndAnnotation: "true"}
	}
	// Like every event of a metadata watch, the bookmark is transformed
	// into a PartialObjectMetadata.
	kind, apiVersion := k.GVK.Kind, k.GVK.GroupVersion().String()
	if ws.rep.as == asPartialObjectMetadata || ws.rep.as == asPartialObjectMetadataList {
		kind, apiVersion = "PartialObjectMetadata", "meta.k8s.io/"+orV1(ws.rep.metaVersion)
	}
	obj, _ := json.Marshal(map[string]interface{}{"kind": kind, "apiVersion": apiVersion, "metadata": meta})
	if ws.rep.as == asTable {
		// As in kube-apiserver, a Table watch's bookmark is a Table too:
		// one row printed from the empty object that carries the
		// resourceVersion (column definitions when it is the first event),
		// and the row's object is metadata when it marks the end of the
		// initial events, whatever includeObject asks.
		include := ws.include
		if initialEnd && include == includeObject {
			include = includeMetadata
		}
		t, err := ws.transformed(obj, include)
		if err != nil {
			return
		}
		obj = t
	}
	line, _ := json.Marshal(metav1.WatchEvent{Type: "BOOKMARK", Object: rawExt(obj)})
	_ = ws.send(append(line, '\n'))
}

// writeError writes an ERROR event carrying a Status, as kube-apiserver
// reports a watch that cannot continue.
func (ws *watchStream) writeError(err error) {
	st := statusOf(err)
	st.Kind, st.APIVersion = "Status", "v1"
	var line []byte
	if ws.proto {
		line, err = ws.s.protoEvent("ERROR", st)
		if err != nil {
			return
		}
	} else {
		obj, _ := json.Marshal(st)
		line, _ = json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: rawExt(obj)})
		line = append(line, '\n')
	}
	if ws.send(line) == nil {
		_ = ws.out.flush()
	}
}

func rawExt(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }

// spaceDetail is the /readyz?verbose line about the store's space: the
// quota and the full file system refuse creates and updates but leave the
// server ready, since reads, watches and deletes still work.
func spaceDetail(x store.Stats) string {
	state := "ok"
	switch {
	case x.NoSpace:
		state = "file system full: creates and updates refused until space is freed"
	case x.OverQuota:
		state = "database space exceeded: creates and updates refused until deletes and compaction bring the database under its quota"
	}
	return fmt.Sprintf("store-space %s: quota_bytes=%d used_bytes=%d quota_exceeded=%t no_space=%t",
		state, x.QuotaBytes, x.UsedBytes, x.OverQuota, x.NoSpace)
}

// healthDetails lists store figures for /readyz?verbose.
func (s *Server) healthDetails() []string {
	var out []string
	if st, ok := s.cfg.Store.(store.StatsReporter); ok {
		x := st.Stats()
		out = append(out,
			fmt.Sprintf("store revision=%d compacted=%d changelog_rows=%d db_bytes=%d wal_bytes=%d batches=%d batched_writes=%d max_batch=%d",
				x.Rev, x.CompactedRev, x.ChangeLogRows, x.DBBytes, x.WALBytes, x.Batches, x.BatchedWrites, x.MaxBatchSeen),
			spaceDetail(x))
	}
	if s.watchCache != nil {
		n, b, w := s.watchCache.Stats()
		out = append(out, fmt.Sprintf("watchcache events=%d bytes=%d watchers=%d", n, b, w))
	}
	return out
}
