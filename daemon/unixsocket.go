package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/auth/authn"
)

// unixSocketMode is the mode of the --unix-socket file: every local user
// may connect. That hands out nothing: each request on the socket is
// authenticated by the connecting process's credentials as the kernel
// reports them (SO_PEERCRED), which a process cannot forge, and then
// authorized by RBAC, so a user without bindings gets what any
// authenticated user gets (discovery, its own access reviews) and a 403
// for everything else. Connecting needs write permission on a socket
// file, so a narrower mode would only hide the API from users RBAC would
// refuse anyway; an operator who wants that can narrow the directory's
// mode (the unit's RuntimeDirectoryMode) instead.
const unixSocketMode = 0o666

// maxUnixSocketPath is the longest socket path Linux accepts (sun_path is
// 108 bytes, with its terminating NUL).
const maxUnixSocketPath = 107

// listenUnix listens on the Unix socket path with unixSocketMode, after
// removing a stale socket left there by a daemon that did not shut down
// (see removeStaleSocket). The listener removes the file when closed.
func listenUnix(path string) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("listen unix socket: %w", err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen unix socket: %w", err)
	}
	// The file was created with the umask applied; set the mode it is
	// meant to have. Until then it is narrower, never wider.
	if err := os.Chmod(path, unixSocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen unix socket: %w", err)
	}
	return ln, nil
}

// removeStaleSocket removes path when it is a socket that nobody listens
// on any more. Anything else there is left alone and is an error: a file
// that is not a socket (a regular file, a directory, a symbolic link, even
// one to a socket), or a socket another process still serves.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check unix socket %s: %w", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("unix socket %s: the path exists and is not a socket (mode %s); not removing it", path, fi.Mode())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("unix socket %s: in use by another process", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("check unix socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale unix socket %s: %w", path, err)
	}
	return nil
}

// unixConnContext marks a connection of the --unix-socket listener with
// its peer's credentials: a new one, or one handed back after a watch
// (whose wrapper keeps the socket's address and SyscallConn). When they
// cannot be read the mark says so, and its requests get 401.
func unixConnContext(ctx context.Context, c net.Conn) context.Context {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return authn.WithPeerCred(ctx, authn.PeerCred{}, fmt.Errorf("read peer credentials: %T has no file descriptor", c))
	}
	cred, err := authn.ReadPeerCred(sc)
	return authn.WithPeerCred(ctx, cred, err)
}

// peerAuthenticator returns the authenticator of the --unix-socket's
// requests. In a user namespace that does not map every id (systemd's
// PrivateUsers=yes), the kernel reports every unmapped user as the same
// overflow uid: those users are refused, with a warning at start, rather
// than sharing one identity.
func peerAuthenticator(cfg serveConfig, log *zap.Logger) (*authn.PeerCredentials, error) {
	p := &authn.PeerCredentials{}
	if cfg.UnixSocket == "" {
		return p, nil
	}
	overflow, err := authn.DetectOverflow()
	if err != nil {
		return nil, err
	}
	if overflow != nil {
		log.Warn("the daemon runs in a user namespace that does not map every user (systemd PrivateUsers=yes?): "+
			"clients on the unix socket whose user it does not map all look alike and get 401",
			zap.Uint32("overflow_uid", overflow.UID), zap.Uint32("overflow_gid", overflow.GID))
		p.Overflow = overflow
	}
	return p, nil
}
