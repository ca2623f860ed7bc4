package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/encryption"
	"github.com/edgeapi/edgeapi/store"
)

// This file is `edgeapi check`, `edgeapi backup` and `edgeapi restore`:
// thin commands over store.Check, store.Backup and store.Restore, and
// the backup endpoint.

// errCheckFailed is check's error when it found broken invariants (it
// has printed them).
var errCheckFailed = errors.New("check found problems")

// parseDataDirFlags parses a data-dir command's flags and rejects
// arguments; required names flags that must be set.
func parseDataDirFlags(fs *flag.FlagSet, args []string, required map[string]*string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	var err error
	if fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for name, v := range required {
		if err == nil && *v == "" {
			err = fmt.Errorf("--%s is required", name)
		}
	}
	if err != nil {
		fmt.Fprintf(fs.Output(), "%v\n", err)
		fs.Usage()
		return usageError{err}
	}
	return nil
}

// runCheck is `edgeapi check`: with the daemon stopped, it reads the
// data dir's database and reports every broken invariant.
func runCheck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory`; the daemon must be stopped")
	encConfig := fs.String("encryption-provider-config", "", "the EncryptionConfiguration `file` the daemon runs with, to check that encrypted values decode")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi check --data-dir DIR [--encryption-provider-config FILE]\n\n"+
			"Check the database with the daemon stopped: SQLite's integrity check, then edgeapi's\n"+
			"invariants (revisions, the change log, the compaction marker, every stored value decodes\n"+
			"and carries its own resourceVersion). Exits 1 and lists the problems if any is found.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseDataDirFlags(fs, args, nil); err != nil {
		return err
	}
	cfg := store.Config{Path: filepath.Join(*dataDir, dbFileName)}
	if *encConfig != "" {
		enc, err := encryption.Load(*encConfig)
		if err != nil {
			return fmt.Errorf("load encryption provider config: %w", err)
		}
		cfg.Transformers = enc.Transformers()
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := store.Check(ctx, cfg)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for _, f := range r.Findings {
		fmt.Println(f)
	}
	if r.Truncated {
		fmt.Println("(more problems left off)")
	}
	fmt.Printf("checked %d objects and %d change-log rows at revision %d (compacted at %d): %d problems\n",
		r.Objects, r.ChangeLogRows, r.Rev, r.CompactedRev, len(r.Findings))
	if !r.OK() {
		return errCheckFailed
	}
	return nil
}

// runBackup is `edgeapi backup`: a consistent copy of the data dir's
// database, made with the daemon running or stopped; or, with
// --unix-socket, fetched from the running daemon's backup endpoint.
func runBackup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory`; the daemon may be running, and then the copy is asked of it with the data dir's kubeconfig")
	direct := fs.Bool("direct", false, "with --data-dir and a running daemon, read the database file beside it instead of asking it: a reader the daemon does not know of, whose snapshot keeps the WAL growing (without bound) until the copy ends")
	socket := fs.String("unix-socket", "", "instead of reading the data dir, ask the running daemon at this Unix socket `path` (its --unix-socket) for the copy; needs a user RBAC lets get "+backupPath+" (root is system:masters)")
	kubeconfigPath := fs.String("kubeconfig", "", "instead of reading the data dir, ask the running daemon for the copy over HTTPS as this kubeconfig `file` says (server, CA, client certificate or token); needs a user RBAC lets get "+backupPath+" (system:masters)")
	contextName := fs.String("context", "", "with --kubeconfig, the kubeconfig's context to use (default its current-context)")
	to := fs.String("to", "", "the backup `file` to write; it must not exist")
	maxRate := fs.Int64("max-rate", defaultBackupMaxRate, "write the copy at most this many `MiB` a second (0: as fast as the disk takes it); slower takes less of the CPU and the disk from the daemon's writes at a time, but holds the copy's snapshot, and the WAL's growth behind it, for longer. A stopped data dir is copied without a bound unless this is given")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi backup [--data-dir DIR [--direct] | --unix-socket PATH | --kubeconfig FILE] [--max-rate MIB] --to FILE\n\n"+
			"Write a consistent copy of the database to FILE. The daemon may be running: with --data-dir\n"+
			"the copy is then asked of it over HTTPS with DIR/kubeconfig (as with --kubeconfig), and the\n"+
			"daemon bounds the WAL's growth while it copies; a stopped data dir is read directly. Writes\n"+
			"go on meanwhile. FILE holds Secrets as they are stored (encrypted only if the daemon\n"+
			"encrypts them): keep it as safe as the data dir.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseDataDirFlags(fs, args, map[string]*string{"to": to}); err != nil {
		return err
	}
	if *socket != "" && *kubeconfigPath != "" {
		err := errors.New("--unix-socket and --kubeconfig exclude each other")
		fmt.Fprintf(fs.Output(), "%v\n", err)
		return usageError{err}
	}
	if *maxRate < 0 {
		err := errors.New("--max-rate must not be negative")
		fmt.Fprintf(fs.Output(), "%v\n", err)
		return usageError{err}
	}
	rate := *maxRate << 20
	fetch := func(target apiTarget, where string) error {
		rev, size, err := fetchBackup(ctx, target, *to, rate)
		if err != nil {
			return err
		}
		fmt.Printf("backed up revision %d (%d bytes) from the daemon at %s to %s\n", rev, size, where, *to)
		return nil
	}
	switch {
	case *socket != "":
		return fetch(socketTarget(*socket), *socket)
	case *kubeconfigPath != "":
		target, err := kubeconfigTarget(*kubeconfigPath, *contextName)
		if err != nil {
			return err
		}
		return fetch(target, target.base)
	}
	if !*direct && daemonRunning(*dataDir) {
		kc := filepath.Join(*dataDir, kubeconfigFileName)
		target, err := kubeconfigTarget(kc, "")
		if err == nil {
			err = fetch(target, target.base)
			var se *backupStatusError
			if err == nil || errors.As(err, &se) {
				return err // the daemon answered
			}
		}
		fmt.Fprintf(os.Stderr, "edgeapi backup: cannot ask the running daemon with %s (%v); reading the database beside it\n", kc, err)
	}
	explicitRate := false
	fs.Visit(func(f *flag.Flag) { explicitRate = explicitRate || f.Name == "max-rate" })
	if !explicitRate && !daemonRunning(*dataDir) {
		rate = 0 // no daemon's writes to leave room for
	}
	rev, err := store.BackupWith(ctx, filepath.Join(*dataDir, dbFileName), *to, store.BackupOptions{MaxRate: rate})
	if err != nil {
		return err
	}
	fmt.Printf("backed up revision %d to %s\n", rev, *to)
	return nil
}

