//go:build etcd

package etcdstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeapi/edgeapi/store"
)

// This file turns etcd's watch into the store's events: the one place
// where commits become events is the feed, one etcd watch on the whole
// prefix (with previous values and progress notifications). It publishes
// each watch response's events, in revision order, to every subscriber,
// and records the revision published; writes through this store wait for
// their revision to be published before answering, so subscribers see a
// write before its writer is answered, as with the SQLite store. Writes
// made through other processes reach the subscribers the same way.

// feedRetry is the pause before the feed reopens a broken watch.
const feedRetry = 100 * time.Millisecond

// changesProgress is how often Changes asks etcd for a progress
// notification while it waits for the end of the log.
const changesProgress = 50 * time.Millisecond

// feed is the subscribers and the revision published to them.
type feed struct {
	// mu guards everything below.
	mu   sync.Mutex
	subs map[int]func([]store.Event)
	next int
	// published is the newest revision whose events every subscriber has.
	published int64
	// advanced is closed and replaced whenever published grows or the
	// feed closes.
	advanced chan struct{}
	closed   bool
}

func (f *feed) init(rev int64) {
	f.published = rev
	f.advanced = make(chan struct{})
	f.subs = make(map[int]func([]store.Event))
}

// publish delivers events to the subscribers and raises published to rev.
func (f *feed) publish(events []store.Event, rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(events) > 0 {
		for _, fn := range f.subs {
			fn(events)
		}
	}
	if rev > f.published {
		f.published = rev
		close(f.advanced)
		f.advanced = make(chan struct{})
	}
}

func (f *feed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.advanced)
	}
}

// Subscribe implements store.Store. fn runs on the feed's goroutine,
// under the feed's lock: it must not block, nor call Subscribe or cancel.
func (s *Store) Subscribe(fn func(events []store.Event)) (cancel func()) {
	f := &s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.subs[id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs, id)
		})
	}
}

// waitPublished waits until the feed has published rev, the store
// closes (ErrClosed; the write itself committed) or ctx ends.
func (s *Store) waitPublished(ctx context.Context, rev int64) error {
	f := &s.feed
	for {
		f.mu.Lock()
		done, closed, ch := f.published >= rev, f.closed, f.advanced
		f.mu.Unlock()
		switch {
		case done:
			return nil
		case closed:
			return store.ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// runFeed is the feed's goroutine: it watches the prefix from rev and
// reopens the watch after the last published revision when it breaks.
// When etcd compacted past it meanwhile, the events in between are lost
// to subscribers: the feed goes on from the compacted revision.
func (s *Store) runFeed(ctx context.Context, rev int64) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		ch := s.client.Watch(wctx, s.keys.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(rev),
			clientv3.WithPrevKV(), clientv3.WithProgressNotify())
		for resp := range ch {
			if resp.CompactRevision != 0 {
				s.observeCompacted(resp.CompactRevision)
				rev = resp.CompactRevision
				break
			}
			if resp.Err() != nil {
				break
			}
			// A response's header revision covers its events only for a
			// progress notification; a catching-up watch sends events
			// below it in several responses.
			s.observe(resp.Header.Revision)
			top := rev - 1
			if resp.IsProgressNotify() {
				top = max(top, resp.Header.Revision)
			} else if n := len(resp.Events); n > 0 {
				top = max(top, resp.Events[n-1].Kv.ModRevision)
			}
			s.feed.publish(s.events(resp.Events, false), top)
			rev = top + 1
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(feedRetry):
		}
	}
}

// events converts etcd watch events into store events, skipping keys
// outside the layout. keysOnly leaves Value and PrevValue nil.
func (s *Store) events(evs []*clientv3.Event, keysOnly bool) []store.Event {
	out := make([]store.Event, 0, len(evs))
	for _, ev := range evs {
		key, ok := s.keys.parse(string(ev.Kv.Key))
		if !ok {
			continue
		}
		e := store.Event{Type: store.Modified}
		kv := ev.Kv
		switch {
		case ev.Type == mvccpb.DELETE:
			e.Type = store.Deleted
			if ev.PrevKv == nil {
				continue // no last state to report
			}
			last := *ev.PrevKv
			last.ModRevision = kv.ModRevision
			kv = &last
		case ev.IsCreate():
			e.Type = store.Added
		}
		if keysOnly {
			v, _, err := s.decode(key, kv)
			if err != nil {
				continue // not an object this store can read
			}
			e.Object = store.Object{Key: key, UID: store.MetadataUID(v), CreateRev: kv.CreateRevision, ModRev: kv.ModRevision}
			out = append(out, e)
			continue
		}
		obj, err := s.stored(key, kv)
		if err != nil {
			continue // not an object this store can read
		}
		e.Object = obj
		if ev.PrevKv != nil && e.Type != store.Added {
			if prev, err := s.stored(key, ev.PrevKv); err == nil {
				e.PrevValue = prev.Value
			}
		}
		out = append(out, e)
	}
	return out
}

// Changes implements store.Store with a watch on the prefix from
// afterRev+1 up to the current revision, read when the call starts:
// ErrCompacted when etcd compacted past afterRev+1, ErrFutureRev when
// afterRev is past the current revision.
func (s *Store) Changes(ctx context.Context, afterRev int64, limit int) ([]store.Event, error) {
	return s.changes(ctx, afterRev, limit, false)
}

// ChangeKeys implements store.Store: Changes without values. etcd's watch
// sends the values anyway; they are dropped here.
func (s *Store) ChangeKeys(ctx context.Context, afterRev int64, limit int) ([]store.Event, error) {
	return s.changes(ctx, afterRev, limit, true)
}

func (s *Store) changes(ctx context.Context, afterRev int64, limit int, keysOnly bool) ([]store.Event, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	head, err := s.get(ctx, "read changes", s.keys.prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		return nil, err
	}
	cur := head.Header.Revision
	switch {
	case afterRev > cur:
		return nil, store.ErrFutureRev
	case afterRev < s.compactedRev.Load():
		return nil, store.ErrCompacted
	case afterRev == cur:
		return nil, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := s.client.Watch(wctx, s.keys.prefix+"/", clientv3.WithPrefix(), clientv3.WithRev(afterRev+1),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	// A progress notification (asked for until one comes) tells that
	// every event up to its revision was sent: the end when no event in
	// the prefix is at cur itself.
	go func() {
		tick := time.NewTicker(changesProgress)
		defer tick.Stop()
		for {
			_ = s.client.RequestProgress(wctx)
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var out []store.Event
	for resp := range ch {
		if resp.CompactRevision != 0 {
			s.observeCompacted(resp.CompactRevision)
			return nil, store.ErrCompacted
		}
		if err := resp.Err(); err != nil {
			return nil, s.translate("read changes", err)
		}
		for _, e := range s.events(resp.Events, keysOnly) {
			if e.Rev() > cur {
				return out, nil
			}
			out = append(out, e)
			if limit > 0 && len(out) == limit {
				return out, nil
			}
		}
		n := len(resp.Events)
		if (resp.IsProgressNotify() && resp.Header.Revision >= cur) || (n > 0 && resp.Events[n-1].Kv.ModRevision >= cur) {
			return out, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("read changes: %w", store.ErrClosed)
}
