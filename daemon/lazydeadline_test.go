package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// closed reports whether ch is closed, waiting up to a second for it.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(time.Second):
		return false
	}
}

// TestLazyDeadline: the context ends as context.WithDeadline's does: at
// its deadline (seen by Done, by Err without Done, and by a child made
// from it), when its parent ends, and when it is stopped; it carries the
// parent's values and its own deadline.
func TestLazyDeadline(t *testing.T) {
	type key struct{}
	t.Run("deadline seen by Done", func(t *testing.T) {
		ctx, stop := newLazyDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
		defer stop()
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline: %v", err)
		}
		if !closed(ctx.Done()) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("after the deadline: Err %v, want DeadlineExceeded and Done closed", ctx.Err())
		}
	})
	t.Run("deadline seen by Err alone", func(t *testing.T) {
		ctx, stop := newLazyDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		defer stop()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Err: %v, want DeadlineExceeded", err)
		}
		if !closed(ctx.Done()) {
			t.Error("Done not closed after Err reported the deadline")
		}
	})
	t.Run("child", func(t *testing.T) {
		ctx, stop := newLazyDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
		defer stop()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		if !closed(child.Done()) || !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Errorf("child: Err %v, want DeadlineExceeded", child.Err())
		}
	})
	t.Run("parent canceled", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
		ctx, stop := newLazyDeadline(parent, time.Now().Add(time.Hour))
		defer stop()
		if got := ctx.Value(key{}); got != "v" {
			t.Errorf("Value: got %v, want the parent's v", got)
		}
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Errorf("Deadline: got %v %v, want in an hour", d, ok)
		}
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err after the parent's cancel: %v, want Canceled", err)
		}
		if !closed(ctx.Done()) {
			t.Error("Done not closed after the parent's cancel")
		}
	})
	t.Run("parent canceled while waited on", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, stop := newLazyDeadline(parent, time.Now().Add(time.Hour))
		defer stop()
		done := ctx.Done()
		cancel()
		if !closed(done) || !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("Err %v, want Canceled and Done closed", ctx.Err())
		}
	})
	t.Run("stopped before use", func(t *testing.T) {
		ctx, stop := newLazyDeadline(context.Background(), time.Now().Add(time.Hour))
		stop()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err after stop: %v, want Canceled", err)
		}
		if !closed(ctx.Done()) {
			t.Error("Done not closed after stop")
		}
	})
	t.Run("stopped while waited on", func(t *testing.T) {
		ctx, stop := newLazyDeadline(context.Background(), time.Now().Add(time.Hour))
		done := ctx.Done()
		stop()
		if !closed(done) || !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("Err %v, want Canceled and Done closed", ctx.Err())
		}
	})
	t.Run("earlier parent deadline", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ctx, stop := newLazyDeadline(parent, time.Now().Add(time.Hour))
		defer stop()
		if d, _ := ctx.Deadline(); time.Until(d) > time.Minute {
			t.Errorf("Deadline in %v, want the parent's minute", time.Until(d))
		}
	})
}
