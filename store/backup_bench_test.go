package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkDB_Backup_writes measures what a backup inside the daemon
// does to one writer's commits: a store of EDGEAPI_BENCH_OBJECTS
// ConfigMaps of 4 KiB (default 50,000: about 250 MB) is backed up with
// DB.Backup to a file on the same file system while one goroutine creates
// objects back to back (each a commit with its fsync), and the creates'
// p50, p99 and longest, in milliseconds, are reported for the backup and
// for the 2 s before it; the backup is written as fast as the disk takes
// it, and at 128 and 64 MiB/s (BackupOptions.MaxRate). One writer leaves a core of the two free, so the
// figures are the backup's cost on a machine whose CPU the writes do not
// fill (as on a device with a modest write rate), not on a saturated one.
// Run with -benchtime=1x.
func BenchmarkDB_Backup_writes(b *testing.B) {
	n := 50_000
	if v, err := strconv.Atoi(os.Getenv("EDGEAPI_BENCH_OBJECTS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.db")
	seed, err := Open(ctx, Config{Path: path, UnsafeNoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 4<<10)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				k := key("seed", "o"+strconv.Itoa(i))
				if _, err := seed.Create(ctx, k, "u", obj(k.Namespace, k.Name, pad)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := seed.Close(); err != nil {
		b.Fatal(err)
	}
	db := openTest(b, Config{Path: path})
	for _, rate := range []int64{0, 128, 64} {
		b.Run("MiBps="+strconv.FormatInt(rate, 10), func(b *testing.B) { benchBackupWrites(b, db, rate<<20) })
	}
}

// benchBackupWrites is BenchmarkDB_Backup_writes with the backup written
// at most maxRate bytes a second.
func benchBackupWrites(b *testing.B, db *DB, maxRate int64) {
	ctx := context.Background()
	for range b.N {
		run := strconv.FormatInt(time.Now().UnixNano(), 36)
		stop := make(chan struct{})
		type sample struct {
			end time.Time
			d   time.Duration
		}
		done := make(chan []sample)
		go func() {
			var out []sample
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- out
					return
				default:
				}
				k := key("load", run+"-"+strconv.Itoa(i))
				t := time.Now()
				if _, err := db.Create(ctx, k, "u", obj(k.Namespace, k.Name, "1")); err != nil {
					b.Error(err)
					done <- out
					return
				}
				out = append(out, sample{time.Now(), time.Since(t)})
			}
		}()
		lead := 2 * time.Second
		time.Sleep(lead)
		start := time.Now()
		to := filepath.Join(b.TempDir(), "backup.db")
		out, err := CreateBackupFile(to, maxRate)
		if err != nil {
			b.Fatal(err)
		}
		_, err = db.BackupStream(ctx, out.Start)
		if err := out.Finish(err); err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		close(stop)
		samples := <-done
		fi, _ := os.Stat(to)
		var before, during []time.Duration
		for _, s := range samples {
			switch {
			case s.end.Before(start) && s.end.After(start.Add(-lead)):
				before = append(before, s.d)
			case !s.end.Before(start) && s.end.Add(-s.d).Before(end):
				during = append(during, s.d)
			}
		}
		report := func(name string, l []time.Duration, secs float64) {
			if len(l) == 0 {
				return
			}
			slices.Sort(l)
			ms := func(q float64) float64 {
				return float64(l[min(int(q*float64(len(l))), len(l)-1)]) / float64(time.Millisecond)
			}
			b.ReportMetric(ms(0.5), name+"-p50-ms")
			b.ReportMetric(ms(0.99), name+"-p99-ms")
			b.ReportMetric(ms(1), name+"-max-ms")
			b.ReportMetric(float64(len(l))/secs, name+"-creates/s")
		}
		report("before", before, lead.Seconds())
		report("during", during, end.Sub(start).Seconds())
		b.ReportMetric(end.Sub(start).Seconds(), "backup-s")
		b.ReportMetric(float64(fi.Size())/1e6, "backup-MB")
	}
}
