package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// ackedCreate is a create the store acknowledged, and its revision.
type ackedCreate struct {
	k   Key
	rev int64
}

// createUntil creates objects in namespace ns, one after another, until
// stop is closed, and returns the acknowledged creates on done; n counts
// them as they come, if not nil.
func createUntil(t *testing.T, db *DB, ns, pad string, stop <-chan struct{}, n *atomic.Int64) (done <-chan []ackedCreate) {
	out := make(chan []ackedCreate, 1)
	go func() {
		var acked []ackedCreate
		defer func() { out <- acked }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := key(ns, "o"+itoa(i%17000)+"-"+itoa(i/17000))
			o, err := db.Create(context.Background(), k, "u", obj(k.Namespace, k.Name, pad))
			if err != nil {
				t.Errorf("Create() during backup: %v", err)
				return
			}
			acked = append(acked, ackedCreate{k, o.ModRev})
			if n != nil {
				n.Add(1)
			}
		}
	}()
	return out
}

// TestDB_BackupStream backs up a database while a writer commits and
// checks that the copy is the size announced, in WAL mode like the
// source, checks clean, and holds exactly the objects acknowledged at or
// before its revision.
func TestDB_BackupStream(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Config{})
	pad := strings.Repeat("x", 1<<10)
	for i := range 500 {
		mustCreate(t, db, key("before", "o"+itoa(i)), pad)
	}
	stop := make(chan struct{})
	var n atomic.Int64
	done := createUntil(t, db, "during", pad, stop, &n)
	waitCount := func(want int64) {
		for n.Load() < want {
			time.Sleep(time.Millisecond)
		}
	}
	waitCount(100)
	var buf bytes.Buffer
	var announced int64 = -1
	rev, err := db.BackupStream(ctx, func(rev, size int64) (io.Writer, error) {
		announced = size
		return &buf, nil
	})
	waitCount(n.Load() + 100)
	close(stop)
	acked := <-done
	if err != nil {
		t.Fatalf("BackupStream() error = %v", err)
	}
	if int64(buf.Len()) != announced {
		t.Errorf("BackupStream() wrote %d bytes, announced %d", buf.Len(), announced)
	}
	to := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(to, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Check(ctx, Config{Path: to})
	if err != nil || !r.OK() || r.Rev != rev {
		t.Fatalf("Check(backup) = %+v, %v; want no findings at revision %d", r, err, rev)
	}
	var mode string
	if err := querySQLite(to, "PRAGMA journal_mode", &mode); err != nil || mode != "wal" {
		t.Errorf("backup's journal_mode = %q (%v), want wal", mode, err)
	}

	b := openTestPath(t, to)
	var in, out int64
	for _, a := range acked {
		_, err := b.Get(ctx, a.k)
		switch {
		case a.rev <= rev && err != nil:
			t.Errorf("Get(%v, acknowledged at %d <= the backup's %d) error = %v, want the object", a.k, a.rev, rev, err)
		case a.rev > rev && !errors.Is(err, ErrNotFound):
			t.Errorf("Get(%v, acknowledged at %d > the backup's %d) error = %v, want ErrNotFound", a.k, a.rev, rev, err)
		case a.rev <= rev:
			in++
		default:
			out++
		}
	}
	if r.Objects != 500+in {
		t.Errorf("backup holds %d objects, want the 500 before and the %d acknowledged by its revision", r.Objects, in)
	}
	if in < 100 || out < 100 {
		t.Errorf("%d creates acknowledged by the backup's revision and %d after it, want at least 100 each", in, out)
	}
}

// querySQLite runs query on the database at path and scans its one value
// into dst.
func querySQLite(path, query string, dst any) error {
	d, err := dsn(path)
	if err != nil {
		return err
	}
	sdb, err := sql.Open("sqlite", d)
	if err != nil {
		return err
	}
	defer sdb.Close()
	return sdb.QueryRow(query).Scan(dst)
}

// slowWriter is a backup's reader that stalls: it waits until the WAL
// of the database at path has grown past min bytes before it takes its
// first chunk, and then takes each chunk slowly.
type slowWriter struct {
	path  string
	min   int64
	n     int64
	grown bool
}

func (w *slowWriter) Write(p []byte) (int, error) {
	for !w.grown {
		if fileSizes(w.path).WAL > w.min {
			w.grown = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	w.n += int64(len(p))
	return len(p), nil
}

// TestDB_BackupStream_abortMidStream checks that a backup whose reader is
// slow gives up once the WAL grows past its bound behind its snapshot,
// after it started sending: the reader gets less than the size announced
// and the error is ErrBackupAborted; the store goes on, and the next
// backup succeeds.
func TestDB_BackupStream_abortMidStream(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Config{})
	pad := strings.Repeat("x", 4<<10)
	for i := range 400 {
		mustCreate(t, db, key("ns", "o"+itoa(i)), pad)
	}
	if err := db.truncateWAL(ctx); err != nil {
		t.Fatal(err)
	}
	oldMin, oldPoll := minBackupWALLimit, backupPoll
	t.Cleanup(func() { minBackupWALLimit, backupPoll = oldMin, oldPoll })
	minBackupWALLimit, backupPoll = 0, time.Millisecond

	stop := make(chan struct{})
	done := createUntil(t, db, "grow", pad, stop, nil)
	w := &slowWriter{path: db.cfg.Path, min: 1 << 20}
	var announced int64 = -1
	_, err := db.BackupStream(ctx, func(_, size int64) (io.Writer, error) {
		announced = size
		return w, nil
	})
	close(stop)
	<-done
	if !errors.Is(err, ErrBackupAborted) || !strings.Contains(err.Error(), "the WAL grew to") {
		t.Fatalf("BackupStream() with the WAL growing past its bound behind a slow reader: error %v, want ErrBackupAborted naming the WAL", err)
	}
	if announced < 0 || w.n >= announced {
		t.Errorf("aborted BackupStream() sent %d of %d bytes, want it started and cut short", w.n, announced)
	}
	mustCreate(t, db, key("ns", "after"), "1")

	minBackupWALLimit = oldMin
	to := filepath.Join(t.TempDir(), "b.db")
	if _, err := db.Backup(ctx, to); err != nil {
		t.Fatalf("Backup() within the bound: %v", err)
	}
	if r, err := Check(ctx, Config{Path: to}); err != nil || !r.OK() {
		t.Errorf("Check(backup) = %+v, %v", r, err)
	}
}
