package store

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for WatchCacheConfig fields left zero.
const (
	// DefaultWatchCacheEvents bounds the ring by event count.
	DefaultWatchCacheEvents = 10000
	// DefaultWatchCacheBytes bounds the ring by the bytes of event values.
	DefaultWatchCacheBytes = 64 << 20
	// DefaultWatcherBuffer is how many events (of any resource) a watcher
	// may fall behind the newest before it is closed with
	// ErrWatcherTooSlow.
	DefaultWatcherBuffer = 1024
	// changeLogPage is how many change-log rows a catching-up watcher
	// reads at a time.
	changeLogPage = 1000
)

var (
	// ErrWatcherTooSlow: the watcher fell too far behind; it was closed so
	// that it never holds back writers or other watchers. Clients resume
	// from the last revision they saw.
	ErrWatcherTooSlow = errors.New("store: watcher fell behind")
	// ErrWatchClosed: the watcher was stopped or the cache closed.
	ErrWatchClosed = errors.New("store: watch closed")
)

// WatchCacheConfig bounds a WatchCache.
type WatchCacheConfig struct {
	// MaxEvents and MaxBytes bound the ring of recent events. MaxBytes
	// counts their values and the encodings memoized for watchers.
	MaxEvents int
	MaxBytes  int
	// WatcherBuffer is how many events a watcher may have left to read
	// before it is closed as too slow. A watcher whose next event leaves
	// the ring is closed too.
	WatcherBuffer int
}

// changeSource is what the cache needs from the store.
type changeSource interface {
	Subscribe(fn func(events []Event)) (cancel func())
	Changes(ctx context.Context, afterRev int64, limit int) ([]Event, error)
	Rev() int64
	CompactedRev() int64
}

// CachedEvent is an event in the watch cache, shared by every watcher that
// receives it. Memo lets them share its encodings: encode once, fan out.
type CachedEvent struct {
	Event
	// first is the first encoding memoized, read without locking: most
	// events are encoded only one way.
	first atomic.Pointer[memoEntry]
	// mu guards memo, the other encodings, and evicted.
	mu   sync.Mutex
	memo map[string][]byte
	// cache is the ring the event is in (nil for one built for a single
	// stream); memoBytes, the size of its encodings, counts against the
	// ring's MaxBytes until it is evicted.
	cache     *WatchCache
	memoBytes int
	evicted   bool
}

type memoEntry struct {
	key string
	b   []byte
}

// Memo returns the bytes cached under key, computing them with build on
// first use. The bytes are shared: callers must not modify them.
func (e *CachedEvent) Memo(key string, build func() []byte) []byte {
	if m := e.first.Load(); m != nil && m.key == key {
		return m.b
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.first.Load()
	if m == nil {
		b := build()
		e.first.Store(&memoEntry{key: key, b: b})
		e.addMemoBytes(len(b))
		return b
	}
	if m.key == key {
		return m.b
	}
	if b, ok := e.memo[key]; ok {
		return b
	}
	b := build()
	if e.memo == nil {
		e.memo = make(map[string][]byte, 1)
	}
	e.memo[key] = b
	e.addMemoBytes(len(b))
	return b
}

// addMemoBytes counts n bytes of encodings against the ring's bound; the
// caller holds e.mu.
func (e *CachedEvent) addMemoBytes(n int) {
	e.memoBytes += n
	if e.cache != nil && !e.evicted {
		e.cache.memoBytes.Add(int64(n))
	}
}

// dropMemo forgets the event's encodings. A later Memo builds again.
func (e *CachedEvent) dropMemo() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first.Load() == nil && e.memo == nil {
		return
	}
	e.first.Store(nil)
	e.memo = nil
	if e.cache != nil && !e.evicted {
		e.cache.memoBytes.Add(-int64(e.memoBytes))
	}
	e.memoBytes = 0
}

// evict takes the event's encodings off the ring's count.
func (e *CachedEvent) evict() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evicted = true
	e.cache.memoBytes.Add(-int64(e.memoBytes))
}

