package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
)

// fakeProbe is a liveness probe whose answer the test sets; a stuck probe
// blocks until its context ends, like a writer that does not answer.
type fakeProbe struct {
	err   error
	stuck bool
}

func (p *fakeProbe) check(ctx context.Context) error {
	if p.stuck {
		<-ctx.Done()
		return ctx.Err()
	}
	return p.err
}

func TestWatchdog_Tick(t *testing.T) {
	writer, server := &fakeProbe{}, &fakeProbe{}
	var sent []string
	w := &watchdog{
		probes: []livenessProbe{
			{name: "store writer", check: writer.check},
			{name: "http server", check: server.check},
		},
		// Bounds only the stuck probe's wait; no outcome depends on it.
		timeout: 20 * time.Millisecond,
		notify:  func(state string) { sent = append(sent, state) },
		log:     zap.NewNop(),
	}
	steps := []struct {
		name             string
		writerStuck      bool
		serverErr        error
		wantPing         bool
		wantNotification []string
	}{
		{name: "healthy", wantPing: true, wantNotification: []string{"WATCHDOG=1"}},
		{name: "writer stuck", writerStuck: true, wantPing: false,
			wantNotification: []string{"STATUS=unhealthy, watchdog not pinged: store writer: context deadline exceeded"}},
		{name: "writer still stuck: no ping, no repeated status", writerStuck: true, wantPing: false},
		{name: "writer recovered", wantPing: true, wantNotification: []string{"STATUS=serving", "WATCHDOG=1"}},
		{name: "http server fails", serverErr: errors.New("connection refused"), wantPing: false,
			wantNotification: []string{"STATUS=unhealthy, watchdog not pinged: http server: connection refused"}},
		{name: "healthy again", wantPing: true, wantNotification: []string{"STATUS=serving", "WATCHDOG=1"}},
		{name: "still healthy", wantPing: true, wantNotification: []string{"WATCHDOG=1"}},
	}
	for _, s := range steps {
		writer.stuck, server.err = s.writerStuck, s.serverErr
		sent = nil
		if got := w.tick(context.Background()); got != s.wantPing {
			t.Errorf("%s: tick() = %v, want %v", s.name, got, s.wantPing)
		}
		if !slices.Equal(sent, s.wantNotification) {
			t.Errorf("%s: notifications = %q, want %q", s.name, sent, s.wantNotification)
		}
	}
}
