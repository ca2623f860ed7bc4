package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// This file is the offline consistency check (`edgeapi check`): SQLite's
// own integrity check plus the invariants the store keeps between its
// tables. It reads only; the daemon must be stopped (a running daemon's
// writes between the queries would show as findings).

// checkMaxFindings is the most findings Check reports; a database broken
// everywhere would otherwise print one line per row.
const checkMaxFindings = 100

// CheckReport is what Check found.
type CheckReport struct {
	// Rev is the stored current revision (meta), CompactedRev the
	// scheduled compaction revision.
	Rev, CompactedRev int64
	// Objects and ChangeLogRows are how many rows were checked.
	Objects, ChangeLogRows int64
	// Findings are the broken invariants, one sentence each; empty when
	// the database is consistent. At most checkMaxFindings are kept.
	Findings []string
	// Truncated reports that more findings were left off.
	Truncated bool
	// Opaque counts the encrypted values CheckWithoutKeys took as they
	// are, unchecked.
	Opaque int64
}

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Findings) == 0 }

func (r *CheckReport) addf(format string, args ...any) {
	if len(r.Findings) >= checkMaxFindings {
		r.Truncated = true
		return
	}
	r.Findings = append(r.Findings, fmt.Sprintf(format, args...))
}

// Check reads the database at cfg.Path without changing it and reports
// every broken invariant it finds:
//
//   - SQLite's PRAGMA integrity_check finds nothing;
//   - meta's revisions are ordered: finished compaction <= scheduled
//     compaction <= current revision;
//   - no change-log row is at or below the finished compaction revision
//     (rows up to the scheduled one may remain, for Open to finish);
//   - every object's revisions are positive, create <= mod <= current,
//     and no two objects share a mod revision;
//   - every object modified after the scheduled compaction has the
//     change-log row of its revision, for the same key, not a delete;
//   - every change-log revision is at most the current revision, and its
//     previous revision below it;
//   - every stored value decodes (with cfg.Transformers, if set) and is a
//     JSON object whose metadata.resourceVersion is its own revision (an
//     object's mod revision, a change-log row's revision, a previous
//     value's prev_mod_rev).
//
// The error is for a database Check could not read at all; what it read
// and found wrong is in the report.
func Check(ctx context.Context, cfg Config) (*CheckReport, error) {
	return check(ctx, cfg, false)
}

// CheckWithoutKeys is Check for when the encryption keys are not at hand
// (a restore): values stored encrypted (in kube-apiserver's "k8s:enc:"
// form) are taken as they are, unchecked, and counted in the report's
// Opaque; every other check runs. cfg.Transformers is ignored.
func CheckWithoutKeys(ctx context.Context, path string) (*CheckReport, error) {
	return check(ctx, Config{Path: path}, true)
}

