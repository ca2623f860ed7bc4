package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// Storage backends (--storage-backend).
const (
	// backendSQLite keeps objects in one SQLite file in the data dir: the
	// default and the embedded choice.
	backendSQLite = "sqlite"
	// backendEtcd3 keeps them in an etcd v3 cluster (kube-apiserver's
	// name); only builds with the etcd tag (edgeapi-ha) have it.
	backendEtcd3 = "etcd3"

	// DefaultStorageBackend is SQLite.
	DefaultStorageBackend = backendSQLite
	// DefaultEtcdPrefix is kube-apiserver's --etcd-prefix.
	DefaultEtcdPrefix = "/registry"
	// etcdReadyTimeout bounds the readiness check's read of etcd
	// (kube-apiserver's --etcd-healthcheck-timeout default).
	etcdReadyTimeout = 2 * time.Second
)

// backend is the store the daemon serves from. Beyond store.Store it
// compacts on an interval and closes; figures, object counts, liveness
// probes and backups come from the optional interfaces in package store
// when the backend has them.
type backend interface {
	store.Store
	// RunCompactor compacts history on interval until ctx ends.
	RunCompactor(ctx context.Context, interval time.Duration)
	Close() error
}

// etcdOptions is what the etcd backend needs of the configuration.
type etcdOptions struct {
	Servers                   []string
	Prefix                    string
	CAFile, CertFile, KeyFile string
	Transformers              func(resource string) store.Transformer
	// TypeMeta names the apiVersion and kind of a storage resource's
	// values, which etcd keeps in them as kube-apiserver does.
	TypeMeta func(resource string) (apiVersion, kind string)
}

// openEtcd opens the etcd backend; nil in builds without it (the file
// storage_etcd.go, built with the etcd tag, sets it).
var openEtcd func(ctx context.Context, o etcdOptions, log *zap.Logger) (backend, error)

// errNoEtcd is the answer of a build without the etcd backend.
var errNoEtcd = errors.New("this edgeapi was built without the etcd backend: install the edgeapi-ha package, or build with `go build -tags etcd ./daemon`")

// validateStorage checks the storage flags.
func (c *serveConfig) validateStorage() error {
	switch c.StorageBackend {
	case backendSQLite:
	case backendEtcd3:
		if openEtcd == nil {
			return fmt.Errorf("invalid storage-backend %q: %w", c.StorageBackend, errNoEtcd)
		}
		if len(c.etcdServers()) == 0 {
			return errors.New("invalid etcd-servers: --storage-backend=etcd3 needs at least one etcd URL")
		}
		if !strings.HasPrefix(c.EtcdPrefix, "/") {
			return fmt.Errorf("invalid etcd-prefix %q: must start with /", c.EtcdPrefix)
		}
		if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
			return errors.New("invalid etcd-certfile and etcd-keyfile: give both or neither")
		}
		if c.EtcdCompactionInterval < 0 {
			return fmt.Errorf("invalid etcd-compaction-interval %v: must not be negative", c.EtcdCompactionInterval)
		}
	default:
		return fmt.Errorf("invalid storage-backend %q: want sqlite or etcd3", c.StorageBackend)
	}
	return nil
}

// etcdServers returns --etcd-servers as a list, empty entries dropped.
func (c *serveConfig) etcdServers() []string {
	var out []string
	for _, s := range strings.Split(c.EtcdServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// compactionInterval is the backend's compaction interval: on etcd
// --etcd-compaction-interval when set, else --compaction-interval.
func (c *serveConfig) compactionInterval() time.Duration {
	if c.StorageBackend == backendEtcd3 && c.EtcdCompactionInterval > 0 {
		return time.Duration(c.EtcdCompactionInterval)
	}
	return time.Duration(c.CompactionInterval)
}

// openBackend opens the configured store.
func (d *daemon) openBackend(ctx context.Context, transformers func(string) store.Transformer, reg func() *registry.Registry) (backend, error) {
	cfg := d.cfg
	if cfg.StorageBackend == backendEtcd3 {
		d.log.Info("storing objects in etcd", zap.Strings("servers", cfg.etcdServers()), zap.String("prefix", cfg.EtcdPrefix))
		return openEtcd(ctx, etcdOptions{
			Servers:      cfg.etcdServers(),
			Prefix:       cfg.EtcdPrefix,
			CAFile:       cfg.EtcdCAFile,
			CertFile:     cfg.EtcdCertFile,
			KeyFile:      cfg.EtcdKeyFile,
			Transformers: transformers,
			TypeMeta:     storageTypeMeta(reg),
		}, d.log.Named("store"))
	}
	db, err := store.Open(ctx, store.Config{
		Path:         filepath.Join(cfg.DataDir, dbFileName),
		Logger:       d.log.Named("store"),
		ReserveBytes: int64(cfg.DiskReserve),
		QuotaBytes:   int64(cfg.QuotaBackendBytes),
		// Zero is the store's default; the flag's 0 means no bound.
		MaxChangeLogRows: cmp.Or(cfg.CompactionMaxRows, -1),
		UnsafeNoSync:     cfg.UnsafeTestingSynchronousOff,
		Transformers:     transformers,
		Observer:         d.metrics.observer,
		ObjectCacheBytes: cfg.budget.ObjectCacheBytes,
		SQLiteCacheBytes: cfg.budget.SQLiteCacheBytes,
		SQLiteMmapBytes:  cfg.budget.SQLiteMmapBytes,
	})
	if err != nil {
		// Not a nil *store.DB in a non-nil backend.
		return nil, err
	}
	return db, nil
}

// storageTypeMeta returns the apiVersion and kind of each storage
// resource's stored values: its storage version, from the current kinds of
// the registry reg returns (custom resources come and go with their CRDs).
func storageTypeMeta(reg func() *registry.Registry) func(resource string) (apiVersion, kind string) {
	return func(resource string) (string, string) {
		r := reg()
		if r == nil {
			return "", ""
		}
		k := r.Snapshot().ByStorage()[resource]
		if k == nil {
			return "", ""
		}
		return k.StorageGVK.GroupVersion().String(), k.StorageGVK.Kind
	}
}

// storeStats returns the backend's figures; a backend without
// store.StatsReporter reports its revisions only.
func (d *daemon) storeStats() store.Stats {
	if d.db == nil {
		return store.Stats{}
	}
	if s, ok := d.db.(store.StatsReporter); ok {
		return s.Stats()
	}
	return store.Stats{Rev: d.db.Rev(), CompactedRev: d.db.CompactedRev()}
}
