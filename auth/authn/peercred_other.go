//go:build !linux

package authn

import (
	"errors"
	"fmt"
	"syscall"
)

// ReadPeerCred is implemented on Linux only (SO_PEERCRED); elsewhere it
// fails, and requests over the Unix socket get 401.
func ReadPeerCred(c syscall.Conn) (PeerCred, error) {
	return PeerCred{}, fmt.Errorf("read peer credentials: %w", errors.ErrUnsupported)
}

// DetectOverflow returns nil: there are no user namespaces here.
func DetectOverflow() (*Overflow, error) { return nil, nil }