// WatchCache is a bounded in-memory ring of the most recent events, fed by
// the store's single commit path, that fans events out to watchers.
//
// Watchers hold no queue of their own: each keeps its position in the ring
// and is woken when events it wants arrive, so an idle watcher costs a few
// hundred bytes and a commit costs one pass over the watchers. A watch
// that starts inside the ring is served from memory; one that starts
// before it (but after the compacted revision) reads the change log and
// then joins the ring with no gap and no duplicate.
type WatchCache struct {
	cfg WatchCacheConfig
	db  changeSource

	unsubscribe func()

	// mu guards everything below. Publishing takes it for writing,
	// watchers reading the ring for reading.
	mu   sync.RWMutex
	ring []*CachedEvent // circular; len == cap == MaxEvents
	// seq is the sequence number the next published event gets; the ring
	// holds sequence numbers [seq-n, seq), event s at ring[s%len(ring)].
	seq   uint64
	n     int // number of events in the ring
	bytes int // value bytes in the ring
	// memoBytes counts the encodings memoized on events in the ring
	// (CachedEvent.Memo adds to it outside mu).
	memoBytes atomic.Int64
	lastRev   int64 // newest revision published (or seen at start)
	// latest is, for each key, its newest event in the ring unless that
	// is a deletion. An update's PrevValue usually has the bytes of the
	// Value of the key's event before it, read again from SQLite: the
	// event shares that event's slice instead, so a burst of updates to
	// large objects (CustomResourceDefinitions: 15 KB, written three
	// times in their first second) keeps each state once.
	latest   map[Key]*CachedEvent
	watchers map[*Watcher]struct{}
	// releasedTo is the sequence number below which the events'
	// encodings were dropped (see publish and releaseLoop).
	releasedTo uint64
	// stopRelease ends releaseLoop.
	stopRelease chan struct{}
	closed      bool
	// tooSlow counts the watchers closed with ErrWatcherTooSlow.
	tooSlow atomic.Int64
}

// NewWatchCache starts a cache fed by db's commits. Close it to detach.
func NewWatchCache(db changeSource, cfg WatchCacheConfig) *WatchCache {
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultWatchCacheEvents
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultWatchCacheBytes
	}
	if cfg.WatcherBuffer <= 0 {
		cfg.WatcherBuffer = DefaultWatcherBuffer
	}
	c := &WatchCache{cfg: cfg, db: db, ring: make([]*CachedEvent, cfg.MaxEvents), latest: make(map[Key]*CachedEvent), watchers: make(map[*Watcher]struct{})}
	c.unsubscribe = db.Subscribe(c.publish)
	c.stopRelease = make(chan struct{})
	go c.releaseLoop(c.stopRelease)
	c.mu.Lock()
	if c.lastRev < db.Rev() && c.n == 0 {
		c.lastRev = db.Rev()
	}
	c.mu.Unlock()
	return c
}

// at returns the event with sequence number s, which must be in the ring.
func (c *WatchCache) at(s uint64) *CachedEvent { return c.ring[s%uint64(len(c.ring))] }

// oldestSeqLocked is the sequence number of the oldest event in the ring.
func (c *WatchCache) oldestSeqLocked() uint64 { return c.seq - uint64(c.n) }

// oldestAvailableLocked is the revision after which the ring holds every
// event: a watch from any revision >= it is served from memory.
func (c *WatchCache) oldestAvailableLocked() int64 {
	if c.n == 0 {
		return c.lastRev
	}
	return c.at(c.oldestSeqLocked()).Rev() - 1
}

