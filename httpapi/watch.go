package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/edgeapi/edgeapi/store"
)

// Watch timing. Vars so tests can shorten them.
var (
	// bookmarkInterval is how often a watch with allowWatchBookmarks gets
	// a BOOKMARK (kube-apiserver: about once a minute).
	bookmarkInterval = time.Minute
	// watchWriteTimeout bounds how long one event may take to write: a
	// client that stops reading has its stream closed instead of holding a
	// handler (and shutdown) forever.
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

// watchStream writes one watch response: JSON WatchEvents, one per line,
// flushed per event.
type watchStream struct {
	s       *Server
	r       *request
	match   func(*store.Object) bool
	include string
	// sentColumns: a Table watch sends column definitions only once.
	sentColumns bool
	rc          *http.ResponseController
	// deadlineSet is when write last moved the write deadline.
	deadlineSet time.Time
	// memoKeys are the CachedEvent.Memo keys of this stream's encodings,
	// by event type, built once rather than per event.
	memoKeys map[string]string
}

// memoKey returns the key under which the encoding of an event of type typ
// is shared by every plain-JSON watch of the same kind.
func (ws *watchStream) memoKey(typ string) string {
	if k, ok := ws.memoKeys[typ]; ok {
		return k
	}
	if ws.memoKeys == nil {
		ws.memoKeys = make(map[string]string, 3)
	}
	k := typ + " " + ws.r.kind.GVK.String()
	ws.memoKeys[typ] = k
	return k
}

// maxEventsPerFlush bounds the events a watch writes between two flushes
// (and those its reader may queue ahead of the writer).
const maxEventsPerFlush = 64

// write writes one event line with the write deadline, which it moves
// forward at most every watchWriteTimeout/30 (setting it costs more than
// the write when events come fast): a stuck client is still cut off within
// about watchWriteTimeout.
func (ws *watchStream) write(line []byte) error {
	if ws.rc != nil {
		if now := time.Now(); now.Sub(ws.deadlineSet) > watchWriteTimeout/30 {
			_ = ws.rc.SetWriteDeadline(now.Add(watchWriteTimeout))
			ws.deadlineSet = now
		}
	}
	_, err := ws.r.c.Response().Write(line)
	return err
}

func (s *Server) handleWatch(r *request) error {
	c := r.c
	opts, err := s.listOptions(r)
	if err != nil {
		return s.writeError(c, err)
	}
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	stop := context.AfterFunc(s.baseCtx, cancel)
	defer stop()

	timeout := minWatchTimeout + time.Duration(rand.Int64N(int64(minWatchTimeout)))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()

	ws := &watchStream{s: s, r: r, match: matcher(r.kind, opts.LabelSelector, opts.FieldSelector), include: c.QueryParam("includeObject")}
	var initial []store.Object
	var startRev int64
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	rv := opts.ResourceVersion
	switch {
	case sendInitial, opts.SendInitialEvents == nil && (rv == "" || rv == "0"):
		if rv != "" && rv != "0" {
			n, err := parseRV(rv)
			if err != nil {
				return s.writeError(c, err)
			}
			if err := s.waitForRev(ctx, n); err != nil {
				return s.writeError(c, err)
			}
		}
		res, err := s.cfg.Store.List(ctx, store.ListOptions{Resource: r.kind.StorageResource, Namespace: r.ri.Namespace, Filter: ws.match})
		if err != nil {
			return s.writeError(c, storeError(err, r.gr(), ""))
		}
		initial, startRev = res.Objects, res.Rev
	case rv == "" || rv == "0":
		startRev = s.cfg.Store.Rev()
	default:
		n, err := parseRV(rv)
		if err != nil {
			return s.writeError(c, err)
		}
		startRev = n
	}

	w, werr := s.watchCache.Watch(ctx, r.kind.StorageResource, r.ri.Namespace, startRev)
	resp := c.Response()
	// Writes get a deadline, and end at once when the watch is cancelled
	// (server shutdown), even if the client stopped reading.
	rc := http.NewResponseController(resp.Writer)
	ws.rc = rc
	stopDeadline := context.AfterFunc(ctx, func() { _ = rc.SetWriteDeadline(time.Now()) })
	defer stopDeadline()
	resp.Header().Set("Content-Type", mediaJSON)
	resp.Header().Set("Cache-Control", "no-cache, private")
	resp.WriteHeader(http.StatusOK)
	if errors.Is(werr, store.ErrCompacted) {
		ws.writeError(tooOldResourceVersion(startRev, s.cfg.Store.CompactedRev()))
		return nil
	}
	if werr != nil {
		ws.writeError(storeError(werr, r.gr(), ""))
		return nil
	}
	defer w.Stop()
	resp.Flush()

	for i := range initial {
		if err := ws.writeObject("ADDED", initial[i].Value, nil); err != nil {
			return nil
		}
	}
	if sendInitial && opts.AllowWatchBookmarks {
		ws.writeBookmark(startRev, true)
	}
	resp.Flush()

	events := make(chan *store.CachedEvent, maxEventsPerFlush)
	errc := make(chan error, 1)
	go func() {
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				errc <- err
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
	}()
	// delivered is the revision of the last event written (or the start).
	delivered := startRev
	// Bookmarks come every bookmarkInterval and once more shortly before
	// the watch times out, as kube-apiserver's watch cache sends them.
	var bookmarks <-chan time.Time
	var bookmarkTimer *time.Timer
	end := time.Now().Add(timeout)
	nextBookmark := func() {
		next := time.Until(end.Add(-preTimeoutBookmark))
		if next <= 0 || next > bookmarkInterval {
			next = bookmarkInterval
		}
		bookmarkTimer.Reset(next)
	}
	if opts.AllowWatchBookmarks {
		bookmarkTimer = time.NewTimer(time.Hour)
		defer bookmarkTimer.Stop()
		nextBookmark()
		bookmarks = bookmarkTimer.C
	}
	for {
		select {
		case ev := <-events:
			if err := ws.writeEvent(ev); err != nil {
				return nil
			}
			delivered = ev.Rev()
			// Write the events already waiting before flushing once: a
			// system call per event per watch is what limits fan-out.
		more:
			for range maxEventsPerFlush - 1 {
				select {
				case ev := <-events:
					if err := ws.writeEvent(ev); err != nil {
						return nil
					}
					delivered = ev.Rev()
				default:
					break more
				}
			}
			resp.Flush()
		case <-bookmarks:
			ws.writeBookmark(w.ProgressRev(delivered), false)
			resp.Flush()
			nextBookmark()
		case err := <-errc:
			if errors.Is(err, store.ErrCompacted) {
				ws.writeError(tooOldResourceVersion(w.Rev(), s.cfg.Store.CompactedRev()))
			}
			return nil
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
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
// is plain JSON, the encoded line is shared with every other watcher.
func (ws *watchStream) writeObject(typ string, value []byte, ev *store.CachedEvent) error {
	k := ws.r.kind
	var line []byte
	if ws.r.rep.as == asObject {
		build := func() []byte {
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
		}
		if ev != nil {
			line = ev.Memo(ws.memoKey(typ), build)
		} else {
			line = build()
		}
	} else {
		obj, err := ws.transformed(value)
		if err != nil {
			return err
		}
		line, err = json.Marshal(metav1.WatchEvent{Type: typ, Object: rawExt(obj)})
		if err != nil {
			return err
		}
		line = append(line, '\n')
	}
	return ws.write(line)
}

// transformed returns the event object as a Table row or metadata.
func (ws *watchStream) transformed(value []byte) ([]byte, error) {
	k := ws.r.kind
	switch ws.r.rep.as {
	case asTable:
		t, err := ws.s.tableFor(k, ws.r.rep, [][]byte{value}, nil, ws.include)
		if err != nil {
			return nil, err
		}
		if ws.sentColumns {
			t.ColumnDefinitions = nil
		}
		ws.sentColumns = true
		return json.Marshal(t)
	default:
		pom, err := partialMetadata(k, value, ws.r.rep.metaVersion)
		if err != nil {
			return nil, err
		}
		return json.Marshal(pom)
	}
}

// writeBookmark writes a BOOKMARK carrying only the resourceVersion.
func (ws *watchStream) writeBookmark(rev int64, initialEnd bool) {
	k := ws.r.kind
	meta := map[string]interface{}{"resourceVersion": strconv.FormatInt(rev, 10)}
	if initialEnd {
		meta["annotations"] = map[string]string{initialEventsEndAnnotation: "true"}
	}
	obj, _ := json.Marshal(map[string]interface{}{"kind": k.GVK.Kind, "apiVersion": k.GVK.GroupVersion().String(), "metadata": meta})
	line, _ := json.Marshal(metav1.WatchEvent{Type: "BOOKMARK", Object: rawExt(obj)})
	_ = ws.write(append(line, '\n'))
}

// writeError writes an ERROR event carrying a Status, as kube-apiserver
// reports a watch that cannot continue.
func (ws *watchStream) writeError(err error) {
	st := statusOf(err)
	st.Kind, st.APIVersion = "Status", "v1"
	obj, _ := json.Marshal(st)
	line, _ := json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: rawExt(obj)})
	_ = ws.write(append(line, '\n'))
	ws.r.c.Response().Flush()
}

func rawExt(b []byte) runtime.RawExtension { return runtime.RawExtension{Raw: b} }

// healthDetails lists store figures for /readyz?verbose.
func (s *Server) healthDetails() []string {
	var out []string
	if st, ok := s.cfg.Store.(interface{ Stats() store.Stats }); ok {
		x := st.Stats()
		out = append(out,
			fmt.Sprintf("store revision=%d compacted=%d changelog_rows=%d db_bytes=%d wal_bytes=%d batches=%d batched_writes=%d max_batch=%d",
				x.Rev, x.CompactedRev, x.ChangeLogRows, x.DBBytes, x.WALBytes, x.Batches, x.BatchedWrites, x.MaxBatchSeen))
	}
	if s.watchCache != nil {
		n, b, w := s.watchCache.Stats()
		out = append(out, fmt.Sprintf("watchcache events=%d bytes=%d watchers=%d", n, b, w))
	}
	return out
}