// check is Check; opaqueEncrypted skips encrypted values.
func check(ctx context.Context, cfg Config, opaqueEncrypted bool) (*CheckReport, error) {
	d, err := dsn(cfg.Path, "busy_timeout("+strconv.Itoa(busyTimeout)+")", "query_only(1)")
	if err != nil {
		return nil, err
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	defer sdb.Close()
	sdb.SetMaxOpenConns(1)
	conn, err := sdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	defer conn.Close()
	// One read transaction: every query sees the same snapshot.
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("begin check: %w", err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck

	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	if version < checkMinVersion || version > len(migrations) {
		return nil, fmt.Errorf("read schema version: database is at version %d, this binary checks versions %d to %d",
			version, checkMinVersion, len(migrations))
	}

	r := &CheckReport{}
	if err := checkIntegrity(ctx, conn, r); err != nil {
		// A file SQLite cannot even walk: that is the finding, and the
		// other checks could not read it either.
		r.addf("sqlite integrity_check: %v", err)
		return r, nil
	}
	dec := &checker{DB: &DB{cfg: cfg}, checkOpaque: opaqueEncrypted, version: version} // decode needs only cfg.Transformers
	if err := dec.checkRevisions(ctx, conn, r); err != nil {
		return r, err
	}
	if err := dec.checkObjects(ctx, conn, r); err != nil {
		return r, err
	}
	if err := dec.checkChangeLog(ctx, conn, r); err != nil {
		return r, err
	}
	return r, nil
}

// checker runs Check's queries; its DB is only cfg, for decode.
type checker struct {
	*DB
	// checkOpaque takes encrypted values as they are (CheckWithoutKeys).
	checkOpaque bool
	// version is the database's schema version.
	version int
}

// checkMinVersion is the oldest schema version Check reads: a backup or
// a stopped daemon's database from before the namespace migration
// (versions 5 and 6, see keyorder.go) checks as it is, and Open migrates
// it.
const checkMinVersion = 4

// Schema versions from which a table's namespace column holds
// namespace+"/" (migrations 5 and 6).
const (
	slashObjectsVersion   = 5
	slashChangeLogVersion = 6
)

// checkIntegrity runs SQLite's integrity check.
func checkIntegrity(ctx context.Context, conn *sql.Conn, r *CheckReport) error {
	rows, err := conn.QueryContext(ctx, "PRAGMA integrity_check(100)")
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if line != "ok" {
			r.addf("sqlite integrity_check: %s", line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	return nil
}

// checkMeta is meta's three revisions.
type checkMeta struct{ rev, scheduled, finished int64 }

// readCheckMeta reads meta's revisions.
func (db *checker) readCheckMeta(ctx context.Context, conn *sql.Conn) (checkMeta, error) {
	var m checkMeta
	err := conn.QueryRowContext(ctx, `SELECT
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT value FROM meta WHERE key = ?), 0),
	COALESCE((SELECT value FROM meta WHERE key = ?), 0)`, metaRev, metaScheduledCompactRev, metaFinishedCompactRev).
		Scan(&m.rev, &m.scheduled, &m.finished)
	if err != nil {
		return m, fmt.Errorf("read revisions: %w", err)
	}
	return m, nil
}

// checkRevisions checks meta's counters against each other and the
// change log's ends.
func (db *checker) checkRevisions(ctx context.Context, conn *sql.Conn, r *CheckReport) error {
	m, err := db.readCheckMeta(ctx, conn)
	if err != nil {
		return err
	}
	r.Rev, r.CompactedRev = m.rev, m.scheduled
	if m.finished > m.scheduled {
		r.addf("compaction marker: finished compaction revision %d is above the scheduled one %d", m.finished, m.scheduled)
	}
	if m.scheduled > m.rev {
		r.addf("compaction marker: scheduled compaction revision %d is above the current revision %d", m.scheduled, m.rev)
	}
	var below, lowest sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*), MIN(rev) FROM changelog WHERE rev <= ?", m.finished).Scan(&below, &lowest); err != nil {
		return fmt.Errorf("read change log: %w", err)
	}
	if below.Int64 > 0 {
		r.addf("compaction marker: %d change-log rows (from revision %d) are at or below the finished compaction revision %d", below.Int64, lowest.Int64, m.finished)
	}
	var dup sql.NullInt64
	var dupCount int64
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*), MIN(mod_rev) FROM (
	SELECT mod_rev FROM objects GROUP BY mod_rev HAVING COUNT(*) > 1)`).Scan(&dupCount, &dup); err != nil {
		return fmt.Errorf("read objects: %w", err)
	}
	if dupCount > 0 {
		r.addf("revisions: %d revisions are the mod revision of more than one object (the first: %d)", dupCount, dup.Int64)
	}
	return nil
}

// checkObjects checks every object row: its revisions, its change-log
// row and its value.
func (db *checker) checkObjects(ctx context.Context, conn *sql.Conn, r *CheckReport) error {
	m, err := db.readCheckMeta(ctx, conn)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, `SELECT o.resource, o.namespace, o.name, o.create_rev, o.mod_rev, o.value,
	c.rev, c.type, c.resource, c.namespace, c.name
FROM objects o LEFT JOIN changelog c ON c.rev = o.mod_rev`)
	if err != nil {
		return fmt.Errorf("read objects: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k Key
		var createRev, modRev int64
		var value []byte
		var cRev, cType sql.NullInt64
		var cRes, cNS, cName sql.NullString
		if err := rows.Scan(&k.Resource, &k.Namespace, &k.Name, &createRev, &modRev, &value,
			&cRev, &cType, &cRes, &cNS, &cName); err != nil {
			return fmt.Errorf("read objects: %w", err)
		}
		r.Objects++
		storedNS := k.Namespace
		k.Namespace = plainNamespace(storedNS)
		path := StoragePath(k)
		checkStoredNamespace(r, "object "+path, storedNS, db.version >= slashObjectsVersion)
		if createRev <= 0 || createRev > modRev {
			r.addf("object %s: create revision %d is not in 1..mod revision %d", path, createRev, modRev)
		}
		if modRev > m.rev {
			r.addf("object %s: mod revision %d is above the current revision %d", path, modRev, m.rev)
		}
		switch {
		case !cRev.Valid:
			if modRev > m.scheduled {
				r.addf("object %s: no change-log row for its revision %d, which is above the compaction revision %d", path, modRev, m.scheduled)
			}
		case cRes.String != k.Resource || plainNamespace(cNS.String) != k.Namespace || cName.String != k.Name:
			r.addf("object %s: the change-log row of its revision %d is for another object, %s", path, modRev,
				StoragePath(Key{Resource: cRes.String, Namespace: plainNamespace(cNS.String), Name: cName.String}))
		case EventType(cType.Int64) == Deleted:
			r.addf("object %s: the change-log row of its revision %d is a delete", path, modRev)
		}
		db.checkStoredValue(r, "object "+path, k, value, modRev)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read objects: %w", err)
	}
	return nil
}

// checkChangeLog checks every change-log row's revisions and values.
func (db *checker) checkChangeLog(ctx context.Context, conn *sql.Conn, r *CheckReport) error {
	m, err := db.readCheckMeta(ctx, conn)
	if err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx, `SELECT rev, type, resource, namespace, name, create_rev, prev_mod_rev, value, prev_value
FROM changelog ORDER BY rev`)
	if err != nil {
		return fmt.Errorf("read change log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k Key
		var rev, typ, createRev, prevModRev int64
		var value, prev []byte
		if err := rows.Scan(&rev, &typ, &k.Resource, &k.Namespace, &k.Name, &createRev, &prevModRev, &value, &prev); err != nil {
			return fmt.Errorf("read change log: %w", err)
		}
		r.ChangeLogRows++
		storedNS := k.Namespace
		k.Namespace = plainNamespace(storedNS)
		what := fmt.Sprintf("change-log row %d (%s %s)", rev, EventType(typ), StoragePath(k))
		checkStoredNamespace(r, what, storedNS, db.version >= slashChangeLogVersion)
		if rev <= 0 || rev > m.rev {
			r.addf("%s: revision is not in 1..current revision %d", what, m.rev)
		}
		if typ < int64(Added) || typ > int64(Deleted) {
			r.addf("%s: unknown event type %d", what, typ)
		}
		if prevModRev >= rev || createRev > rev {
			r.addf("%s: previous revision %d or create revision %d is not below it", what, prevModRev, createRev)
		}
		db.checkStoredValue(r, what, k, value, rev)
		if prev != nil {
			db.checkStoredValue(r, what+" previous value", k, prev, prevModRev)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read change log: %w", err)
	}
	return nil
}

// checkStoredNamespace reports a stored namespace column that is not ""
// (cluster scope) or, when slash, a namespace followed by a '/' (see
// keyorder.go), or when not, a namespace without one (the schema before
// version 5): such a row would sort out of key order and be found by no
// Get.
func checkStoredNamespace(r *CheckReport, what, stored string, slash bool) {
	switch {
	case stored == "":
	case slash && (!strings.HasSuffix(stored, "/") || stored == "/"):
		r.addf("%s: stored namespace %q is not a namespace followed by /", what, stored)
	case !slash && strings.HasSuffix(stored, "/"):
		r.addf("%s: stored namespace %q ends in / before schema version %d", what, stored, slashObjectsVersion)
	}
}

// checkStoredValue reports a stored value that does not decode, or whose
// resourceVersion is not rev.
func (db *checker) checkStoredValue(r *CheckReport, what string, k Key, stored []byte, rev int64) {
	if db.checkOpaque && bytes.HasPrefix(stored, encryptedPrefix) {
		r.Opaque++
		return
	}
	value, _, err := db.decode(k, stored)
	if err != nil {
		r.addf("%s: value does not decode: %v", what, err)
		return
	}
	loc, err := locateRevision(value)
	if err != nil {
		r.addf("%s: value is not a JSON object with metadata: %v", what, err)
		return
	}
	if loc.insert {
		r.addf("%s: value has no resourceVersion, want %d", what, rev)
		return
	}
	got := strings.Trim(string(value[loc.start:loc.end]), `"`)
	if got != strconv.FormatInt(rev, 10) {
		r.addf("%s: value's resourceVersion is %s, want %d", what, got, rev)
	}
}
