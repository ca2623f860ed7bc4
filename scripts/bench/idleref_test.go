package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the idle-ref-h2 server, as the bench
// binary is (startIdleRefServer runs os.Executable()).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == idleRefSubcommand {
		os.Exit(idleRefServeMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// TestRunWatchIdleRefH2_HoldsStreams opens idle watches on the reference
// server and checks that each is an HTTP/2 stream, all on one connection
// while they fit, and that the result reads the server process's RSS.
func TestRunWatchIdleRefH2_HoldsStreams(t *testing.T) {
	b := &bench{cfg: config{idleWatchers: 20, settle: 100 * time.Millisecond, quiet: true}}
	res, err := runWatchIdleRefH2(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("results = %+v, want one", res)
	}
	r := res[0]
	if r.Workload != "rss-watch-idle-ref-h2-20" || r.Errors != 0 || r.Value <= 0 {
		t.Errorf("result %s: %d errors, %.1f MiB; want rss-watch-idle-ref-h2-20, none, an RSS", r.Workload, r.Errors, r.Value)
	}
	if notes := strings.Join(r.Notes, "; "); !strings.Contains(notes, "holds 20 idle watch streams") || !strings.Contains(notes, "20 watchers connected") {
		t.Errorf("notes %q: want 20 streams held and connected", notes)
	}

	// Each watch is a stream of HTTP/2.
	s, err := startIdleRefServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	tr := s.transport()
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/watch", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, want := resp.Proto, "HTTP/2.0"; got != want || resp.StatusCode != 200 {
		t.Errorf("watch answered %d over %s, want 200 over %s", resp.StatusCode, got, want)
	}
}
