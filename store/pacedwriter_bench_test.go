package store

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkPacedWriter_commitFsync measures what writing a backup-sized
// file does to the fsyncs of a commit-like writer on the same file
// system: one goroutine appends 4 KiB to a file and fsyncs it, back to
// back (a WAL commit with synchronous=FULL), while the copy is written
// (EDGEAPI_BENCH_COPY_MIB, default 256 MiB) unpaced with one fsync at the
// end, through PacedWriter, or through PacedWriter at a bounded rate; and
// alone, for as long as the unpaced copy took. It reports the fsyncs'
// p50, p99 and longest, in milliseconds, and the copy's MB/s. Run with
// -benchtime=1x; the figures are the disk's, barely the CPU's.
func BenchmarkPacedWriter_commitFsync(b *testing.B) {
	size := int64(256) << 20
	if v, err := strconv.Atoi(os.Getenv("EDGEAPI_BENCH_COPY_MIB")); err == nil && v > 0 {
		size = int64(v) << 20
	}
	chunk := make([]byte, backupChunk)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	var aloneFor time.Duration
	for _, c := range []struct {
		name   string
		window int64
		rate   int64
	}{
		{"unpaced", 0, 0},
		{"alone", 0, 0},
		{"paced-1MiB", 1 << 20, 0},
		{"paced-256KiB", 256 << 10, 0},
		{"paced-1MiB-64MiBps", 1 << 20, 64 << 20},
		{"paced-1MiB-32MiBps", 1 << 20, 32 << 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				stop := make(chan struct{})
				lat := make(chan []time.Duration)
				go func() { lat <- commitFsyncs(b, filepath.Join(dir, "wal"), stop) }()
				start := time.Now()
				switch c.name {
				case "alone":
					time.Sleep(max(aloneFor, time.Second))
				default:
					f, err := os.Create(filepath.Join(dir, "copy"))
					if err != nil {
						b.Fatal(err)
					}
					var w interface {
						Write([]byte) (int, error)
					} = f
					var pw *PacedWriter
					if c.window > 0 {
						pw = NewPacedWriter(f, c.rate)
						pw.window = c.window
						w = pw
					}
					for n := int64(0); n < size; n += int64(len(chunk)) {
						if _, err := w.Write(chunk); err != nil {
							b.Fatal(err)
						}
					}
					if pw != nil {
						err = pw.Sync()
					} else {
						err = f.Sync()
					}
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
				}
				took := time.Since(start)
				if c.name == "unpaced" {
					aloneFor = took
				}
				close(stop)
				l := <-lat
				slices.Sort(l)
				ms := func(q float64) float64 {
					return float64(l[min(int(q*float64(len(l))), len(l)-1)]) / float64(time.Millisecond)
				}
				b.ReportMetric(ms(0.5), "p50-ms")
				b.ReportMetric(ms(0.99), "p99-ms")
				b.ReportMetric(ms(1), "max-ms")
				b.ReportMetric(float64(len(l))/took.Seconds(), "fsyncs/s")
				if c.name != "alone" {
					b.ReportMetric(float64(size)/1e6/took.Seconds(), "copy-MB/s")
				}
			}
		})
	}
}

// commitFsyncs appends 4 KiB to the file at path and fsyncs it, over and
// over, until stop is closed, and returns each fsync's duration.
func commitFsyncs(b *testing.B, path string, stop <-chan struct{}) []time.Duration {
	f, err := os.Create(path)
	if err != nil {
		b.Error(err)
		return nil
	}
	defer f.Close()
	page := make([]byte, 4096)
	var out []time.Duration
	for {
		select {
		case <-stop:
			return out
		default:
		}
		if _, err := f.Write(page); err != nil {
			b.Error(err)
			return out
		}
		t := time.Now()
		if err := f.Sync(); err != nil {
			b.Error(err)
			return out
		}
		out = append(out, time.Since(t))
	}
}
