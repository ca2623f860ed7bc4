package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestWatch_IdleHTTP2StacksShrink: an idle watch over HTTP/2 (client-go's
// transport) keeps a goroutine of the daemon's waiting for as long as it
// runs, since net/http's HTTP/2 server runs each stream's handler on one.
// Once the collector has run, that goroutine's stack is 8 KiB, not the
// 16 KiB the request grew: the frames under the wait take less than a
// quarter of 16 KiB, so the runtime halves it. (They took 8 KiB until the
// request's checks, its watch set-up, its authorization and its log line
// moved to functions of their own, and 10,000 idle watches then held
// 165 MB of stacks.) The stacks are read from the daemon's own
// go_memstats_stack_inuse_bytes, after collections the test asks for
// through --debug-pprof.
func TestWatch_IdleHTTP2StacksShrink(t *testing.T) {
	t.Parallel()
	pprofPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	pprof := fmt.Sprintf("127.0.0.1:%d", pprofPort)
	d := StartDaemon(t, DaemonOptions{Args: []string{"--debug-pprof", pprof}})
	// gc has the daemon collect twice (the stacks shrink during the
	// second's scan at the latest) and returns its stack memory.
	gc := func() float64 {
		t.Helper()
		for range 2 {
			resp, err := http.Get("http://" + pprof + "/debug/pprof/heap?gc=1")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return value(scrape(t, d)["go_memstats_stack_inuse_bytes"], nil)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(d.DataDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := gc()
	const watches = 300
	for i := range watches {
		req, _ := http.NewRequestWithContext(ctx, "GET", cfg.Host+"/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=600", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %d: %s %d, want HTTP/2 200", i, resp.Proto, resp.StatusCode)
		}
		defer resp.Body.Close()
	}
	time.Sleep(200 * time.Millisecond) // the last streams reach their wait
	after := gc()
	perWatch := (after - before) / watches
	t.Logf("goroutine stacks: %.0f KiB before, %.0f KiB with %d idle HTTP/2 watches: %.1f KiB each", before/1024, after/1024, watches, perWatch/1024)
	if perWatch > 12<<10 {
		t.Errorf("an idle HTTP/2 watch holds %.1f KiB of goroutine stack, want 8 KiB (16 KiB: its frames no longer fit a quarter of 16 KiB, and the runtime cannot halve it)", perWatch/1024)
	}
}
