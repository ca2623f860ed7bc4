package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// This file is what `edgeapi migrate` reads and writes a SQLite store
// with: Dump reads every object at one revision, and an Importer loads
// objects into a new database whose revisions start above the revisions
// another store (the source of the move) handed out.

// Dumper is a store that can read every object it holds at one revision:
// the SQLite store (*DB) and store/etcdstore's.
type Dumper interface {
	// Dump calls fn for every object at one revision, and returns that
	// revision. Objects come resource by resource; their values are as
	// Get returns them (stamped with their own resourceVersion, decoded
	// when the store transforms values). fn may keep the Object. An
	// error from fn ends the dump and is returned.
	Dump(ctx context.Context, fn func(Object) error) (rev int64, err error)
}

var _ Dumper = (*DB)(nil)

// dumpPageBytes bounds the values one page of Dump holds in memory.
const dumpPageBytes = 4 << 20

// sqlDumpResources lists the resources that have objects.
const sqlDumpResources = `SELECT DISTINCT resource FROM objects ORDER BY resource`

// Dump implements Dumper in one read transaction: every object of every
// resource as of the transaction's snapshot, whose revision it returns.
// Each resource is read in pages of about dumpPageBytes of values, in
// List's order. A value the configured Transformers cannot read fails
// the dump with a *TransformError.
func (db *DB) Dump(ctx context.Context, fn func(Object) error) (int64, error) {
	var rev int64
	err := db.readTx(ctx, "dump", func(tx *sql.Tx, cur, compacted int64) error {
		rev = cur
		resources, err := dumpResources(ctx, tx)
		if err != nil {
			return err
		}
		for _, resource := range resources {
			opts := ListOptions{Resource: resource, MaxBytes: dumpPageBytes}
			for {
				page, err := db.list(ctx, tx, opts, cur, compacted)
				if err != nil {
					return fmt.Errorf("dump %s: %w", resource, err)
				}
				for _, o := range page.Objects {
					if err := fn(o); err != nil {
						return err
					}
				}
				if !page.More || len(page.Objects) == 0 {
					break
				}
				last := page.Objects[len(page.Objects)-1].Key
				opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
				opts.Objects = page.Objects
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return rev, nil
}

// dumpResources returns the resources that have objects, in order.
func dumpResources(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, sqlDumpResources)
	if err != nil {
		return nil, translate("list resources", err)
	}
	defer rows.Close()
	var resources []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, translate("list resources", err)
		}
		resources = append(resources, r)
	}
	return resources, translate("list resources", rows.Err())
}

// Importer loads objects into a new database. It writes to a temporary
// file beside the database's path, through the store's own writes (group
// commits, without an fsync each), and Finish moves the file into place
// once it is complete and synced: the database appears whole or not at
// all.
//
// Its revisions start above afterRev (NewImporter): every object gets a
// revision above it, and Finish marks every revision up to the last
// object's compacted. So no resourceVersion the source of the objects
// handed out names an object state in the new database: a watch or a
// continue token from before the move gets 410 Gone, an update with an
// old resourceVersion a conflict.
type Importer struct {
	db        *DB
	path, tmp string
	afterRev  int64
	// created counts the objects Create added.
	created atomic.Int64
}

// ImportResult is what an import did.
type ImportResult struct {
	// AfterRev is the revision the objects' revisions start above.
	AfterRev int64
	// Rev is the new database's revision, also its compacted revision.
	Rev int64
	// Objects counts the objects created.
	Objects int64
}

// importSuffix names the temporary file an Importer writes, beside the
// database.
const importSuffix = ".import"

// NewImporter creates a new database for cfg.Path, which must not exist,
// whose first object will get revision afterRev+2: afterRev+1 is the
// move itself, so that even a watch from afterRev, the newest revision
// the source handed out, is compacted once Finish has run. A temporary
// file left by an import that did not finish is removed first; the
// caller must make sure no other process uses it (the daemon's data dir
// lock). cfg.Transformers apply as in a daemon's store; space reserve,
// quota and change-log bound are left off.
func NewImporter(ctx context.Context, cfg Config, afterRev int64) (*Importer, error) {
	if afterRev < 0 {
		return nil, fmt.Errorf("import: negative revision %d", afterRev)
	}
	if _, err := os.Lstat(cfg.Path); err == nil {
		return nil, fmt.Errorf("import: %s already exists", cfg.Path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("import: %w", err)
	}
	im := &Importer{path: cfg.Path, tmp: cfg.Path + importSuffix, afterRev: afterRev}
	if err := removeDBFiles(im.tmp); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	cfg.Path = im.tmp
	cfg.offline = true
	cfg.ReserveBytes = 0
	cfg.QuotaBytes = 0
	cfg.MaxChangeLogRows = -1
	// Nothing is fsynced while loading: the file is not the database
	// until Finish has synced it and moved it into place.
	cfg.UnsafeNoSync = true
	db, err := Open(ctx, cfg)
	if err != nil {
		_ = removeDBFiles(im.tmp)
		return nil, fmt.Errorf("import: %w", err)
	}
	im.db = db
	base := afterRev + 1
	err = db.runOnWriter(ctx, func(ctx context.Context, conn *sql.Conn) error {
		if _, err := db.stmts.setMeta.ExecContext(ctx, metaRev, base); err != nil {
			return translate("write revision", err)
		}
		db.rev.Store(base)
		return nil
	})
	if err != nil {
		im.Abort()
		return nil, fmt.Errorf("import: %w", err)
	}
	return im, nil
}

// Create adds obj (its Key, UID and Value; the value's resourceVersion is
// replaced by its new revision's) as a new object. It is safe for
// concurrent use, and concurrent Creates commit together. ErrExists when
// the key was already created.
func (im *Importer) Create(ctx context.Context, obj Object) error {
	if _, err := im.db.Create(ctx, obj.Key, obj.UID, obj.Value); err != nil {
		return fmt.Errorf("import %s: %w", StoragePath(obj.Key), err)
	}
	im.created.Add(1)
	return nil
}

// Finish compacts the new database at its revision (removing the change
// log of the load), closes it, syncs it and moves it into place at the
// configured path. After a failure the temporary file is removed and
// nothing is at the path.
func (im *Importer) Finish(ctx context.Context) (ImportResult, error) {
	res := ImportResult{AfterRev: im.afterRev, Rev: im.db.Rev(), Objects: im.created.Load()}
	err := im.db.Compact(ctx, res.Rev)
	if cerr := im.db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncFile(im.tmp)
	}
	if err == nil {
		// The WAL and shared memory went with the last connection; an
		// old pair beside the path would be applied to the new file.
		err = removeWALFiles(im.path)
	}
	if err == nil {
		err = os.Rename(im.tmp, im.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(im.path))
	}
	if err != nil {
		_ = removeDBFiles(im.tmp)
		return res, fmt.Errorf("import: finish: %w", err)
	}
	return res, nil
}

// Abort closes the new database and removes it.
func (im *Importer) Abort() {
	_ = im.db.Close()
	_ = removeDBFiles(im.tmp)
}

// removeDBFiles removes the database file at path with its WAL and
// shared-memory files; missing ones are no error.
func removeDBFiles(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return removeWALFiles(path)
}

// removeWALFiles removes the WAL and shared-memory files of the database
// at path; missing ones are no error.
func removeWALFiles(path string) error {
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
