package main

import (
	"bytes"
	stdlog "log"
	"sync"
	"time"

	"go.uber.org/zap"
)

// handshakeLogInterval is how often the HTTP server's log says how many
// TLS handshakes failed since it last did.
const handshakeLogInterval = time.Minute

// httpErrorLog is the HTTP server's error log: a warning per line, except
// failed TLS handshakes, which any peer can cause as often as it likes
// (kube-apiserver logs them only at verbosity 5). Each is logged at debug
// level, and at most once per handshakeLogInterval a warning counts them.
type httpErrorLog struct {
	log *zap.Logger
	now func() time.Time

	mu         sync.Mutex
	suppressed int
	next       time.Time
}

func newHTTPErrorLog(log *zap.Logger) *stdlog.Logger {
	return stdlog.New(&httpErrorLog{log: log, now: time.Now}, "", 0)
}

var handshakeError = []byte("TLS handshake error")

// Write logs one line of net/http's error log.
func (l *httpErrorLog) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, "\n"))
	if !bytes.Contains(p, handshakeError) {
		l.log.Warn(line)
		return len(p), nil
	}
	l.log.Debug(line)
	l.mu.Lock()
	l.suppressed++
	now := l.now()
	if now.Before(l.next) {
		l.mu.Unlock()
		return len(p), nil
	}
	n := l.suppressed
	l.suppressed = 0
	l.next = now.Add(handshakeLogInterval)
	l.mu.Unlock()
	l.log.Warn("TLS handshakes failed (details at debug level)", zap.Int("count", n), zap.String("last", line),
		zap.Duration("next_report_after", handshakeLogInterval))
	return len(p), nil
}
