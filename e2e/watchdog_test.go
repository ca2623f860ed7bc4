package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWatchdog_Pings runs the daemon as systemd would with WatchdogSec=
// (NOTIFY_SOCKET and WATCHDOG_USEC) and checks that WATCHDOG=1 keeps
// coming while it is healthy, with writes going on: each ping follows a
// round trip through the store's writer and a GET /livez over the
// daemon's own HTTPS listener (daemon/watchdog.go; its unit test covers
// the pings stopping when a probe fails).
func TestWatchdog_Pings(t *testing.T) {
	dir, err := os.MkdirTemp("", "edgeapi-wd-") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	lines := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(lines)
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line != "" {
					lines <- line
				}
			}
		}
	}()

	// 3s: a probe and a ping every second, each probe bounded by a
	// second. A probe slower than that (a TLS handshake on a loaded
	// machine, or under qemu) skips a ping and is logged below; the test
	// asks only that pings keep coming.
	d := StartDaemon(t, DaemonOptions{Env: []string{"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=3000000"}})
	cs := d.Clientset()
	createNamespace(t, cs, "watchdog")

	const wantPings = 3
	pings := 0
	var other []string
	deadline := time.After(eventually)
	for pings < wantPings {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("notify socket closed after %d pings", pings)
			}
			switch {
			case line == "WATCHDOG=1":
				pings++
				// Writes between pings: the writer answers the
				// probe between batches.
				d.MustKubectl("create", "configmap", "-n", "watchdog", "cm-"+string(rune('a'+pings)))
			case strings.HasPrefix(line, "STATUS=unhealthy"):
				t.Logf("a liveness probe failed once: %q", line)
			default:
				other = append(other, line)
			}
		case <-deadline:
			t.Fatalf("%d WATCHDOG=1 within %v, want %d; other notifications: %q", pings, eventually, wantPings, other)
		}
	}
	if len(other) == 0 || !strings.HasPrefix(other[0], "READY=1") {
		t.Errorf("notifications before the pings = %q, want READY=1 first", other)
	}
}