// publish runs on the writer goroutine after each commit. It never blocks:
// it appends the events to the ring, closes watchers that fell too far
// behind with ErrWatcherTooSlow, and wakes those that want a new event.
func (c *WatchCache) publish(events []Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(events) == 0 {
		return
	}
	start := c.seq
	for i := range events {
		ev := &CachedEvent{Event: events[i], cache: c}
		size := len(ev.Object.Value) + len(ev.PrevValue)
		for c.n > 0 && (c.n == len(c.ring) || c.bytes+int(c.memoBytes.Load())+size > c.cfg.MaxBytes) {
			s := c.oldestSeqLocked()
			old := c.at(s)
			c.bytes -= len(old.Object.Value) + len(old.PrevValue)
			old.evict()
			c.ring[s%uint64(len(c.ring))] = nil
			c.n--
			if c.latest[old.Object.Key] == old {
				delete(c.latest, old.Object.Key)
			}
		}
		if l := c.latest[ev.Object.Key]; l != nil && ev.PrevValue != nil && bytes.Equal(l.Object.Value, ev.PrevValue) {
			ev.PrevValue = l.Object.Value
		}
		if ev.Type == Deleted {
			delete(c.latest, ev.Object.Key)
		} else {
			c.latest[ev.Object.Key] = ev
		}
		c.ring[c.seq%uint64(len(c.ring))] = ev
		c.seq++
		c.n++
		c.bytes += size
		if r := ev.Rev(); r > c.lastRev {
			c.lastRev = r
		}
	}
	oldest := c.oldestSeqLocked()
	first := max(start, oldest)
	horizon := c.seq
	for w := range c.watchers {
		next := w.next.Load()
		if next < oldest || c.seq-next > uint64(c.cfg.WatcherBuffer) {
			delete(c.watchers, w)
			w.closeWith(ErrWatcherTooSlow)
			c.tooSlow.Add(1)
			continue
		}
		wanted := false
		for s := first; s < c.seq; s++ {
			if w.wants(c.at(s)) {
				wanted = true
				break
			}
		}
		switch {
		case wanted:
			w.wake()
		case next == start:
			// Caught up and none of this batch is for it: move it past
			// the batch so that an idle watcher never counts as behind.
			// One that has processed all it drained is done with the
			// batch too.
			if w.written.Load() == next {
				w.written.Store(c.seq)
			}
			w.next.Store(c.seq)
		}
		horizon = min(horizon, w.written.Load())
	}
	// Every watcher has written the events below horizon: their
	// encodings served the fan-out and are dropped, so that an event
	// keeps its value only (a burst of 500 CRDs watched by one client
	// kept 14 MiB of encodings). A watcher that joins later at an older
	// revision encodes them again.
	c.releaseLocked(horizon)
}

// releaseLocked drops the encodings of the events below horizon, which
// every watcher has written. The caller holds c.mu for writing.
func (c *WatchCache) releaseLocked(horizon uint64) {
	for s := max(c.releasedTo, c.oldestSeqLocked()); s < horizon; s++ {
		c.at(s).dropMemo()
	}
	c.releasedTo = max(c.releasedTo, horizon)
}

// writtenHorizonLocked is the sequence number below which every watcher
// has written the events. The caller holds c.mu.
func (c *WatchCache) writtenHorizonLocked() uint64 {
	horizon := c.seq
	for w := range c.watchers {
		horizon = min(horizon, w.written.Load())
	}
	return horizon
}

// releaseEvery is how often the encodings watchers wrote since the last
// commit are dropped when no commit comes to drop them (the end of a
// burst). A var so tests can shorten it.
var releaseEvery = time.Second

// releaseLoop drops written encodings every releaseEvery until stop.
func (c *WatchCache) releaseLoop(stop <-chan struct{}) {
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		c.mu.RLock()
		due := !c.closed && c.writtenHorizonLocked() > c.releasedTo
		c.mu.RUnlock()
		if due {
			c.mu.Lock()
			if !c.closed {
				c.releaseLocked(c.writtenHorizonLocked())
			}
			c.mu.Unlock()
		}
	}
}

// Stats reports the ring's size; bytes counts values and memoized
// encodings.
func (c *WatchCache) Stats() (events, bytes, watchers int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.n, c.bytes + int(c.memoBytes.Load()), len(c.watchers)
}

// WatchCacheMetrics are a WatchCache's figures, for metrics.
type WatchCacheMetrics struct {
	// Events and Bytes are the ring's size (Bytes counts values and
	// memoized encodings); Watchers the watchers reading from it.
	Events, Bytes, Watchers int
	// TooSlow counts the watchers closed with ErrWatcherTooSlow since
	// the cache started.
	TooSlow int64
}

// Metrics returns the cache's figures.
func (c *WatchCache) Metrics() WatchCacheMetrics {
	events, bytes, watchers := c.Stats()
	return WatchCacheMetrics{Events: events, Bytes: bytes, Watchers: watchers, TooSlow: c.tooSlow.Load()}
}

