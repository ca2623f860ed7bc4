package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of `edgeapi proxy`.
const (
	// DefaultUnixSocket is the packaged unit's --unix-socket.
	DefaultUnixSocket = "/run/edgeapi/edgeapi.sock"
	// DefaultProxyAddress and DefaultProxyPort are where the proxy
	// listens, as for `kubectl proxy`.
	DefaultProxyAddress = "127.0.0.1"
	DefaultProxyPort    = 8001
)

// procNetTCP are the kernel's tables of TCP sockets, with their owners'
// uids. A var so that tests can read others.
var procNetTCP = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// runProxy runs `edgeapi proxy`: it forwards TCP connections on a
// loopback port to the daemon's Unix socket, for clients that cannot dial
// a Unix socket (kubectl). It forwards only the connections of processes
// running as its own uid, so the daemon authenticates each of them as
// that user, as it would authenticate the client on the socket itself;
// every other connection gets a 403 and is closed. A plain TCP forwarder
// would lend its user's identity to every local user.
func runProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("edgeapi proxy", flag.ContinueOnError)
	socket := fs.String("unix-socket", DefaultUnixSocket, "the daemon's Unix socket `path` (its --unix-socket)")
	address := fs.String("address", DefaultProxyAddress, "loopback `address` to listen on")
	port := fs.Int("port", DefaultProxyPort, "`port` to listen on (0 picks a free one)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi proxy [flags]\n\n"+
			"Forward a loopback TCP port to edgeapi's Unix socket for clients that cannot dial one:\n"+
			"  edgeapi proxy --port 8001 & kubectl --server http://127.0.0.1:8001 get ns\n"+
			"Only connections from processes of the proxy's own user are forwarded, and the\n"+
			"daemon sees them as that user (its Unix user and groups); others get 403.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	listen := net.JoinHostPort(*address, strconv.Itoa(*port))
	if !isLoopback(listen) {
		fs.Usage()
		return usageError{fmt.Errorf("invalid address %q: the proxy listens on loopback only", *address)}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	p := &proxy{socket: *socket, uid: uint32(os.Geteuid()), log: os.Stderr}
	// As kubectl proxy words it, so scripts can read the address.
	fmt.Printf("Starting to serve on %s\n", ln.Addr())
	return p.serve(ctx, ln)
}

// proxy forwards the connections of uid's processes on a loopback
// listener to the Unix socket.
type proxy struct {
	socket string
	uid    uint32
	log    io.Writer
	conns  sync.WaitGroup
}

// serve accepts until ctx is cancelled, then closes the listener and
// waits for the forwarded connections to end.
func (p *proxy) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer p.conns.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		p.conns.Add(1)
		go func() {
			defer p.conns.Done()
			p.handle(ctx, c.(*net.TCPConn))
		}()
	}
}

// handle forwards c when its client runs as p.uid, and refuses it
// otherwise.
func (p *proxy) handle(ctx context.Context, c *net.TCPConn) {
	defer c.Close()
	uid, err := tcpPeerUID(c)
	if err != nil || uid != p.uid {
		why := fmt.Sprintf("the connecting process runs as uid %d, not the proxy's uid %d", uid, p.uid)
		if err != nil {
			why = err.Error()
		}
		fmt.Fprintf(p.log, "edgeapi proxy: refused a connection from %s: %s\n", c.RemoteAddr(), why)
		refuse(c, why)
		return
	}
	var d net.Dialer
	up, err := d.DialContext(ctx, "unix", p.socket)
	if err != nil {
		fmt.Fprintf(p.log, "edgeapi proxy: %v\n", err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, c)
		up.(*net.UnixConn).CloseWrite()
	}()
	io.Copy(c, up)
	c.CloseWrite()
	<-done
}

// refuse answers the first request on c with a 403 Status and closes it,
// so that kubectl says why instead of reporting a reset connection.
func refuse(c net.Conn, why string) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
		req.Body.Close()
	}
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  "edgeapi proxy: forbidden: " + why,
		Reason:   metav1.StatusReasonForbidden,
		Code:     http.StatusForbidden,
	})
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	// Close only after the client has: closing with its bytes unread
	// would reset the connection, which can discard the answer.
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// tcpPeerUID returns the uid that owns the other end of c, a connection
// over loopback: the socket in the kernel's TCP tables (procNetTCP) whose
// local address is c's remote address and whose remote address is c's
// local one.
func tcpPeerUID(c *net.TCPConn) (uint32, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, errors.New("find the connecting process: not a TCP connection")
	}
	found := false
	var owner uint32
	for _, path := range procNetTCP {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("find the connecting process: %w", err)
		}
		for _, e := range parseProcNetTCP(data) {
			if e.state == tcpTimeWait || e.local.Port != remote.Port || e.remote.Port != local.Port ||
				!e.local.IP.Equal(remote.IP) || !e.remote.IP.Equal(local.IP) {
				continue
			}
			if found && e.uid != owner {
				return 0, errors.New("find the connecting process: two sockets with its address have different owners")
			}
			found, owner = true, e.uid
		}
	}
	if !found {
		return 0, fmt.Errorf("find the connecting process: no socket at %s in %s", remote, strings.Join(procNetTCP, " or "))
	}
	return owner, nil
}

// tcpTimeWait is the TIME_WAIT state in /proc/net/tcp: a closed socket
// that no process owns (its uid reads 0).
const tcpTimeWait = 0x06

// procTCPEntry is one socket of /proc/net/tcp or /proc/net/tcp6.
type procTCPEntry struct {
	local, remote net.TCPAddr
	state         int
	uid           uint32
}

// parseProcNetTCP parses the lines of /proc/net/tcp or /proc/net/tcp6,
// skipping those it cannot read. Each address is hex: the IP as 32-bit
// words in the kernel's byte order, a colon, then the port.
func parseProcNetTCP(data []byte) []procTCPEntry {
	var out []procTCPEntry
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// sl local rem st tx:rx tr:when retrnsmt uid ...
		if len(f) < 8 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		local, ok1 := parseProcAddr(f[1])
		remote, ok2 := parseProcAddr(f[2])
		state, err1 := strconv.ParseUint(f[3], 16, 8)
		uid, err2 := strconv.ParseUint(f[7], 10, 32)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			continue
		}
		out = append(out, procTCPEntry{local: local, remote: remote, state: int(state), uid: uint32(uid)})
	}
	return out
}

func parseProcAddr(s string) (net.TCPAddr, bool) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok || (len(ipHex) != 8 && len(ipHex) != 32) {
		return net.TCPAddr{}, false
	}
	raw, err := hex.DecodeString(ipHex)
	port, err2 := strconv.ParseUint(portHex, 16, 16)
	if err != nil || err2 != nil {
		return net.TCPAddr{}, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return net.TCPAddr{IP: ip, Port: int(port)}, true
}
