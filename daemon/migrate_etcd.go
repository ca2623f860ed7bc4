//go:build etcd

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/edgeapi/edgeapi/store"
	"github.com/edgeapi/edgeapi/store/etcdstore"
)

// This file is the etcd side of `edgeapi migrate` (migrate.go), built
// only with the tag etcd.

// migrateEtcdBuilt reports whether this binary has the etcd backend.
const migrateEtcdBuilt = true

// openMigrateEtcd opens a store on the etcd at loc with o's prefix and
// TLS flags.
func openMigrateEtcd(ctx context.Context, o migrateOptions, loc migrateLocation) (*etcdstore.Store, error) {
	var tlsCfg *tls.Config
	if o.etcdCAFile != "" || o.etcdCertFile != "" || o.etcdKeyFile != "" {
		var err error
		if tlsCfg, err = etcdstore.ClientTLS(o.etcdCAFile, o.etcdCertFile, o.etcdKeyFile); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	// The etcd client logs each retry of a failed request (etcdstore.New
	// probes for the compacted revision with reads below it) as a JSON
	// warning on stderr, and etcdstore.Config takes no logger: at
	// level error (the client's own knob, unless the user set it) the
	// summary is all migrate prints.
	if os.Getenv("ETCD_CLIENT_DEBUG") == "" {
		os.Setenv("ETCD_CLIENT_DEBUG", "error")
	}
	// The client dials in the background and retries its reads until
	// ctx ends, so an etcd that does not answer would hang migrate: ctx
	// is cancelled if New has not returned within migrateConnectTimeout.
	// It is also the client's own context, so it is not cancelled once
	// New has returned.
	nctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(migrateConnectTimeout, cancel)
	cfg := etcdstore.Config{Endpoints: loc.endpoints, Prefix: o.etcdPrefix, TLS: tlsCfg, Transformers: o.transformers}
	if o.kinds != nil {
		cfg.TypeMeta = storageTypeMeta(o.kinds)
	}
	s, err := etcdstore.New(nctx, cfg)
	if !timer.Stop() {
		if err == nil {
			s.Close()
		}
		return nil, fmt.Errorf("migrate: connect to %s: no answer within %v", loc, migrateConnectTimeout)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return s, nil
}

// migrateConnectTimeout bounds how long migrate waits for an etcd to
// answer. A var so tests can shorten it.
var migrateConnectTimeout = 30 * time.Second

func openMigrateEtcdSource(ctx context.Context, o migrateOptions, loc migrateLocation) (migrateSource, error) {
	return openMigrateEtcd(ctx, o, loc)
}

// migrateUnmapped reports an error that only lists keys the etcd source
// left out.
func migrateUnmapped(err error) bool {
	var u *etcdstore.UnmappedError
	return errors.As(err, &u)
}

// etcdMigrateTarget loads an etcd whose prefix holds no key.
type etcdMigrateTarget struct {
	s      *etcdstore.Store
	prefix string
	// loaded is set once begin has written to etcd, for abort.
	loaded bool
	// advanced counts the revisions begin wrote to raise etcd's, in
	// advanceTook.
	advanced    int64
	advanceTook time.Duration
}

// openMigrateEtcdTarget opens the etcd at loc and checks that no key is
// under the prefix.
func openMigrateEtcdTarget(ctx context.Context, o migrateOptions, loc migrateLocation) (migrateTarget, error) {
	s, err := openMigrateEtcd(ctx, o, loc)
	if err != nil {
		return nil, err
	}
	prefix := strings.TrimRight(o.etcdPrefix, "/")
	empty, _, err := s.Empty(ctx)
	if err == nil && !empty {
		err = fmt.Errorf("the target etcd %s already holds keys under %s/: migrate only into an empty prefix", loc, prefix)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &etcdMigrateTarget{s: s, prefix: prefix}, nil
}

// begin raises etcd's revision past afterRev (one more for the move
// itself, as the SQLite target's), so that every object gets a revision
// above every one the source handed out.
func (t *etcdMigrateTarget) begin(ctx context.Context, afterRev int64) error {
	t.loaded = true
	start := time.Now()
	n, err := t.s.Advance(ctx, afterRev+1, etcdstore.DefaultAdvanceWorkers)
	t.advanced, t.advanceTook = n, time.Since(start)
	return err
}

func (t *etcdMigrateTarget) create(ctx context.Context, obj store.Object) error {
	if _, err := t.s.Create(ctx, obj.Key, obj.UID, obj.Value); err != nil {
		return fmt.Errorf("create %s: %w", store.StoragePath(obj.Key), err)
	}
	return nil
}

// finish compacts etcd at its revision: every revision below it, the
// source's included, is gone.
func (t *etcdMigrateTarget) finish(ctx context.Context) (int64, error) {
	rev := t.s.Rev()
	if err := t.s.Compact(ctx, rev); err != nil {
		return 0, fmt.Errorf("compact etcd at %d: %w", rev, err)
	}
	return rev, nil
}

// abort deletes what was loaded: every key under the prefix, which held
// none before.
func (t *etcdMigrateTarget) abort(ctx context.Context) {
	if !t.loaded {
		return
	}
	if err := t.s.DeleteAll(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(os.Stderr, "edgeapi migrate: could not delete what was loaded under %s/ (%v): delete it (etcdctl del --prefix %s/) before trying again\n", t.prefix, err, t.prefix)
	}
}

func (t *etcdMigrateTarget) summary() string {
	if t.advanced == 0 {
		return ""
	}
	return fmt.Sprintf("raised etcd's revision with %d writes in %v (%.0f revisions/s)",
		t.advanced, t.advanceTook.Round(time.Millisecond), float64(t.advanced)/t.advanceTook.Seconds())
}

func (t *etcdMigrateTarget) close() { t.s.Close() }
