//go:build etcd

package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/edgeapi/edgeapi/store"
)

// This file is what the store does while etcd cannot answer: a member
// was lost, the cluster is electing a leader, or no member is reachable.
// The etcd client waits for a connection and retries reads by itself;
// writes it cannot retry, because a write whose answer was lost (etcd's
// "request timed out", a reset connection) may or may not have been
// applied. So:
//   - reads made while the client is connected to no member wait at most
//     the unavailable wait, then fail with store.ErrUnavailable (503 with
//     Retry-After: nothing changed, client-go sends it again); reads made
//     while a member is connected wait as long as the request may;
//   - a write is sent again, with the same comparison, until etcd answers
//     it (an attempt that takes longer than attemptTimeout counts as
//     unanswered). Every write of this store is a transaction that compares the
//     key's revision, so a write that was applied the first time fails its
//     comparison the second: the transaction's Else branch then reads the
//     key, and when the key holds exactly what the write put (or, for a
//     delete, is gone) the earlier attempt is what applied it, and the
//     write succeeds with that revision. When the wait ends first, the
//     write fails with store.ErrUnavailable if no attempt can have
//     been applied, else with store.ErrUnknownOutcome (504: the client
//     reads and decides).

// DefaultUnavailableWait is how long a request waits for an etcd that
// cannot answer before it fails. etcd itself gives up on a proposal after
// about 7 s (its request timeout and two election timeouts), and a new
// leader is elected within a few election timeouts (1 s each by default).
const DefaultUnavailableWait = 15 * time.Second

// Pauses between attempts of a write while etcd cannot answer it, and
// how long one attempt may take before it is sent again. etcd answers a
// proposal it forwarded to a leader that died only when its own request
// timeout (about 7 s) ends; a new leader is usually there after one or
// two election timeouts (1 s each by default).
const (
	attemptTimeout  = 3 * time.Second
	retryFirstPause = 50 * time.Millisecond
	retryMaxPause   = time.Second
)

// unavailable reports whether err is etcd (or the connection to it)
// failing for now: no leader, a leader change, a timed-out proposal, a
// lost connection, too many requests. Such a request may succeed when
// sent again.
func unavailable(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable || errors.Is(err, rpctypes.ErrTooManyRequests)
	}
	return status.Code(err) == codes.Unavailable
}

// notApplied reports whether err, an unavailable error of a write, says
// etcd did not start to apply it: there was no leader to propose it to,
// or the server refused it before proposing.
func notApplied(err error) bool {
	return errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrNotCapable) ||
		errors.Is(err, rpctypes.ErrTooManyRequests)
}

// giveUp is the error of a write that etcd did not answer within the
// unavailable wait, last being the last attempt's error: ErrUnknownOutcome
// when an attempt may have been applied, else ErrUnavailable.
func (s *Store) giveUp(what string, last error, maybeApplied bool) error {
	kind := store.ErrUnavailable
	if maybeApplied {
		kind = store.ErrUnknownOutcome
	}
	return fmt.Errorf("%s: etcd did not answer within %v (last: %v): %w", what, s.unavailableWait, last, kind)
}

// get is client.Get, its errors translated (what names the read). When
// the client is connected to no member it waits at most the unavailable
// wait for one; otherwise as long as ctx allows, so that a large read
// from a slow but working etcd is not cut short (the client sends a read
// that fails for now to another member by itself).
func (s *Store) get(ctx context.Context, what, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	bctx, cancel := ctx, context.CancelFunc(func() {})
	if !s.connected() {
		bctx, cancel = context.WithTimeout(ctx, s.unavailableWait)
	}
	defer cancel()
	resp, err := s.client.Get(bctx, key, opts...)
	if err != nil {
		if ctx.Err() == nil && bctx.Err() != nil {
			return nil, fmt.Errorf("%s: etcd did not answer within %v: %w", what, s.unavailableWait, store.ErrUnavailable)
		}
		return nil, s.translate(what, err)
	}
	s.observe(resp.Header.Revision)
	return resp, nil
}

// connected reports whether the client has a connection to an etcd
// member that is ready for requests.
func (s *Store) connected() bool {
	return s.client.ActiveConnection().GetState() == connectivity.Ready
}

// committed is the outcome of a conditional write (commit).
type committed struct {
	// resp is etcd's answer to the last attempt.
	resp *clientv3.TxnResponse
	// earlier: the last attempt's comparison failed because an earlier
	// attempt, whose answer was lost, had applied the write. now is the
	// key as that attempt left it (nil when it deleted the key).
	earlier bool
	now     *mvccpb.KeyValue
}

// commit runs the transaction If(cmp).Then(op).Else(Get k) and returns
// its outcome. put is the value op puts at k, nil when op deletes k.
// While etcd cannot answer (unavailable), it sends the transaction again
// until the unavailable wait ends; see the file comment for how it tells
// an earlier attempt's success from a failed comparison.
func (s *Store) commit(ctx context.Context, what, k string, cmp clientv3.Cmp, op clientv3.Op, put []byte) (committed, error) {
	bctx, cancel := context.WithTimeout(ctx, s.unavailableWait)
	defer cancel()
	maybeApplied := false
	pause := retryFirstPause
	for {
		actx, cancelAttempt := context.WithTimeout(bctx, attemptTimeout)
		resp, err := s.client.Txn(actx).If(cmp).Then(op).Else(clientv3.OpGet(k)).Commit()
		attemptTimedOut := actx.Err() != nil
		cancelAttempt()
		if err == nil {
			s.observe(resp.Header.Revision)
			out := committed{resp: resp}
			if resp.Succeeded || !maybeApplied {
				return out, nil
			}
			kvs := resp.Responses[0].GetResponseRange().Kvs
			switch {
			case put == nil && len(kvs) == 0:
				out.earlier = true
			case put != nil && len(kvs) == 1 && bytes.Equal(kvs[0].Value, put):
				out.earlier, out.now = true, kvs[0]
			}
			return out, nil
		}
		switch {
		case ctx.Err() != nil:
			return committed{}, ctx.Err()
		case bctx.Err() != nil:
			// The wait ended during this attempt: it may have been sent.
			return committed{}, s.giveUp(what, err, true)
		case attemptTimedOut:
			// Stuck, as a proposal forwarded to a leader that died is
			// until etcd gives up on it: it may have been applied.
			maybeApplied = true
			continue
		case !unavailable(err):
			return committed{}, s.translate(what, err)
		}
		maybeApplied = maybeApplied || !notApplied(err)
		select {
		case <-bctx.Done():
			if ctx.Err() != nil {
				return committed{}, ctx.Err()
			}
			return committed{}, s.giveUp(what, err, maybeApplied)
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMaxPause)
	}
}
