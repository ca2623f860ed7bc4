package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Defaults for WatchCacheConfig fields left zero.
const (
	// DefaultWatchCacheEvents bounds the ring by event count.
	DefaultWatchCacheEvents = 10000
	// DefaultWatchCacheBytes bounds the ring by the bytes of event values.
	DefaultWatchCacheBytes = 64 << 20
	// DefaultWatcherBuffer is how many events one watcher may lag behind
	// before it is closed with ErrWatcherTooSlow.
	DefaultWatcherBuffer = 256
	// changeLogPage is how many change-log rows a catching-up watcher
	// reads at a time.
	changeLogPage = 1000
)

var (
	// ErrWatcherTooSlow: the watcher's buffer filled up; it was closed so
	// that it never blocks writers or other watchers. Clients resume from
	// the last revision they saw.
	ErrWatcherTooSlow = errors.New("store: watcher fell behind")
	// ErrWatchClosed: the watcher was stopped or the cache closed.
	ErrWatchClosed = errors.New("store: watch closed")
)

// WatchCacheConfig bounds a WatchCache.
type WatchCacheConfig struct {
	MaxEvents     int
	MaxBytes      int
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
	// mu guards memo.
	mu   sync.Mutex
	memo map[string][]byte
}

// Memo returns the bytes cached under key, computing them with build on
// first use.
func (e *CachedEvent) Memo(key string, build func() []byte) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.memo[key]; ok {
		return b
	}
	b := build()
	if e.memo == nil {
		e.memo = make(map[string][]byte, 1)
	}
	e.memo[key] = b
	return b
}

// WatchCache is a bounded in-memory ring of the most recent events, fed by
// the store's single commit path, that fans events out to watchers. A watch
// that starts inside the ring is served from memory; one that starts before
// it (but after the compacted revision) reads the change log and then
// joins the live stream with no gap and no duplicate.
type WatchCache struct {
	src WatchCacheConfig
	db  changeSource

	unsubscribe func()

	// mu guards everything below.
	mu       sync.Mutex
	ring     []*CachedEvent // circular; len == cap == MaxEvents
	head     int            // index of the oldest event
	n        int            // number of events in the ring
	bytes    int            // value bytes in the ring
	lastRev  int64          // newest revision published (or seen at start)
	watchers map[*Watcher]struct{}
	closed   bool
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
	c := &WatchCache{src: cfg, db: db, ring: make([]*CachedEvent, cfg.MaxEvents), watchers: make(map[*Watcher]struct{})}
	c.unsubscribe = db.Subscribe(c.publish)
	c.mu.Lock()
	if c.lastRev < db.Rev() && c.n == 0 {
		c.lastRev = db.Rev()
	}
	c.mu.Unlock()
	return c
}

// oldestAvailableLocked is the revision after which the ring holds every
// event: a watch from any revision >= it is served from memory.
func (c *WatchCache) oldestAvailableLocked() int64 {
	if c.n == 0 {
		return c.lastRev
	}
	return c.ring[c.head].Rev() - 1
}

// publish runs on the writer goroutine after each commit. It never blocks:
// a watcher whose buffer is full is closed with ErrWatcherTooSlow.
func (c *WatchCache) publish(events []Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	for i := range events {
		ev := &CachedEvent{Event: events[i]}
		size := len(ev.Object.Value) + len(ev.PrevValue)
		for c.n > 0 && (c.n == len(c.ring) || c.bytes+size > c.src.MaxBytes) {
			old := c.ring[c.head]
			c.bytes -= len(old.Object.Value) + len(old.PrevValue)
			c.ring[c.head] = nil
			c.head = (c.head + 1) % len(c.ring)
			c.n--
		}
		c.ring[(c.head+c.n)%len(c.ring)] = ev
		c.n++
		c.bytes += size
		if r := ev.Rev(); r > c.lastRev {
			c.lastRev = r
		}
		for w := range c.watchers {
			if !w.wants(ev) {
				continue
			}
			select {
			case w.ch <- ev:
			default:
				delete(c.watchers, w)
				w.closeWith(ErrWatcherTooSlow)
			}
		}
	}
}

// Stats reports the ring's size.
func (c *WatchCache) Stats() (events, bytes, watchers int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, c.bytes, len(c.watchers)
}

