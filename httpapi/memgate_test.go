package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestMemGate_acquire checks the grants: as much as is free up to want,
// at least least, capped at the gate's size.
func TestMemGate_acquire(t *testing.T) {
	tests := []struct {
		name               string
		size, held         int64
		least, want, grant int64
	}{
		{name: "all it wants", size: 100, least: 10, want: 60, grant: 60},
		{name: "what is free", size: 100, held: 70, least: 10, want: 60, grant: 30},
		{name: "exactly least", size: 100, held: 90, least: 10, want: 60, grant: 10},
		{name: "larger than the gate", size: 100, least: 500, want: 900, grant: 100},
		{name: "least above want", size: 100, least: 50, want: 20, grant: 20},
		{name: "nothing", size: 100, held: 100, least: 0, want: 0, grant: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newMemGate(tt.size)
			if tt.held > 0 {
				if _, err := g.acquire(context.Background(), tt.held, tt.held, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			got, err := g.acquire(context.Background(), tt.least, tt.want, time.Second)
			if err != nil || got != tt.grant {
				t.Errorf("acquire(%d, %d) with %d of %d held = %d, %v; want %d, nil", tt.least, tt.want, tt.held, tt.size, got, err, tt.grant)
			}
		})
	}
}

// TestMemGate_waits checks that a request waits while less than least is
// free, is served in arrival order once memory is released (its least
// while others wait behind it), and gives up
// after its wait or with its context, leaving the gate whole.
func TestMemGate_waits(t *testing.T) {
	g := newMemGate(100)
	ctx := context.Background()
	first, _ := g.acquire(ctx, 80, 80, time.Second)

	type result struct {
		name  string
		grant int64
	}
	done := make(chan result, 2)
	go func() {
		n, _ := g.acquire(ctx, 50, 60, 10*time.Second)
		done <- result{"a", n}
	}()
	waitWaiters(t, g, 1)
	go func() {
		n, _ := g.acquire(ctx, 10, 10, 10*time.Second) // fits, but a is first
		done <- result{"b", n}
	}()
	waitWaiters(t, g, 2)
	select {
	case r := <-done:
		t.Fatalf("%s got %d while 20 bytes were free and a waited first", r.name, r.grant)
	default:
	}
	g.release(first)
	var got []result
	for range 2 {
		got = append(got, <-done)
	}
	// a had b behind it: it got its least; b, the last, got what it
	// wanted.
	want := []result{{"a", 50}, {"b", 10}}
	if got[0].name != "a" {
		got[0], got[1] = got[1], got[0]
	}
	if got[0] != want[0] || got[1] != want[1] {
		t.Errorf("grants %v; want %v", got, want)
	}
	g.release(60)

	// A wait that runs out, and one whose context ends.
	held, _ := g.acquire(ctx, 100, 100, time.Second)
	if _, err := g.acquire(ctx, 1, 1, 10*time.Millisecond); !errors.Is(err, errMemGateWait) {
		t.Errorf("acquire on a full gate = %v, want errMemGateWait", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.acquire(cctx, 1, 1, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("acquire with a canceled context = %v, want context.Canceled", err)
	}
	g.release(held)
	if n, err := g.acquire(ctx, 100, 100, time.Second); n != 100 || err != nil {
		t.Errorf("after the waits gave up, acquire(100) = %d, %v; want the whole gate", n, err)
	}
}

// TestMemGate_shrink checks that a grant given back in part serves a
// waiter.
func TestMemGate_shrink(t *testing.T) {
	g := newMemGate(100)
	ctx := context.Background()
	n, _ := g.acquire(ctx, 10, 100, time.Second)
	done := make(chan int64)
	go func() {
		m, _ := g.acquire(ctx, 40, 40, 10*time.Second)
		done <- m
	}()
	waitWaiters(t, g, 1)
	g.shrink(&n, 60)
	if got := <-done; got != 40 || n != 60 {
		t.Errorf("after shrinking to 60, the waiter got %d and the grant is %d; want 40 and 60", got, n)
	}
}

func waitWaiters(t *testing.T, g *memGate, n int) {
	t.Helper()
	for range 1000 {
		g.mu.Lock()
		w := len(g.waiters)
		g.mu.Unlock()
		if w == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the gate never had %d waiters", n)
}
