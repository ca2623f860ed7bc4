package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestDB_ListMaxBytes reads lists in pages of a few bytes, at the current
// and at a past revision, with and without a filter and a limit, and
// checks that the pages put together are the list read in one call.
func TestDB_ListMaxBytes(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	for _, ns := range []string{"a", "b", "c"} {
		for i := range 7 {
			mustCreate(t, db, key(ns, fmt.Sprintf("x%d", i)), strings.Repeat("v", i*10))
		}
	}
	past := db.Rev()
	// Changes after past: the past list is rebuilt from the change log.
	for _, name := range []string{"x1", "x4"} {
		if _, err := db.Delete(ctx, key("b", name), Preconditions{}); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, db, key("b", "x9"), "new")
	even := func(o *Object) bool { return (o.Key.Name[1]-'0')%2 == 0 }

	for _, tc := range []struct {
		name string
		opts ListOptions
	}{
		{"current", ListOptions{}},
		{"past", ListOptions{Rev: past}},
		{"namespace", ListOptions{Namespace: "b", Rev: past}},
		{"filter", ListOptions{Filter: even}},
		{"limit", ListOptions{Limit: 11}},
		{"past filter limit", ListOptions{Rev: past, Filter: even, Limit: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Resource = "configmaps"
			whole, err := db.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if whole.Cut {
				t.Fatal("a list without MaxBytes is Cut")
			}
			for _, maxBytes := range []int{1, 100, 250} {
				var got []Object
				p := opts
				p.Rev, p.MaxBytes = whole.Rev, maxBytes
				pages := 0
				for {
					pages++
					res, err := db.List(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, res.Objects...)
					if !res.Cut {
						if res.More != whole.More || res.Remaining != whole.Remaining {
							t.Errorf("MaxBytes %d: last page More, Remaining = %v, %d, want %v, %d", maxBytes, res.More, res.Remaining, whole.More, whole.Remaining)
						}
						break
					}
					if !res.More || res.Remaining != -1 || len(res.Objects) == 0 {
						t.Fatalf("MaxBytes %d: cut page More, Remaining, len = %v, %d, %d; want true, -1, >0", maxBytes, res.More, res.Remaining, len(res.Objects))
					}
					last := res.Objects[len(res.Objects)-1].Key
					p.AfterNamespace, p.AfterName = last.Namespace, last.Name
					if opts.Limit > 0 {
						p.Limit = opts.Limit - len(got)
					}
				}
				if g, w := names(got), names(whole.Objects); !slices.Equal(g, w) {
					t.Errorf("MaxBytes %d: pages = %v, want %v", maxBytes, g, w)
				}
				if maxBytes == 1 && pages < len(whole.Objects) {
					t.Errorf("MaxBytes 1: %d pages for %d objects, want one each", pages, len(whole.Objects))
				}
			}
		})
	}
}

// TestDB_Hold checks that compaction stops short of a held revision
// until the hold is released.
func TestDB_Hold(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	mustCreate(t, db, key("ns", "a"), "1")
	held := db.Rev()
	for i := range 5 {
		if _, err := db.Update(ctx, key("ns", "a"), Preconditions{}, obj("ns", "a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	release := db.Hold(held)
	release2 := db.Hold(held + 2)
	if err := db.Compact(ctx, db.Rev()); err != nil {
		t.Fatal(err)
	}
	if got, want := db.CompactedRev(), held; got != want {
		t.Errorf("CompactedRev() with a hold = %d, want %d", got, want)
	}
	if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: held}); err != nil {
		t.Errorf("List(held rev) error = %v", err)
	}
	release()
	release() // a second release does nothing
	if err := db.Compact(ctx, db.Rev()); err != nil {
		t.Fatal(err)
	}
	if got, want := db.CompactedRev(), held+2; got != want {
		t.Errorf("CompactedRev() with the second hold = %d, want %d", got, want)
	}
	release2()
	if err := db.Compact(ctx, db.Rev()); err != nil {
		t.Fatal(err)
	}
	if got, want := db.CompactedRev(), db.Rev(); got != want {
		t.Errorf("CompactedRev() after release = %d, want %d", got, want)
	}
	// Holding a compacted revision keeps nothing.
	db.Hold(held)()
	if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: held}); !errors.Is(err, ErrCompacted) {
		t.Errorf("List(compacted rev) error = %v, want ErrCompacted", err)
	}
}

// TestDB_ChangeKeys reads the change log without values: the same events
// as Changes, with no Value or PrevValue.
func TestDB_ChangeKeys(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	start := db.Rev()
	mustCreate(t, db, key("ns", "a"), "1")
	if _, err := db.Update(ctx, key("ns", "a"), Preconditions{}, obj("ns", "a", "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, key("ns", "a"), Preconditions{}); err != nil {
		t.Fatal(err)
	}
	full, err := db.Changes(ctx, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := db.ChangeKeys(ctx, start, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || len(full) != 3 {
		t.Fatalf("got %d events without values and %d with, want 3", len(keys), len(full))
	}
	for i := range keys {
		g, w := keys[i], full[i]
		if g.Type != w.Type || g.Object.Key != w.Object.Key || g.Object.UID != w.Object.UID || g.Rev() != w.Rev() || g.Object.CreateRev != w.Object.CreateRev {
			t.Errorf("event %d = %+v, want the keys of %+v", i, g, w)
		}
		if g.Object.Value != nil || g.PrevValue != nil {
			t.Errorf("event %d has values", i)
		}
	}
	if _, err := db.ChangeKeys(ctx, db.Rev()+1, 0); !errors.Is(err, ErrFutureRev) {
		t.Errorf("ChangeKeys(future) error = %v, want ErrFutureRev", err)
	}
}
