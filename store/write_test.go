package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestDB_Create(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()

	got := mustCreate(t, db, key("ns", "a"), "1")
	if got.ModRev != 1 || got.CreateRev != 1 || got.UID != "uid-a" || got.Key != key("ns", "a") {
		t.Errorf("Create() = %+v, want rev 1/1 uid-a", got)
	}
	wantStamped(t, got)
	read, err := db.Get(ctx, key("ns", "a"))
	if err != nil {
		t.Fatalf("Get() error = %v", err)
	}
	if !bytes.Equal(read.Value, got.Value) || read.ModRev != got.ModRev || read.CreateRev != got.CreateRev || read.UID != got.UID {
		t.Errorf("Get() = %+v, want %+v", read, got)
	}

	t.Run("exists", func(t *testing.T) {
		_, err := db.Create(ctx, key("ns", "a"), "other", obj("ns", "a", "2"))
		if !errors.Is(err, ErrExists) {
			t.Errorf("Create() error = %v, want ErrExists", err)
		}
		if got, want := db.Rev(), int64(1); got != want {
			t.Errorf("Rev() = %d, want %d: a failed write must not take a revision", got, want)
		}
	})
	t.Run("same name other namespace", func(t *testing.T) {
		got := mustCreate(t, db, key("other", "a"), "1")
		if got.ModRev != 2 {
			t.Errorf("ModRev = %d, want 2", got.ModRev)
		}
	})
	t.Run("caller resourceVersion replaced", func(t *testing.T) {
		v := []byte(`{"metadata":{"name":"rv","resourceVersion":"12345"}}`)
		got, err := db.Create(ctx, key("ns", "rv"), "u", v)
		if err != nil {
			t.Fatal(err)
		}
		wantStamped(t, got)
	})
	t.Run("too large", func(t *testing.T) {
		small := openTest(t, Config{MaxValueBytes: 100})
		v := []byte(`{"metadata":{"name":"big"},"data":"` + strings.Repeat("x", 100) + `"}`)
		if _, err := small.Create(ctx, key("ns", "big"), "u", v); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Create() error = %v, want ErrTooLarge", err)
		}
	})
	t.Run("invalid object", func(t *testing.T) {
		if _, err := db.Create(ctx, key("ns", "bad"), "u", []byte(`{"data":{}}`)); !errors.Is(err, ErrInvalidObject) {
			t.Errorf("Create() error = %v, want ErrInvalidObject", err)
		}
	})
	t.Run("invalid key", func(t *testing.T) {
		for _, k := range []Key{{Resource: "configmaps", Namespace: "ns"}, {Namespace: "ns", Name: "a"}, key("n\x00s", "a"), key("ns", "a\x00")} {
			if _, err := db.Create(ctx, k, "u", obj("ns", "a", "")); !errors.Is(err, ErrInvalidObject) {
				t.Errorf("Create(%q) error = %v, want ErrInvalidObject", k, err)
			}
		}
	})
	t.Run("uid with NUL", func(t *testing.T) {
		mustCreateUID := "u\x00id"
		if _, err := db.Create(ctx, key("nul", "a"), mustCreateUID, obj("nul", "a", "")); err != nil {
			t.Fatal(err)
		}
		res, err := db.List(ctx, ListOptions{Resource: "configmaps", Namespace: "nul"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != 1 || res.Objects[0].UID != mustCreateUID || res.Objects[0].Key != key("nul", "a") {
			t.Errorf("List() = %+v, want one object with uid %q", res.Objects, mustCreateUID)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := db.Create(cctx, key("ns", "c"), "u", obj("ns", "c", "")); !errors.Is(err, context.Canceled) {
			t.Errorf("Create() error = %v, want context.Canceled", err)
		}
	})
}

func TestDB_Update(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	a := mustCreate(t, db, key("ns", "a"), "1")

	tests := []struct {
		name string
		pre  Preconditions
		err  error
	}{
		{"stale mod rev", Preconditions{ModRev: a.ModRev + 1}, ErrConflict},
		{"wrong uid", Preconditions{UID: "nope"}, ErrConflict},
		{"right rev wrong uid", Preconditions{ModRev: a.ModRev, UID: "nope"}, ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Update(ctx, key("ns", "a"), tt.pre, obj("ns", "a", "2"))
			if !errors.Is(err, tt.err) {
				t.Fatalf("Update() error = %v, want %v", err, tt.err)
			}
			got, err := db.Get(ctx, key("ns", "a"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Value, a.Value) || got.ModRev != a.ModRev || db.Rev() != a.ModRev {
				t.Errorf("after failed Update: object %s rev %d, store rev %d; want unchanged", got.Value, got.ModRev, db.Rev())
			}
		})
	}

	t.Run("not found", func(t *testing.T) {
		if _, err := db.Update(ctx, key("ns", "missing"), Preconditions{}, obj("ns", "missing", "")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Update() error = %v, want ErrNotFound", err)
		}
	})
	t.Run("matching preconditions", func(t *testing.T) {
		got, err := db.Update(ctx, key("ns", "a"), Preconditions{ModRev: a.ModRev, UID: a.UID}, obj("ns", "a", "2"))
		if err != nil {
			t.Fatalf("Update() error = %v", err)
		}
		if got.ModRev != 2 || got.CreateRev != a.CreateRev || got.UID != a.UID {
			t.Errorf("Update() = rev %d/%d uid %q, want %d/2 %q", got.CreateRev, got.ModRev, got.UID, a.CreateRev, a.UID)
		}
		wantStamped(t, got)
		if !bytes.Contains(got.Value, []byte(`"v":"2"`)) {
			t.Errorf("Update() value = %s, want the new data", got.Value)
		}
	})
}

func TestDB_Delete(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	a := mustCreate(t, db, key("ns", "a"), "1")

	if _, err := db.Delete(ctx, key("ns", "a"), Preconditions{UID: "nope"}); !errors.Is(err, ErrConflict) {
		t.Errorf("Delete(wrong uid) error = %v, want ErrConflict", err)
	}
	if _, err := db.Delete(ctx, key("ns", "a"), Preconditions{ModRev: 99}); !errors.Is(err, ErrConflict) {
		t.Errorf("Delete(stale rev) error = %v, want ErrConflict", err)
	}
	got, err := db.Delete(ctx, key("ns", "a"), Preconditions{ModRev: a.ModRev, UID: a.UID})
	if err != nil {
		t.Fatalf("Delete() error = %v", err)
	}
	if got.ModRev != 2 || got.CreateRev != 1 || got.UID != a.UID {
		t.Errorf("Delete() = rev %d/%d uid %q, want 1/2 %q", got.CreateRev, got.ModRev, got.UID, a.UID)
	}
	wantStamped(t, got)
	if _, err := db.Get(ctx, key("ns", "a")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get() after Delete error = %v, want ErrNotFound", err)
	}
	if _, err := db.Delete(ctx, key("ns", "a"), Preconditions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete() error = %v, want ErrNotFound", err)
	}

	events, err := db.Changes(ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("Changes() = %d events, want 1", len(events))
	}
	ev := events[0]
	if ev.Type != Deleted || ev.Rev() != 2 || !bytes.Equal(ev.Object.Value, got.Value) || !bytes.Equal(ev.PrevValue, a.Value) {
		t.Errorf("delete event = %v rev %d value %s prev %s; want DELETED 2 %s prev %s",
			ev.Type, ev.Rev(), ev.Object.Value, ev.PrevValue, got.Value, a.Value)
	}
}

type counter struct {
	Metadata json.RawMessage `json:"metadata"`
	N        int             `json:"n"`
}

func TestDB_GuaranteedUpdate(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	k := key("ns", "counter")
	if _, err := db.Create(ctx, k, "u", []byte(`{"metadata":{"name":"counter"},"n":0}`)); err != nil {
		t.Fatal(err)
	}

	t.Run("contention", func(t *testing.T) {
		const workers, each = 16, 10
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Go(func() {
				for range each {
					_, err := db.GuaranteedUpdate(ctx, k, func(cur Object) ([]byte, error) {
						var c counter
						if err := json.Unmarshal(cur.Value, &c); err != nil {
							return nil, err
						}
						c.N++
						return json.Marshal(c)
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("GuaranteedUpdate() error = %v", err)
		}
		got, err := db.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var c counter
		if err := json.Unmarshal(got.Value, &c); err != nil {
			t.Fatal(err)
		}
		if c.N != workers*each {
			t.Errorf("counter = %d, want %d", c.N, workers*each)
		}
		if got.ModRev != 1+workers*each {
			t.Errorf("ModRev = %d, want %d", got.ModRev, 1+workers*each)
		}
	})

	t.Run("no change writes nothing", func(t *testing.T) {
		before := db.Rev()
		cur, _ := db.Get(ctx, k)
		got, err := db.GuaranteedUpdate(ctx, k, func(cur Object) ([]byte, error) {
			// Same bytes with another resourceVersion: still no change.
			return bytes.Replace(cur.Value, fmt.Appendf(nil, `"%d"`, cur.ModRev), []byte(`"1"`), 1), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if db.Rev() != before || got.ModRev != cur.ModRev || !bytes.Equal(got.Value, cur.Value) {
			t.Errorf("no-op GuaranteedUpdate wrote: rev %d -> %d", before, db.Rev())
		}
	})

	t.Run("tryUpdate error unwrapped", func(t *testing.T) {
		want := &customErr{"nope"}
		_, err := db.GuaranteedUpdate(ctx, k, func(Object) ([]byte, error) { return nil, want })
		var got *customErr
		if !errors.As(err, &got) || got != want {
			t.Errorf("GuaranteedUpdate() error = %v, want %v", err, want)
		}
	})

	t.Run("not found", func(t *testing.T) {
		called := false
		_, err := db.GuaranteedUpdate(ctx, key("ns", "missing"), func(Object) ([]byte, error) {
			called = true
			return nil, nil
		})
		if !errors.Is(err, ErrNotFound) || called {
			t.Errorf("GuaranteedUpdate() error = %v, called %v; want ErrNotFound, not called", err, called)
		}
	})
}

type customErr struct{ msg string }

func (e *customErr) Error() string { return e.msg }