// Watch returns a watcher of resource (every resource when empty) in
// namespace (all namespaces when empty) that delivers every event with
// revision > afterRev, in order. A revision newer than the store's is
// waited for. ErrCompacted when afterRev is older than the compacted
// revision.
func (c *WatchCache) Watch(ctx context.Context, resource, namespace string, afterRev int64) (*Watcher, error) {
	return c.WatchFunc(ctx, resource, namespace, afterRev, nil)
}

// WatchFunc is Watch for a reader that waits on no channel: instead of
// making Ready ready, the watcher calls onReady (when not nil) whenever
// Drain may have events to return, once at the start included, and when
// the watcher ends. onReady may run on the writer's commit path with the
// cache locked: it must return at once and must not call into the cache.
func (c *WatchCache) WatchFunc(ctx context.Context, resource, namespace string, afterRev int64, onReady func()) (*Watcher, error) {
	w := &Watcher{
		cache: c, resource: resource, namespace: namespace,
		done: make(chan struct{}), onReady: onReady,
	}
	if onReady == nil {
		w.ready = make(chan struct{}, 1)
	}
	w.after = afterRev
	// Rev and ProgressRev report the start until the watcher joins or
	// reads past it (a 410 while catching up names it).
	w.afterRev.Store(afterRev)
	if afterRev < c.db.CompactedRev() {
		return nil, ErrCompacted
	}
	if !w.tryJoin() {
		w.catchingUp = true
	}
	// The first Drain finds what is already there (or reads the log).
	w.wake()
	return w, nil
}

// Close detaches the cache and ends every watcher with ErrWatchClosed.
func (c *WatchCache) Close() {
	c.unsubscribe()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		close(c.stopRelease)
	}
	c.closed = true
	for w := range c.watchers {
		w.closeWith(ErrWatchClosed)
	}
	c.watchers = nil
}

// Watcher is one watch stream. One goroutine reads it, with Drain (waiting
// on Ready and Done) or with Next; Stop and ProgressRev may be called from
// any goroutine.
type Watcher struct {
	cache               *WatchCache
	resource, namespace string
	// next is the sequence number of the next ring event to look at once
	// joined. Written by the reader under cache.mu.RLock and by publish
	// under cache.mu.Lock.
	next atomic.Uint64
	// written is the sequence number below which the reader has processed
	// every event (encoded and written it): next as it was when the
	// reader last entered Drain, which it does only once it is through
	// with what it drained before. Written under cache.mu like next.
	written atomic.Uint64
	// afterRev mirrors after for ProgressRev, which runs on other
	// goroutines.
	afterRev atomic.Int64

	// The fields below are used only by the reading goroutine.
	// after is the revision of the last event returned (or the start).
	after int64
	// catchingUp: the watcher reads the change log before joining.
	catchingUp bool
	// backlog holds a change-log page while catching up; pending holds
	// what Drain returned and Next has not.
	backlog []*CachedEvent
	pending []*CachedEvent

	// ready is made ready, or onReady called, when Drain may have events.
	ready   chan struct{}
	onReady func()
	done    chan struct{}
	// errMu guards err.
	errMu sync.Mutex
	err   error
	once  sync.Once
}

func (w *Watcher) wants(ev *CachedEvent) bool {
	k := ev.Object.Key
	return (w.resource == "" || k.Resource == w.resource) && (w.namespace == "" || k.Namespace == w.namespace)
}

// wake makes Ready ready (or calls onReady), without blocking.
func (w *Watcher) wake() {
	if w.onReady != nil {
		w.onReady()
		return
	}
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// tryJoin registers the watcher with the cache if everything after
// w.after is still in the ring (or in the future), positioning it at the
// first event after w.after. It reports false when the watcher must read
// the change log first.
func (w *Watcher) tryJoin() bool {
	c := w.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		w.closeWith(ErrWatchClosed)
		return true
	}
	if w.after < c.oldestAvailableLocked() {
		return false
	}
	s := c.oldestSeqLocked()
	for s < c.seq && c.at(s).Rev() <= w.after {
		s++
	}
	w.next.Store(s)
	w.written.Store(s)
	w.afterRev.Store(w.after)
	c.watchers[w] = struct{}{}
	return true
}

func (w *Watcher) closeWith(err error) {
	w.once.Do(func() {
		w.errMu.Lock()
		w.err = err
		w.errMu.Unlock()
		close(w.done)
		if w.onReady != nil {
			w.onReady()
		}
	})
}

