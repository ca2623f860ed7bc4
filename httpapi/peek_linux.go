package httpapi

import (
	"errors"
	"syscall"
)

// canPeek: peek works here, so watch streams may own their connections.
const canPeek = true

// peek reports whether the peer of a TCP connection closed it (or it
// failed), with a non-blocking MSG_PEEK that leaves any data unread.
func peek(rc syscall.RawConn) bool {
	closed := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		case err != nil, n == 0:
			closed = true
		}
		return true
	})
	return closed || err != nil
}
