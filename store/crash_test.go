package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// crashChildEnv names the database a re-executed test binary writes to
// until it is killed; see TestDB_CrashDurability. crashCheckpointEnv, if
// set, holds the child's checkpointPages and walRestartPages as "N,M".
const (
	crashChildEnv      = "EDGEAPI_STORE_CRASH_CHILD"
	crashCheckpointEnv = "EDGEAPI_STORE_CRASH_CHECKPOINT"
)

// TestDB_CrashDurability kills a writing process with SIGKILL and checks
// that every write it acknowledged is in the reopened database, at the
// revision it was acknowledged with, and that the change log has no gap;
// once with the default checkpoint thresholds, once with thresholds so
// low that the checkpointer checkpoints and resets the WAL all along.
func TestDB_CrashDurability(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		if v := os.Getenv(crashCheckpointEnv); v != "" {
			if _, err := fmt.Sscanf(v, "%d,%d", &checkpointPages, &walRestartPages); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	tests := []struct {
		name       string
		checkpoint string
	}{
		{name: "default checkpoints"},
		{name: "frequent checkpoints and WAL resets", checkpoint: "8,32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testCrashDurability(t, tt.checkpoint)
		})
	}
}

// testCrashDurability runs one crash of TestDB_CrashDurability; checkpoint
// goes to the child in crashCheckpointEnv.
func testCrashDurability(t *testing.T, checkpoint string) {
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDB_CrashDurability$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashCheckpointEnv+"="+checkpoint)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]int64{}
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		name, revText, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		rev, err := strconv.ParseInt(revText, 10, 64)
		if err != nil {
			t.Fatalf("child printed %q", sc.Text())
		}
		acked[name] = rev
		if len(acked) == 2000 && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("child exited after %d acknowledged writes, before it was killed", len(acked))
	}

	var walBytes int64
	if fi, err := os.Stat(path + "-wal"); err == nil {
		walBytes = fi.Size()
	}
	db := openTestPath(t, path)
	defer db.Close()
	ctx := context.Background()
	for name, rev := range acked {
		o, err := db.Get(ctx, key("crash", name))
		if err != nil {
			t.Fatalf("acknowledged write %s (rev %d) lost: %v", name, rev, err)
		}
		if o.ModRev != rev {
			t.Errorf("%s: ModRev = %d, acknowledged at %d", name, o.ModRev, rev)
		}
	}
	events, err := db.Changes(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range events {
		if ev.Rev() != int64(i+1) {
			t.Fatalf("change log: row %d has revision %d, want %d", i, ev.Rev(), i+1)
		}
	}
	if got := db.Rev(); got != int64(len(events)) || got < int64(len(acked)) {
		t.Errorf("Rev() = %d with %d change-log rows and %d acknowledged writes", got, len(events), len(acked))
	}
	t.Logf("%d writes acknowledged before SIGKILL, %d committed; WAL %d bytes", len(acked), len(events), walBytes)
}

// crashChild writes until killed, printing "name rev" for each
// acknowledged write.
func crashChild(path string) {
	db, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				o, err := db.Create(context.Background(), key("crash", name), "u", obj("crash", name, ""))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Printf("%s %d\n", name, o.ModRev)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
