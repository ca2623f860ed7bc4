package authn

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadPeerCred asks the kernel for the credentials of the process at the
// other end of the Unix socket c (SO_PEERCRED, and SO_PEERGROUPS for its
// supplementary groups). c is a *net.UnixConn, or a connection wrapping
// one that implements syscall.Conn.
func ReadPeerCred(c syscall.Conn) (PeerCred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return PeerCred{}, fmt.Errorf("read peer credentials: %w", err)
	}
	var cred PeerCred
	var opErr error
	err = rc.Control(func(fd uintptr) {
		var uc *unix.Ucred
		uc, opErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if opErr != nil {
			return
		}
		cred = PeerCred{UID: uc.Uid, GID: uc.Gid, PID: uc.Pid}
		cred.Groups, opErr = peerGroups(int(fd))
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		return PeerCred{}, fmt.Errorf("read peer credentials: %w", err)
	}
	return cred, nil
}

// peerGroups returns the peer's supplementary groups (SO_PEERGROUPS), or
// nil and no error when the kernel does not know the option.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 32)
	for {
		size := uint32(len(buf) * 4)
		var p unsafe.Pointer
		if len(buf) > 0 {
			p = unsafe.Pointer(&buf[0])
		}
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(p), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case errno == 0:
			return buf[: size/4 : size/4], nil
		case errors.Is(errno, unix.ERANGE) && int(size/4) > len(buf):
			// size is what the kernel needs.
			buf = make([]uint32, size/4)
		case errors.Is(errno, unix.ENOPROTOOPT):
			return nil, nil
		default:
			return nil, fmt.Errorf("getsockopt SO_PEERGROUPS: %w", errno)
		}
	}
}

// DetectOverflow returns nil when the process sees every uid and gid as
// they are (its user namespace maps them all onto themselves, as the
// initial one does), and otherwise the overflow ids that the kernel
// reports, through SO_PEERCRED too, for the ids it does not map.
func DetectOverflow() (*Overflow, error) {
	full := true
	for _, m := range []string{"/proc/self/uid_map", "/proc/self/gid_map"} {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, fmt.Errorf("detect user namespace: %w", err)
		}
		if !isIdentityMap(string(b)) {
			full = false
		}
	}
	if full {
		return nil, nil
	}
	o := &Overflow{UID: 65534, GID: 65534}
	for path, id := range map[string]*uint32{"/proc/sys/kernel/overflowuid": &o.UID, "/proc/sys/kernel/overflowgid": &o.GID} {
		if b, err := os.ReadFile(path); err == nil {
			if n, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 32); err == nil {
				*id = uint32(n)
			}
		}
	}
	return o, nil
}