// defaultBackupMaxRate is backup's default --max-rate, in MiB/s: measured
// (store's BenchmarkDB_Backup_writes, a 465 MB store), one writer's
// creates kept 88–97% of their rate during a backup at 64 MiB/s, and
// their p99 within 3 ms of before it; unbounded, 33–64%, and a p99 up to
// 23 ms higher. It lets the WAL grow past its bound (the database's size)
// only under writes that fill it faster than the copy is written.
const defaultBackupMaxRate = 64

// daemonRunning reports whether a daemon holds the data dir's lock.
func daemonRunning(dataDir string) bool {
	if _, err := os.Stat(filepath.Join(dataDir, "edgeapi.lock")); err != nil {
		return false
	}
	unlock, err := lockDataDir(dataDir)
	if err != nil {
		return true
	}
	unlock()
	return false
}

// defaultRevisionBump is restore's default --bump-revision.
const defaultRevisionBump = 1_000_000

// runRestore is `edgeapi restore`: with the daemon stopped, it replaces
// the data dir's database with a backup, above every revision handed out.
func runRestore(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory`; the daemon must be stopped")
	from := fs.String("from", "", "the backup `file` to restore")
	bump := fs.Int64("bump-revision", defaultRevisionBump, "how far above the newest known revision the restored database starts, for revisions handed out after the data dir's database was lost")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi restore --from FILE --data-dir DIR [--encryption-provider-config FILE]\n\n"+
			"Replace the database in DIR with the backup FILE, with the daemon stopped. The restored\n"+
			"database starts above every revision the backup or the replaced database knew (plus\n"+
			"--bump-revision) and is compacted there, so clients' older resourceVersions, watches and\n"+
			"continue tokens get 410 Gone and relist.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	encConfig := fs.String("encryption-provider-config", "", "the EncryptionConfiguration `file`, to check that the backup's encrypted values decode; without it they are restored unchecked")
	if err := parseDataDirFlags(fs, args, map[string]*string{"from": from}); err != nil {
		return err
	}
	var r *store.CheckReport
	var err error
	if *encConfig != "" {
		enc, lerr := encryption.Load(*encConfig)
		if lerr != nil {
			return fmt.Errorf("load encryption provider config: %w", lerr)
		}
		r, err = store.Check(ctx, store.Config{Path: *from, Transformers: enc.Transformers()})
	} else {
		r, err = store.CheckWithoutKeys(ctx, *from)
	}
	if err != nil {
		return fmt.Errorf("restore: check backup: %w", err)
	}
	if !r.OK() {
		for _, f := range r.Findings {
			fmt.Fprintln(os.Stderr, f)
		}
		return fmt.Errorf("restore: backup %s fails its check (%d problems)", *from, len(r.Findings))
	}
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	res, err := store.Restore(ctx, *from, filepath.Join(*dataDir, dbFileName), *bump)
	if err != nil {
		return err
	}
	fmt.Printf("restored %d objects from revision %d (replaced database at %d); revisions continue after %d\n",
		r.Objects, res.BackupRev, res.ReplacedRev, res.Rev)
	if r.Opaque > 0 {
		fmt.Printf("%d encrypted values were restored unchecked (no --encryption-provider-config)\n", r.Opaque)
	}
	return nil
}

// backupPath serves a consistent copy of the running daemon's database,
// for `kubectl get --raw /debug/edgeapi/backup > FILE` (or curl with a
// client certificate). It sits behind the API's authentication and RBAC
// like the stats: only users granted get on this non-resource URL
// (system:masters, cluster-admin) reach it, since the copy holds every
// stored object, Secrets included.
const backupPath = "/debug/edgeapi/backup"

// backupHandler serves backupPath: it streams the copy (store.DB's
// BackupStream, a read transaction beside the writer) page by page from
// the snapshot into the response, with no copy on the daemon's disk. The
// copy's size is known when the snapshot is taken, so the answer carries
// its Content-Length, and its revision in the X-Edgeapi-Revision header.
// A backup given up before it started answers 503 with Retry-After (the
// WAL or the disk at its bound: a state that passes); one given up while
// it is sent (the WAL grew past its bound behind a slow client, say) cuts
// the response short, so the client gets fewer bytes than the
// Content-Length says and an error, never a whole-looking file.
func (d *daemon) backupHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, ok := d.db.(store.BackupStreamer)
		if !ok {
			http.Error(w, "back up: this storage backend has no backup here; back up etcd with `etcdctl snapshot save`", http.StatusNotImplemented)
			return
		}
		var size int64 = -1
		rev, err := b.BackupStream(r.Context(), func(rev, n int64) (io.Writer, error) {
			size = n
			w.Header().Set("Content-Type", "application/vnd.sqlite3")
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			w.Header().Set("X-Edgeapi-Revision", strconv.FormatInt(rev, 10))
			w.WriteHeader(http.StatusOK)
			return w, nil
		})
		switch {
		case err == nil:
			d.log.Info("backup sent", zap.Int64("rev", rev), zap.Int64("bytes", size))
		case size >= 0:
			// The status is sent: cut the response short.
			d.log.Warn("send backup", zap.Error(err))
			panic(http.ErrAbortHandler)
		case errors.Is(err, store.ErrBackupAborted):
			w.Header().Set("Retry-After", "10")
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			d.log.Error("back up", zap.Error(err))
			http.Error(w, fmt.Sprintf("back up: %v", err), http.StatusInternalServerError)
		}
	})
}

// backupScratchDir is the data dir's directory where daemons before the
// streamed backup kept the endpoint's copies while they were sent.
const backupScratchDir = "backups.tmp"

// removeBackupScratch removes the copies such a daemon, killed while
// sending one, left behind. The caller holds the data dir lock.
func removeBackupScratch(dataDir string, log *zap.Logger) {
	if err := os.RemoveAll(filepath.Join(dataDir, backupScratchDir)); err != nil {
		log.Warn("remove leftover backup copies", zap.Error(err))
	}
}
