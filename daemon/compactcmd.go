package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgeapi/edgeapi/store"
)

// This file is `edgeapi compact` and `edgeapi defrag`: offline maintenance
// of a stopped daemon's database, over store.CompactOffline and
// store.Defrag. Both take the data dir lock, so they refuse to run beside
// a daemon (and a daemon refuses to start while they run).

// runCompact is `edgeapi compact`: with the daemon stopped, it compacts
// the change log down to the newest --keep-revisions revisions.
func runCompact(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory`; the daemon must be stopped")
	keep := fs.Int64("keep-revisions", 0, "how many of the newest revisions keep their change-log rows; 0 compacts up to the current revision")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi compact --data-dir DIR [--keep-revisions N]\n\n"+
			"Compact the change log with the daemon stopped, as the daemon's own compaction does:\n"+
			"delete the history of every revision but the newest N and return the freed pages to the\n"+
			"file system. Watches, lists and continue tokens from a compacted revision then get\n"+
			"410 Gone, and clients relist. Run 'edgeapi defrag' afterwards to pack what is left.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseDataDirFlags(fs, args, nil); err != nil {
		return err
	}
	if *keep < 0 {
		err := fmt.Errorf("--keep-revisions %d is negative", *keep)
		fmt.Fprintf(fs.Output(), "%v\n", err)
		return usageError{err}
	}
	path := filepath.Join(*dataDir, dbFileName)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := store.CompactOffline(ctx, store.Config{Path: path}, *keep)
	if err != nil {
		return err
	}
	fmt.Printf("compacted at revision %d (was %d; current %d): %d change-log rows -> %d; %d bytes -> %d\n",
		r.CompactedRev, r.CompactedBefore, r.Rev, r.RowsBefore, r.RowsAfter, r.Before.Total(), r.After.Total())
	return nil
}

// runDefrag is `edgeapi defrag`: with the daemon stopped, it rebuilds the
// database file with VACUUM.
func runDefrag(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("defrag", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory`; the daemon must be stopped")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi defrag --data-dir DIR\n\n"+
			"Rebuild the database with the daemon stopped (SQLite's VACUUM), so that the file holds\n"+
			"only the pages in use, packed, and report its size before and after. It needs about twice\n"+
			"the database's size free; on failure the database is left as it was.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseDataDirFlags(fs, args, nil); err != nil {
		return err
	}
	path := filepath.Join(*dataDir, dbFileName)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("defrag: %w", err)
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := store.Defrag(ctx, path)
	if err != nil {
		return err
	}
	fmt.Printf("defragmented %s: %d bytes -> %d (database %d -> %d, WAL %d -> %d)\n",
		path, r.Before.Total(), r.After.Total(), r.Before.DB, r.After.DB, r.Before.WAL, r.After.WAL)
	return nil
}
