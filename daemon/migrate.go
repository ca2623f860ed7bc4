package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/edgeapi/edgeapi/encryption"
	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// This file is `edgeapi migrate`: an offline copy of every object from a
// SQLite data dir into etcd, or back. Every object keeps its uid,
// creationTimestamp and content; revisions start fresh in the target,
// above every revision the source handed out, and everything before the
// target's last revision is compacted, so watches and continue tokens
// from before the move get 410 Gone and clients relist. The etcd side
// (migrate_etcd.go) builds only with the tag etcd; without it the
// command says how to build the binary that has it.

// migrateWorkers is how many creates migrate keeps in flight in the
// target: the SQLite store commits them together, etcd batches them.
const migrateWorkers = 64

// migrateOptions are `edgeapi migrate`'s flags.
type migrateOptions struct {
	from, to   string
	etcdPrefix string
	// etcdCAFile, etcdCertFile and etcdKeyFile are kube-apiserver's
	// --etcd-cafile, --etcd-certfile and --etcd-keyfile.
	etcdCAFile, etcdCertFile, etcdKeyFile string
	// encConfig is the EncryptionConfiguration of the SQLite side.
	encConfig string
	// allowUnmapped copies an etcd source whose prefix holds keys edgeapi
	// cannot read, leaving them out (listed) instead of failing.
	allowUnmapped bool

	// transformers are encConfig's, for either side (set by migrate).
	transformers func(resource string) store.Transformer
	// kinds names the apiVersion and kind of each storage resource, which
	// an etcd target stores its values with (set by migrate, from the
	// source's CRDs and the built-in kinds).
	kinds func() *registry.Registry
}

// migrateLocation is one side of a migration, parsed from sqlite:DIR or
// etcd:URL[,URL...].
type migrateLocation struct {
	// kind is "sqlite" or "etcd".
	kind      string
	dir       string
	endpoints []string
}

func (l migrateLocation) String() string {
	if l.kind == "sqlite" {
		return "sqlite:" + l.dir
	}
	return "etcd:" + strings.Join(l.endpoints, ",")
}

// parseMigrateLocation parses sqlite:DIR or etcd:URL[,URL...].
func parseMigrateLocation(s string) (migrateLocation, error) {
	kind, rest, ok := strings.Cut(s, ":")
	switch {
	case !ok || rest == "":
	case kind == "sqlite":
		return migrateLocation{kind: kind, dir: rest}, nil
	case kind == "etcd":
		var eps []string
		for ep := range strings.SplitSeq(rest, ",") {
			if ep == "" {
				return migrateLocation{}, fmt.Errorf("%q: empty etcd URL", s)
			}
			eps = append(eps, ep)
		}
		return migrateLocation{kind: kind, endpoints: eps}, nil
	}
	return migrateLocation{}, fmt.Errorf("%q is neither sqlite:DIR nor etcd:URL[,URL...]", s)
}

// runMigrate is `edgeapi migrate`.
func runMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var o migrateOptions
	fs.StringVar(&o.from, "from", "", "the store to copy: sqlite:`DIR` (a stopped daemon's data dir) or etcd:URL[,URL...]")
	fs.StringVar(&o.to, "to", "", "the new store: sqlite:DIR (a data dir without a database) or etcd:URL[,URL...] (with no key under --etcd-prefix)")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", "/registry", "the etcd key `prefix` of the objects, as kube-apiserver's --etcd-prefix")
	fs.StringVar(&o.etcdCAFile, "etcd-cafile", "", "the CA `file` that verifies etcd's serving certificate")
	fs.StringVar(&o.etcdCertFile, "etcd-certfile", "", "the client certificate `file` for etcd")
	fs.StringVar(&o.etcdKeyFile, "etcd-keyfile", "", "the client key `file` for etcd")
	fs.StringVar(&o.encConfig, "encryption-provider-config", "", "the EncryptionConfiguration `file` of the SQLite side: to read an encrypted source's values, or to encrypt the target's")
	fs.BoolVar(&o.allowUnmapped, "allow-unmapped", false, "copy an etcd source whose prefix holds keys that are not edgeapi objects, leaving those out (they are listed) instead of failing")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi migrate --from sqlite:DIR --to etcd:URL[,URL...] [flags]\n"+
			"       edgeapi migrate --from etcd:URL[,URL...] --to sqlite:DIR [flags]\n\n"+
			"Copy every object from one store into a new one, with every server on both stopped.\n"+
			"Objects keep their uid, creationTimestamp and content; revisions start afresh in the\n"+
			"target, above every revision the source handed out, and the target is compacted at its\n"+
			"last revision: watches and continue tokens from before the move get 410 Gone, and\n"+
			"clients relist. The target must be empty. Needs the etcd backend (edgeapi-ha, built\n"+
			"with `go build -tags etcd ./daemon`).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseDataDirFlags(fs, args, nil); err != nil {
		return err
	}
	if !migrateEtcdBuilt {
		return errMigrateNoEtcd
	}
	from, to, err := migrateLocations(o.from, o.to)
	if err != nil {
		fmt.Fprintf(fs.Output(), "%v\n", err)
		fs.Usage()
		return usageError{err}
	}
	return migrate(ctx, o, from, to, os.Stdout)
}

