package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseProcNetTCP(t *testing.T) {
	// One IPv4 socket as the kernel prints it: 127.0.0.1:16443 to
	// 127.0.0.1:51206, ESTABLISHED (01), uid 1000.
	ip4 := make([]byte, 4)
	binary.NativeEndian.PutUint32(ip4, binary.BigEndian.Uint32(net.IPv4(127, 0, 0, 1).To4()))
	hex4 := strings.ToUpper(hex.EncodeToString(ip4))
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: " + hex4 + ":403B " + hex4 + ":C806 01 00000000:00000000 00:00000000 00000000  1000        0 5138489 1 0 20 4 30 10 -1\n" +
		"   1: garbage\n"
	got := parseProcNetTCP([]byte(tcp))
	if len(got) != 1 {
		t.Fatalf("got %d entries, want 1: %+v", len(got), got)
	}
	e := got[0]
	if !e.local.IP.Equal(net.IPv4(127, 0, 0, 1)) || e.local.Port != 0x403B || e.remote.Port != 0xC806 || e.state != 1 || e.uid != 1000 {
		t.Errorf("got %+v, want 127.0.0.1:16443 -> 127.0.0.1:51206, state 1, uid 1000", e)
	}
}

func TestTCPPeerUID(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	for _, network := range []struct{ listen, dial string }{
		{"127.0.0.1:0", "127.0.0.1"},
		// A dual-stack client reaching the IPv4 listener through an
		// IPv4-mapped address shows up in /proc/net/tcp6.
		{"[::]:0", "::ffff:127.0.0.1"},
	} {
		t.Run(network.dial, func(t *testing.T) {
			ln, err := net.Listen("tcp", network.listen)
			if err != nil {
				t.Skipf("listen %s: %v", network.listen, err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			c, err := net.Dial("tcp", net.JoinHostPort(network.dial, strconv.Itoa(port)))
			if err != nil {
				t.Skipf("dial: %v", err)
			}
			defer c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := tcpPeerUID(s.(*net.TCPConn))
			if err != nil {
				t.Fatalf("tcpPeerUID: %v", err)
			}
			if want := uint32(os.Geteuid()); got != want {
				t.Errorf("got uid %d, want %d", got, want)
			}
		})
	}
}

// TestProxy_Refuses: a connection whose owner is not the proxy's uid gets
// a 403 Status and never reaches the socket; its own uid's connections
// are forwarded both ways.
func TestProxy_Refuses(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	socket := filepath.Join(t.TempDir(), "s")
	up, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	reached := make(chan struct{}, 10)
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- struct{}{}
		io.WriteString(w, "from the socket")
	}))

	for _, tt := range []struct {
		name       string
		uid        uint32
		wantStatus int
		wantBody   string
	}{
		{"own uid", uint32(os.Geteuid()), http.StatusOK, "from the socket"},
		{"other uid", uint32(os.Geteuid()) + 1, http.StatusForbidden, "not the proxy's uid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			p := &proxy{socket: socket, uid: tt.uid, log: io.Discard}
			done := make(chan error)
			go func() { done <- p.serve(ctx, ln) }()
			defer func() { cancel(); <-done }()

			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Get("http://" + ln.Addr().String() + "/api")
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || !bytes.Contains(body, []byte(tt.wantBody)) {
				t.Errorf("got %d %q, want %d with %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			select {
			case <-reached:
				if tt.wantStatus != http.StatusOK {
					t.Errorf("the refused request reached the socket")
				}
			default:
				if tt.wantStatus == http.StatusOK {
					t.Errorf("the forwarded request did not reach the socket")
				}
			}
		})
	}
}