// Ready is signalled when Drain may have events to return. After a Drain
// that returns fewer events than asked, wait on Ready (and Done) before
// the next.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Done is closed when the watcher ends; Err says why.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err is why the watcher ended (ErrWatcherTooSlow, ErrWatchClosed), or
// nil while it runs.
func (w *Watcher) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Drain appends to dst, without waiting for new events, up to max of the
// events available now, in revision order, and returns it. While the
// watcher catches up from the change log, Drain reads it (one page per
// call). It fails with the watcher's error once it ended, or with
// ErrCompacted when the change log it needs was compacted.
func (w *Watcher) Drain(ctx context.Context, dst []*CachedEvent, max int) ([]*CachedEvent, error) {
	if err := w.Err(); err != nil {
		return dst, err
	}
	for n := 0; len(w.backlog) > 0 && n < max; n++ {
		ev := w.backlog[0]
		w.backlog[0] = nil
		w.backlog = w.backlog[1:]
		dst = w.deliver(dst, ev)
	}
	if len(w.backlog) > 0 {
		w.wake()
		return dst, nil
	}
	if w.catchingUp {
		if !w.tryJoin() {
			events, err := w.cache.db.Changes(ctx, w.after, changeLogPage)
			if err != nil {
				return dst, err
			}
			for i := range events {
				if ev := (&CachedEvent{Event: events[i]}); w.wants(ev) {
					w.backlog = append(w.backlog, ev)
				}
			}
			if len(w.backlog) == 0 && len(events) > 0 {
				w.after = events[len(events)-1].Rev()
				w.afterRev.Store(w.after)
			}
			// Come back for the page (or the next one, or to join).
			w.wake()
			return dst, nil
		}
		w.catchingUp = false
		w.backlog = nil
	}
	c := w.cache
	c.mu.RLock()
	s := w.next.Load()
	w.written.Store(s)
	if s < c.oldestSeqLocked() {
		c.mu.RUnlock()
		c.tooSlow.Add(1)
		return dst, ErrWatcherTooSlow
	}
	for n := 0; s < c.seq && n < max; s++ {
		if ev := c.at(s); w.wants(ev) {
			dst = w.deliver(dst, ev)
			n++
		}
	}
	w.next.Store(s)
	more := s < c.seq
	c.mu.RUnlock()
	if more {
		w.wake()
	}
	return dst, nil
}

// deliver appends ev to dst unless it was delivered already.
func (w *Watcher) deliver(dst []*CachedEvent, ev *CachedEvent) []*CachedEvent {
	if ev.Rev() <= w.after {
		return dst
	}
	w.after = ev.Rev()
	w.afterRev.Store(w.after)
	return append(dst, ev)
}

// Next returns the next event, blocking until one arrives, ctx ends, or the
// watcher is closed (ErrWatcherTooSlow, ErrWatchClosed, ErrCompacted).
func (w *Watcher) Next(ctx context.Context) (*CachedEvent, error) {
	for {
		if len(w.pending) > 0 {
			ev := w.pending[0]
			w.pending[0] = nil
			w.pending = w.pending[1:]
			return ev, nil
		}
		var err error
		w.pending, err = w.Drain(ctx, w.pending[:0], 64)
		if err != nil {
			return nil, err
		}
		if len(w.pending) > 0 {
			continue
		}
		select {
		case <-w.ready:
		case <-w.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ProgressRev returns the revision a BOOKMARK may carry once the caller
// has written every event up to delivered: the cache's newest revision when
// the watcher is live, has read everything in the ring and delivered is
// the last event it returned; else delivered.
func (w *Watcher) ProgressRev(delivered int64) int64 {
	c := w.cache
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, live := c.watchers[w]; live && w.next.Load() == c.seq && w.afterRev.Load() == delivered && c.lastRev > delivered {
		return c.lastRev
	}
	return delivered
}

// Rev is the revision of the last event delivered, or the start revision.
func (w *Watcher) Rev() int64 { return w.afterRev.Load() }

// Stop ends the watcher and detaches it from the cache.
func (w *Watcher) Stop() {
	c := w.cache
	c.mu.Lock()
	if c.watchers != nil {
		delete(c.watchers, w)
	}
	c.mu.Unlock()
	w.closeWith(ErrWatchClosed)
}