// migrateLocations parses --from and --to: one SQLite data dir and one
// etcd, either way round.
func migrateLocations(fromFlag, toFlag string) (from, to migrateLocation, err error) {
	if fromFlag == "" || toFlag == "" {
		return from, to, errors.New("--from and --to are required")
	}
	if from, err = parseMigrateLocation(fromFlag); err != nil {
		return from, to, fmt.Errorf("--from: %w", err)
	}
	if to, err = parseMigrateLocation(toFlag); err != nil {
		return from, to, fmt.Errorf("--to: %w", err)
	}
	if from.kind == to.kind {
		return from, to, fmt.Errorf("--from and --to are both %s: migrate copies between a SQLite data dir and etcd", from.kind)
	}
	return from, to, nil
}

// migrateSource is the store migrate reads.
type migrateSource interface {
	store.Dumper
	// Rev is the source's current revision when opened: no server
	// writes to it meanwhile, so Dump reads at it.
	Rev() int64
	Close() error
}

// migrateTarget is the store migrate loads.
type migrateTarget interface {
	// begin readies the target for objects whose revisions are above
	// afterRev, the newest revision the source handed out.
	begin(ctx context.Context, afterRev int64) error
	// create adds one object; it is called concurrently.
	create(ctx context.Context, obj store.Object) error
	// finish compacts the target at its revision, returned, and makes
	// it whole.
	finish(ctx context.Context) (rev int64, err error)
	// abort undoes what begin and create did; close releases the
	// target either way.
	abort(ctx context.Context)
	close()
	// summary is a line on what the move cost the target beyond the
	// objects, or "".
	summary() string
}

// migrate copies every object from the store at from into the new one at
// to and prints a summary to out.
func migrate(ctx context.Context, o migrateOptions, from, to migrateLocation, out io.Writer) error {
	var transformers func(string) store.Transformer
	if o.encConfig != "" {
		enc, err := encryption.Load(o.encConfig)
		if err != nil {
			return fmt.Errorf("load encryption provider config: %w", err)
		}
		transformers = enc.Transformers()
	}
	o.transformers = transformers
	var kinds *registry.Registry
	o.kinds = func() *registry.Registry { return kinds }
	// The target first: a target that is not empty stops the move
	// before anything is read.
	var target migrateTarget
	var err error
	if to.kind == "sqlite" {
		target, err = openSQLiteMigrateTarget(to.dir, transformers)
	} else {
		target, err = openMigrateEtcdTarget(ctx, o, to)
	}
	if err != nil {
		return err
	}
	defer target.close()
	var source migrateSource
	var unlock func()
	if from.kind == "sqlite" {
		source, unlock, err = openSQLiteMigrateSource(ctx, from.dir, transformers)
		if unlock != nil {
			defer unlock()
		}
	} else {
		source, err = openMigrateEtcdSource(ctx, o, from)
	}
	if err != nil {
		return err
	}
	defer source.Close()
	if s, ok := source.(store.Store); ok {
		if kinds, err = migrateKinds(ctx, s); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}

	start := time.Now()
	srcRev := source.Rev()
	if err := target.begin(ctx, srcRev); err != nil {
		target.abort(ctx)
		return fmt.Errorf("migrate: %w", err)
	}
	counts, dumpRev, unmapped, err := migrateCopy(ctx, source, target)
	if te := (*store.TransformError)(nil); errors.As(err, &te) && from.kind == "sqlite" {
		err = fmt.Errorf("%w (--encryption-provider-config names the keys the source's daemon uses)", err)
	}
	if err == nil && dumpRev != srcRev {
		err = fmt.Errorf("the source changed while it was read (revision %d, then %d): stop every server writing to it and run migrate again", srcRev, dumpRev)
	}
	if err == nil && unmapped != nil && !o.allowUnmapped {
		err = fmt.Errorf("%w (--allow-unmapped leaves them out)", unmapped)
	}
	var targetRev int64
	if err == nil {
		targetRev, err = target.finish(ctx)
	}
	if err != nil {
		target.abort(ctx)
		return fmt.Errorf("migrate: %w", err)
	}
	took := time.Since(start)

	total := 0
	resources := make([]string, 0, len(counts))
	for r, n := range counts {
		resources = append(resources, r)
		total += n
	}
	slices.Sort(resources)
	fmt.Fprintf(out, "migrated %d objects from %s (revision %d) to %s in %v:\n", total, from, srcRev, to, took.Round(time.Millisecond))
	for _, r := range resources {
		fmt.Fprintf(out, "  %-50s %d\n", r, counts[r])
	}
	fmt.Fprintf(out, "target revision %d, compacted there: resourceVersions, watches and continue tokens from before the move get 410 Gone\n", targetRev)
	if s := target.summary(); s != "" {
		fmt.Fprintln(out, s)
	}
	if unmapped != nil {
		fmt.Fprintf(out, "left out: %v\n", unmapped)
	}
	return nil
}