// Watch returns a watcher of resource (every resource when empty) in
// namespace (all namespaces when empty) that delivers every event with revision > afterRev, in order. A
// revision newer than the store's is waited for. ErrCompacted when
// afterRev is older than the compacted revision.
func (c *WatchCache) Watch(ctx context.Context, resource, namespace string, afterRev int64) (*Watcher, error) {
	w := &Watcher{
		cache: c, resource: resource, namespace: namespace,
		ch: make(chan *CachedEvent, c.src.WatcherBuffer), done: make(chan struct{}),
	}
	w.after.Store(afterRev)
	if afterRev < c.db.CompactedRev() {
		return nil, ErrCompacted
	}
	if !w.tryJoin() {
		w.catchingUp = true
	}
	return w, nil
}

// Close detaches the cache and ends every watcher with ErrWatchClosed.
func (c *WatchCache) Close() {
	c.unsubscribe()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for w := range c.watchers {
		w.closeWith(ErrWatchClosed)
	}
	c.watchers = nil
}

// Watcher is one watch stream.
type Watcher struct {
	cache               *WatchCache
	resource, namespace string
	// after is the revision of the last event returned by Next (or the
	// start). Written only by Next's caller.
	after atomic.Int64
	// live is set once the backlog is drained and events come only from ch.
	live atomic.Bool

	// backlog holds events to deliver before ch: the ring's tail at join,
	// or a change-log page while catching up. Used only by Next's caller.
	backlog    []*CachedEvent
	catchingUp bool

	ch   chan *CachedEvent
	done chan struct{}
	// errMu guards err.
	errMu sync.Mutex
	err   error
	once  sync.Once
}

func (w *Watcher) wants(ev *CachedEvent) bool {
	k := ev.Object.Key
	return (w.resource == "" || k.Resource == w.resource) && (w.namespace == "" || k.Namespace == w.namespace)
}

// tryJoin registers the watcher with the cache if everything after w.after
// is still in the ring (or in the future), copying the ring's tail into the
// backlog. It reports false when the watcher must read the change log first.
func (w *Watcher) tryJoin() bool {
	c := w.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		w.closeWith(ErrWatchClosed)
		return true
	}
	after := w.after.Load()
	if after < c.oldestAvailableLocked() {
		return false
	}
	for i := 0; i < c.n; i++ {
		ev := c.ring[(c.head+i)%len(c.ring)]
		if ev.Rev() > after && w.wants(ev) {
			w.backlog = append(w.backlog, ev)
		}
	}
	c.watchers[w] = struct{}{}
	return true
}

func (w *Watcher) closeWith(err error) {
	w.once.Do(func() {
		w.errMu.Lock()
		w.err = err
		w.errMu.Unlock()
		close(w.done)
	})
}

// Next returns the next event, blocking until one arrives, ctx ends, or the
// watcher is closed (ErrWatcherTooSlow, ErrWatchClosed, ErrCompacted).
func (w *Watcher) Next(ctx context.Context) (*CachedEvent, error) {
	for {
		if len(w.backlog) > 0 {
			ev := w.backlog[0]
			w.backlog[0] = nil
			w.backlog = w.backlog[1:]
			if ev.Rev() <= w.after.Load() {
				continue
			}
			w.after.Store(ev.Rev())
			return ev, nil
		}
		if w.catchingUp {
			if w.tryJoin() {
				w.catchingUp = false
				continue
			}
			events, err := w.cache.db.Changes(ctx, w.after.Load(), changeLogPage)
			if err != nil {
				return nil, err
			}
			for i := range events {
				ev := &CachedEvent{Event: events[i]}
				if w.wants(ev) {
					w.backlog = append(w.backlog, ev)
				}
			}
			if len(events) > 0 && len(w.backlog) == 0 {
				w.after.Store(events[len(events)-1].Rev())
			}
			continue
		}
		w.live.Store(true)
		select {
		case ev := <-w.ch:
			if ev.Rev() <= w.after.Load() {
				continue
			}
			w.after.Store(ev.Rev())
			return ev, nil
		case <-w.done:
			// Deliver what was buffered before the close was noticed only
			// for a clean stop; a slow watcher must resume instead.
			w.errMu.Lock()
			err := w.err
			w.errMu.Unlock()
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// ProgressRev returns the revision a BOOKMARK may carry once the caller
// has written every event up to delivered: the cache's newest revision when
// the watcher is live and nothing is queued for it, else delivered.
func (w *Watcher) ProgressRev(delivered int64) int64 {
	c := w.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.live.Load() && len(w.ch) == 0 && w.after.Load() == delivered && c.lastRev > delivered {
		return c.lastRev
	}
	return delivered
}

// Rev is the revision of the last event delivered, or the start revision.
func (w *Watcher) Rev() int64 { return w.after.Load() }

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
