package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the foreign reader of the snapshot window
)

// Defaults of the backup workload.
const (
	// backupWriters is the create-64 load that runs beside each backup.
	backupWriters = 64
	// backupLead is how long the writers run before a backup starts (the
	// window the "before" latencies come from) and backupTail how long
	// they go on after it ended.
	backupLead = 3 * time.Second
	backupTail = time.Second
	// backupPoll is how often the WAL's size is read from the daemon's
	// statistics while the writers run.
	backupPoll = 20 * time.Millisecond
	// backupSnapshotHold is how long the foreign reader of the snapshot
	// window holds its snapshot.
	backupSnapshotHold = 10 * time.Second
	// backupCappedRate is the --max-rate, in MiB/s, of the capped backup.
	backupCappedRate = 32
	// DefaultBackupTimeout bounds the whole workload.
	DefaultBackupTimeout = 30 * time.Minute
)

// runBackup measures backup, restore and check with --backup-objects
// ConfigMaps stored. On a daemon of its own (compaction off, so that only
// the backups move the WAL's bound), it seeds the objects and then, with
// 64 writers creating ConfigMaps back to back (the create-64 load):
//   - runs the load alone: the WAL's largest size under it, and the
//     writes' latency (the "before" baseline);
//   - takes a backup through the daemon (`edgeapi backup --data-dir`
//     with the daemon running: GET /debug/edgeapi/backup,
//     which `edgeapi backup --kubeconfig` and `--unix-socket` use);
//   - takes one beside it (`edgeapi backup --data-dir --direct`: a reader the
//     daemon does not know of).
//
// For each backup it reports its time, its size, the longest write (p100)
// and p99 of the creates that overlapped it against those in the lead
// window before it, and the WAL's largest size during it. Then, with the
// daemon stopped, it times `edgeapi check`, `edgeapi restore` of the
// first backup into a new data dir, and `edgeapi check` of the restored
// one.
func runBackup(ctx context.Context, b *bench) ([]Result, error) {
	if b.d == nil {
		return nil, errors.New("backup starts its own daemon and runs edgeapi backup/check/restore: not with --server")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultBackupTimeout)
	defer cancel()
	n := b.cfg.backupObjects
	label := shortCount(n)
	dir := filepath.Join(b.tmpDir, "backup")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if !b.cfg.keepData {
			_ = os.RemoveAll(dir)
		}
	}()
	dataDir := filepath.Join(dir, "data")
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	d, _, err := startDaemon(ctx, b.cfg.bin, dataDir, addr, b.cfg.readyTimeout,
		"--compaction-interval", "1000h", "--compaction-max-rows", "0")
	if err != nil {
		return nil, err
	}
	defer func() {
		if d != nil {
			_ = d.stop()
		}
	}()
	target := &bench{cfg: b.cfg, c: newClient("http://"+addr, backupWriters+8), base: "http://" + addr,
		runID: b.runID, d: d, pid: d.pid(), tmpDir: b.tmpDir, report: b.report}
	defer target.c.close()

	b.logf("backup: creating %d ConfigMaps of %d bytes (64 clients)", n, b.cfg.payloadBytes)
	start := time.Now()
	rate, err := target.seedConfigMaps(ctx, "bench-backup-seed", "s-", n, 64)
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	b.logf("backup: seeded in %s (%.0f/s)", time.Since(start).Round(time.Millisecond), rate)
	if err := target.c.ensureNamespace(ctx, "bench-backup-load"); err != nil {
		return nil, err
	}
	var out []Result

	// The load alone.
	lw := target.backupWindow(ctx, "load", func(context.Context) (string, int64, error) {
		time.Sleep(5 * time.Second)
		return "", 0, nil
	})
	if lw.err != nil {
		return out, lw.err
	}
	r := Result{Workload: "backup-load-wal", Value: float64(lw.maxWAL) / (1 << 20), Unit: "MiB"}
	r.note("WAL file at most %.1f MiB under the create-64 load alone (%s, %d creates, p99 %s, max %s); %d checkpoints, %d WAL resets, %d put off",
		float64(lw.maxWAL)/(1<<20), lw.took.Round(time.Millisecond), lw.during.n, fmtMS(lw.during.summary().P99MS), fmtMS(lw.during.summary().MaxMS),
		lw.after.Checkpoints-lw.before.Checkpoints, lw.after.WALResets-lw.before.WALResets, lw.after.WALResetsDeferred-lw.before.WALResetsDeferred)
	b.logResult(r)
	out = append(out, r)

	// The two kinds of online backup.
	endpointFile := filepath.Join(dir, "endpoint.backup")
	kinds := []struct {
		name, desc string
		run        func(ctx context.Context) (string, int64, error)
	}{
		{"endpoint", "edgeapi backup --data-dir (the daemon running: through it, GET /debug/edgeapi/backup with the data dir's kubeconfig)", func(ctx context.Context) (string, int64, error) {
			cmd := exec.CommandContext(ctx, b.cfg.bin, "backup", "--data-dir", dataDir, "--to", endpointFile)
			o, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(o), "from the daemon") {
				return "", 0, fmt.Errorf("edgeapi backup: %v: %s", err, o)
			}
			fi, err := os.Stat(endpointFile)
			if err != nil {
				return "", 0, err
			}
			return strings.TrimSpace(string(o)) + "; " + toolCPU(cmd), fi.Size(), nil
		}},
		{"beside", "edgeapi backup --data-dir --direct (a reader in another process)", func(ctx context.Context) (string, int64, error) {
			to := filepath.Join(dir, "beside.backup")
			cmd := exec.CommandContext(ctx, b.cfg.bin, "backup", "--data-dir", dataDir, "--direct", "--to", to)
			o, err := cmd.CombinedOutput()
			if err != nil {
				return "", 0, fmt.Errorf("edgeapi backup: %w: %s", err, o)
			}
			fi, err := os.Stat(to)
			if err != nil {
				return "", 0, err
			}
			return strings.TrimSpace(string(o)) + "; " + toolCPU(cmd), fi.Size(), nil
		}},
	}
	// The first kind again with the copy's rate bounded, where the binary
	// has --max-rate.
	if h, _ := exec.CommandContext(ctx, b.cfg.bin, "backup", "-h").CombinedOutput(); strings.Contains(string(h), "-max-rate") {
		kinds = append(kinds, struct {
			name, desc string
			run        func(ctx context.Context) (string, int64, error)
		}{"endpoint-capped", fmt.Sprintf("edgeapi backup --data-dir --max-rate %d (through the daemon, the copy written at most %d MiB/s)", backupCappedRate, backupCappedRate), func(ctx context.Context) (string, int64, error) {
			to := filepath.Join(dir, "capped.backup")
			cmd := exec.CommandContext(ctx, b.cfg.bin, "backup", "--data-dir", dataDir, "--max-rate", fmt.Sprint(backupCappedRate), "--to", to)
			o, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(o), "from the daemon") {
				return "", 0, fmt.Errorf("edgeapi backup: %v: %s", err, o)
			}
			fi, err := os.Stat(to)
			if err != nil {
				return "", 0, err
			}
			return strings.TrimSpace(string(o)) + "; " + toolCPU(cmd), fi.Size(), nil
		}})
	}
	for _, k := range kinds {
		w := target.backupWindow(ctx, k.name, k.run)
		if w.err != nil {
			return out, fmt.Errorf("backup %s: %w", k.name, w.err)
		}
		r := Result{Workload: "backup-" + k.name + "-" + label, Value: w.took.Seconds(), Unit: "s", Clients: backupWriters,
			Errors: w.failed, ErrSample: w.sample}
		ds, bs := w.during.summary(), w.beforeH.summary()
		r.Latency = &ds
		r.note("%s: took %s, %.1f MiB; %s", k.desc, w.took.Round(time.Millisecond), float64(w.size)/(1<<20), w.out)
		r.note("longest write during it %s (p99 %s, %d creates, %.0f/s); in the %s before: max %s, p99 %s (%d creates, %.0f/s)",
			fmtMS(ds.MaxMS), fmtMS(ds.P99MS), w.during.n, float64(w.during.n)/w.took.Seconds(),
			backupLead, fmtMS(bs.MaxMS), fmtMS(bs.P99MS), w.beforeH.n, float64(w.beforeH.n)/backupLead.Seconds())
		r.note("commit fsyncs during it: %s; in the %s before: %s", w.fsyncDuring, backupLead, w.fsyncBefore)
		r.note("during it: %s; before: %s", w.useDuring, w.useBefore)
		r.note("WAL file at most %.1f MiB during it (%.1f MiB before); over the lead, the backup and the tail: %d checkpoints, %d WAL resets, %d put off",
			float64(w.maxWAL)/(1<<20), float64(w.maxWALBefore)/(1<<20),
			w.after.Checkpoints-w.before.Checkpoints, w.after.WALResets-w.before.WALResets, w.after.WALResetsDeferred-w.before.WALResetsDeferred)
		b.logResult(r)
		out = append(out, r)
	}

	// The worst case the daemon does not control: a reader in another
	// process holding one snapshot for backupSnapshotHold.
	sw := target.backupWindow(ctx, "snapshot", func(ctx context.Context) (string, int64, error) {
		return holdSnapshot(ctx, filepath.Join(dataDir, "edgeapi.db"), backupSnapshotHold)
	})
	if sw.err != nil {
		return out, fmt.Errorf("snapshot: %w", sw.err)
	}
	r = Result{Workload: "backup-snapshot-wal", Value: float64(sw.maxWAL) / (1 << 20), Unit: "MiB"}
	r.note("a foreign reader held one snapshot for %s under the create-64 load (%d creates, %.0f/s, longest %s): WAL file at most %.1f MiB (%.1f MiB before), %.1f MiB/s of snapshot; %d resets put off",
		sw.took.Round(time.Millisecond), sw.during.n, float64(sw.during.n)/sw.took.Seconds(), fmtMS(sw.during.summary().MaxMS),
		float64(sw.maxWAL)/(1<<20), float64(sw.maxWALBefore)/(1<<20), float64(max(sw.maxWAL-sw.maxWALBefore, 0))/(1<<20)/sw.took.Seconds(),
		sw.after.WALResetsDeferred-sw.before.WALResetsDeferred)
	b.logResult(r)
	out = append(out, r)

	// Offline: check, restore, check.
	if err := d.stop(); err != nil {
		return out, fmt.Errorf("stop: %w", err)
	}
	d = nil
	restored := filepath.Join(dir, "restored")
	for _, step := range []struct {
		name string
		args []string
	}{
		{"check-" + label, []string{"check", "--data-dir", dataDir}},
		{"restore-" + label, []string{"restore", "--from", endpointFile, "--data-dir", restored}},
		{"check-restored-" + label, []string{"check", "--data-dir", restored}},
	} {
		t := time.Now()
		o, err := exec.CommandContext(ctx, b.cfg.bin, step.args...).CombinedOutput()
		r := Result{Workload: step.name, Value: time.Since(t).Seconds(), Unit: "s"}
		r.note("edgeapi %s: %s", strings.Join(step.args[:1], " "), lastLine(string(o)))
		if err != nil {
			r.Errors = 1
			r.ErrSample = fmt.Sprintf("%v: %s", err, lastLine(string(o)))
		}
		b.logResult(r)
		out = append(out, r)
	}
	return out, nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// backupWindowResult is what backupWindow measured.
