//go:build !linux

package httpapi

import "syscall"

// canPeek: no non-blocking peek here; watch streams write through
// net/http, whose reader notices closed connections.
const canPeek = false

func peek(syscall.RawConn) bool { return false }