// migrateKinds returns the kinds src holds: the built-in ones and the
// custom resources of its stored CRDs, whose storage versions name the
// apiVersion and kind etcd values are stored with (as kube-apiserver
// reads them). A CRD that does not yield kinds is left out: its
// resources' values are then stored as they are.
func migrateKinds(ctx context.Context, src store.Store) (*registry.Registry, error) {
	reg := registry.Builtin()
	res, err := src.List(ctx, store.ListOptions{Resource: "customresourcedefinitions.apiextensions.k8s.io"})
	if err != nil {
		return nil, fmt.Errorf("list custom resource definitions: %w", err)
	}
	for _, o := range res.Objects {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := json.Unmarshal(o.Value, &crd); err != nil {
			continue
		}
		kinds, err := registry.CustomResourceKinds(&crd)
		if err != nil {
			continue
		}
		for _, k := range kinds {
			reg.Add(k)
		}
	}
	return reg, nil
}

// errMigrateNoEtcd is migrate's error in a binary built without the etcd
// backend.
var errMigrateNoEtcd = errors.New("this edgeapi was built without the etcd backend, which migrate needs: " +
	"use edgeapi-ha, built with `go build -tags etcd ./daemon`")

// migrateCopy dumps source into target, migrateWorkers creates at a time,
// and returns the objects copied per resource and the revision read. An
// error from the source that only reports keys it left out
// (migrateUnmapped) is returned as unmapped, not as err.
func migrateCopy(ctx context.Context, source store.Dumper, target migrateTarget) (counts map[string]int, rev int64, unmapped, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	objs := make(chan store.Object, migrateWorkers)
	var wg sync.WaitGroup
	for range migrateWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range objs {
				if err := target.create(ctx, obj); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	counts = map[string]int{}
	rev, err = source.Dump(ctx, func(obj store.Object) error {
		select {
		case objs <- obj:
			counts[obj.Key.Resource]++
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	close(objs)
	wg.Wait()
	if err != nil && migrateUnmapped(err) {
		unmapped, err = err, nil
	}
	if cause := context.Cause(ctx); err == nil && cause != nil {
		err = cause
	}
	return counts, rev, unmapped, err
}

// sqliteMigrateTarget loads a new database into a data dir.
type sqliteMigrateTarget struct {
	dir          string
	transformers func(string) store.Transformer
	unlock       func()
	im           *store.Importer
}

// openSQLiteMigrateTarget takes dir's lock (creating dir if needed) and checks
// that it holds no database.
func openSQLiteMigrateTarget(dir string, transformers func(string) store.Transformer) (*sqliteMigrateTarget, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	unlock, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, dbFileName)
	if _, err := os.Lstat(path); err == nil {
		unlock()
		return nil, fmt.Errorf("migrate: the target data dir %s already holds a database (%s): migrate only into a new data dir", dir, dbFileName)
	}
	return &sqliteMigrateTarget{dir: dir, transformers: transformers, unlock: unlock}, nil
}

func (t *sqliteMigrateTarget) begin(ctx context.Context, afterRev int64) error {
	im, err := store.NewImporter(ctx, store.Config{
		Path:         filepath.Join(t.dir, dbFileName),
		Logger:       zap.NewNop(),
		Transformers: t.transformers,
	}, afterRev)
	if err != nil {
		return err
	}
	t.im = im
	return nil
}

func (t *sqliteMigrateTarget) create(ctx context.Context, obj store.Object) error {
	return t.im.Create(ctx, obj)
}

func (t *sqliteMigrateTarget) finish(ctx context.Context) (int64, error) {
	res, err := t.im.Finish(ctx)
	t.im = nil
	return res.Rev, err
}

func (t *sqliteMigrateTarget) abort(context.Context) {
	if t.im != nil {
		t.im.Abort()
		t.im = nil
	}
}

func (t *sqliteMigrateTarget) summary() string { return "" }

func (t *sqliteMigrateTarget) close() { t.unlock() }

// openSQLiteMigrateSource takes dir's lock, refusing a data dir a daemon
// serves, and opens its database.
func openSQLiteMigrateSource(ctx context.Context, dir string, transformers func(string) store.Transformer) (migrateSource, func(), error) {
	path := filepath.Join(dir, dbFileName)
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("migrate: open source: %w", err)
	}
	unlock, err := lockDataDir(dir)
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(ctx, store.Config{Path: path, Logger: zap.NewNop(), Transformers: transformers})
	if err != nil {
		unlock()
		return nil, nil, fmt.Errorf("migrate: open source: %w", err)
	}
	return db, unlock, nil
}