type backupWindowResult struct {
	err error
	// out and size are what the measured action reported.
	out  string
	size int64
	// took is the action's duration.
	took time.Duration
	// during are the latencies of the creates that overlapped the action,
	// beforeH those that ended in the backupLead before it.
	during, beforeH *histogram
	failed          int64
	sample          string
	// maxWAL is the WAL's largest polled size during the action,
	// maxWALBefore during the lead.
	maxWAL, maxWALBefore int64
	before, after        compactionStats
	// fsyncBefore and fsyncDuring are the daemon's commit fsyncs in the
	// lead and during the action; useBefore and useDuring its CPU and
	// disk writes.
	fsyncBefore, fsyncDuring fsyncHist
	useBefore, useDuring     string
}

// backupWindow runs the create-64 load for backupLead, then runs action
// beside it, then lets the load go on for backupTail, polling the WAL's
// size throughout.
func (b *bench) backupWindow(ctx context.Context, name string, action func(ctx context.Context) (string, int64, error)) backupWindowResult {
	var res backupWindowResult
	tmpl := newConfigMapBody("bench-backup-load", b.cfg.payloadBytes)
	url := configMapsURL(b.base, "bench-backup-load")
	stop := make(chan struct{})
	var seq atomic.Int64
	per := make([][]writeSample, backupWriters)
	var wg sync.WaitGroup
	for k := range backupWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := newReqBody()
			var buf []byte
			for ctx.Err() == nil {
				select {
				case <-stop:
					return
				default:
				}
				if !body.acquire() {
					body, buf = newReqBody(), nil
				}
				t0 := time.Now()
				buf = tmpl.appendCreate(buf[:0], "l-"+name+"-", seq.Add(1), 0)
				body.set(buf)
				rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
				_, _, err := b.c.do(rctx, "POST", url, body, nil)
				cancel()
				s := writeSample{start: t0, latency: time.Since(t0)}
				if err != nil {
					s.err = err.Error()
				}
				per[k] = append(per[k], s)
			}
		}()
	}
	// The poller: the WAL's size, split at the action's start.
	var actionStarted atomic.Bool
	pollStop := make(chan struct{})
	var pollWG sync.WaitGroup
	pollWG.Add(1)
	go func() {
		defer pollWG.Done()
		t := time.NewTicker(backupPoll)
		defer t.Stop()
		for {
			select {
			case <-pollStop:
				return
			case <-t.C:
			}
			st, err := b.c.compactionStats(ctx)
			if err != nil {
				continue
			}
			if actionStarted.Load() {
				res.maxWAL = max(res.maxWAL, st.WALBytes)
			} else {
				res.maxWALBefore = max(res.maxWALBefore, st.WALBytes)
			}
		}
	}()

	res.before, _ = b.c.compactionStats(ctx)
	fs0, _ := b.c.fsyncHistogram(ctx)
	u0 := readDaemonUse(b.pid)
	settle(ctx, backupLead)
	fs1, _ := b.c.fsyncHistogram(ctx)
	u1 := readDaemonUse(b.pid)
	actionStarted.Store(true)
	start := time.Now()
	res.out, res.size, res.err = action(ctx)
	end := time.Now()
	fs2, _ := b.c.fsyncHistogram(ctx)
	u2 := readDaemonUse(b.pid)
	res.fsyncBefore, res.fsyncDuring = fs1.sub(fs0), fs2.sub(fs1)
	res.useBefore, res.useDuring = u1.per(u0), u2.per(u1)
	res.took = end.Sub(start)
	settle(ctx, backupTail)
	close(pollStop)
	pollWG.Wait()
	close(stop)
	wg.Wait()
	res.after, _ = b.c.compactionStats(ctx)

	res.during, res.beforeH = newHistogram(), newHistogram()
	for _, p := range per {
		for _, s := range p {
			done := s.start.Add(s.latency)
			switch {
			case s.err != "":
				res.failed++
				if res.sample == "" {
					res.sample = s.err
				}
			case s.start.Before(end) && done.After(start):
				res.during.record(s.latency)
			case done.Before(start) && done.After(start.Add(-backupLead)):
				res.beforeH.record(s.latency)
			}
		}
	}
	return res
}

// toolCPU says how much CPU the finished cmd used.
func toolCPU(cmd *exec.Cmd) string {
	return fmt.Sprintf("the backup command used %.2f s of CPU", (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
}

// holdSnapshot opens the database at path as another process's reader
// would (sqlite3, a replicator), reads in one transaction and keeps it open
// for d: the WAL cannot be reset behind that snapshot.
func holdSnapshot(ctx context.Context, path string, d time.Duration) (string, int64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		return "", 0, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return "", 0, err
	}
	defer tx.Rollback() //nolint:errcheck
	var n int64
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM objects").Scan(&n); err != nil {
		return "", 0, err
	}
	settle(ctx, d)
	return fmt.Sprintf("%d objects in the snapshot", n), 0, nil
}
