package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestTmpThroughput(t *testing.T) {
	db, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "x.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	payload := strings.Repeat("x", 1000)
	var n atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 3*time.Second {
				i := n.Add(1)
				v := fmt.Sprintf(`{"metadata":{"name":"cm-%d","namespace":"default"},"data":{"k":%q}}`, i, payload)
				if _, err := db.Create(context.Background(), Key{"configmaps", "default", fmt.Sprint("cm-", i)}, "u", []byte(v)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := db.Stats()
	el := time.Since(start)
	t.Logf("%d writes in %v = %.0f/s, batches %d avg %.1f max %d", st.BatchedWrites, el, float64(st.BatchedWrites)/el.Seconds(), st.Batches, float64(st.BatchedWrites)/float64(st.Batches), st.MaxBatchSeen)
}
