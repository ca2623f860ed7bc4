package main

import (
	"fmt"
	"net"

	"github.com/coreos/go-systemd/v22/activation"
)

// passedListeners are the listening sockets systemd passed the daemon
// (socket activation: LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES), by the
// serve flag each one stands in for. A nil field was not passed: the
// daemon listens on the flag's address itself.
type passedListeners struct {
	listen         net.Listener      // --listen (HTTPS)
	insecureListen net.Listener      // --insecure-listen
	unixSocket     *net.UnixListener // --unix-socket
}

// Socket names (FileDescriptorName= in a .socket unit) that say which
// flag a passed socket stands in for: the flags' own names.
const (
	socketNameListen         = "listen"
	socketNameInsecureListen = "insecure-listen"
	socketNameUnixSocket     = "unix-socket"
)

// takePassedListeners takes the sockets systemd passed, when
// LISTEN_PID is this process, and clears the LISTEN_* variables so that
// nothing started later takes them again. Each socket goes to the flag
// its name (FileDescriptorName=) names; a socket with any other name
// (systemd's default is the socket unit's name, edgeapi.socket) goes by
// its type: a TCP socket to --listen, a Unix one to --unix-socket. It is
// an error to pass something that is not a listening stream socket, a
// Unix socket for --unix-socket that is not one, or two sockets for one
// flag. On error, every socket taken so far is closed.
func takePassedListeners() (_ passedListeners, err error) {
	var p passedListeners
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	for _, f := range activation.Files(true) {
		name := f.Name()
		ln, err := net.FileListener(f)
		f.Close() // FileListener holds a duplicate
		if err != nil {
			return p, fmt.Errorf("take socket %q passed by systemd: not a listening stream socket: %w", name, err)
		}
		role := name
		if role != socketNameListen && role != socketNameInsecureListen && role != socketNameUnixSocket {
			switch ln.Addr().Network() {
			case "tcp":
				role = socketNameListen
			case "unix":
				role = socketNameUnixSocket
			default:
				ln.Close()
				return p, fmt.Errorf("take socket %q passed by systemd: a %s socket; name it with FileDescriptorName=%s, %s or %s",
					name, ln.Addr().Network(), socketNameListen, socketNameInsecureListen, socketNameUnixSocket)
			}
		}
		var slot *net.Listener
		switch role {
		case socketNameListen:
			slot = &p.listen
		case socketNameInsecureListen:
			slot = &p.insecureListen
		case socketNameUnixSocket:
			u, ok := ln.(*net.UnixListener)
			if !ok {
				ln.Close()
				return p, fmt.Errorf("take socket %q passed by systemd for --unix-socket: a %s socket, want a Unix one", name, ln.Addr().Network())
			}
			if p.unixSocket != nil {
				ln.Close()
				return p, fmt.Errorf("take socket %q passed by systemd: a second socket for --%s", name, role)
			}
			p.unixSocket = u
			continue
		}
		if *slot != nil {
			ln.Close()
			return p, fmt.Errorf("take socket %q passed by systemd: a second socket for --%s", name, role)
		}
		*slot = ln
	}
	return p, nil
}

// close closes every socket taken.
func (p passedListeners) close() {
	for _, ln := range []net.Listener{p.listen, p.insecureListen} {
		if ln != nil {
			ln.Close()
		}
	}
	if p.unixSocket != nil {
		p.unixSocket.Close()
	}
}

// unixSocketPath is the file a passed Unix listener is bound to, for
// logs and for the checks that depend on the daemon serving one.
func unixSocketPath(ln *net.UnixListener) string {
	if name := ln.Addr().String(); name != "" {
		return name
	}
	return "(unnamed unix socket passed by systemd)"
}
