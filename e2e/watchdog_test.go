package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testWatchdogUSec is the WATCHDOG_USEC the watchdog tests give the
// daemon: 3s, so a probe and a ping every second, each probe bounded by a
// second. A probe slower than that (a TLS handshake on a loaded machine,
// or under qemu) skips a ping, which the tests log and allow.
const testWatchdogUSec = "3000000"

// listenNotify stands in for systemd's notification socket: it returns
// the socket's path, for NOTIFY_SOCKET, and the lines of each datagram
// sent to it, in order. The channel is closed when the test ends.
func listenNotify(t *testing.T) (string, <-chan string) {
	t.Helper()
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
		defer close(lines)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line != "" {
					lines <- line
				}
			}
		}
	}()
	return path, lines
}

// TestWatchdog_Pings runs the daemon as systemd would with WatchdogSec=
// (NOTIFY_SOCKET and WATCHDOG_USEC) and checks that WATCHDOG=1 keeps
// coming while it is healthy, with writes going on: each ping follows a
// round trip through the store's writer and a GET /livez over the
// daemon's own HTTPS listener (daemon/watchdog.go; its unit test covers
// the pings stopping when a probe fails, and
// TestWatchdog_StuckWriterStopsPings a writer stuck for real).
func TestWatchdog_Pings(t *testing.T) {
	path, lines := listenNotify(t)
	d := StartDaemon(t, DaemonOptions{Env: []string{"NOTIFY_SOCKET=" + path, "WATCHDOG_USEC=" + testWatchdogUSec}})
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
