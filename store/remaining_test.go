package store

import (
	"context"
	"fmt"
	"testing"
)

func TestRemainingCache_NextPage(t *testing.T) {
	k := func(ns, name string) Key { return Key{Resource: "configmaps", Namespace: ns, Name: name} }
	tests := []struct {
		name      string
		resource  string
		namespace string
		rev       int64
		afterNS   string
		afterName string
		m         int
		wantN     int64
		wantOK    bool
	}{
		{name: "the next page", resource: "configmaps", namespace: "ns", rev: 7, afterNS: "ns", afterName: "b", m: 3, wantN: 7, wantOK: true},
		{name: "another revision", resource: "configmaps", namespace: "ns", rev: 8, afterNS: "ns", afterName: "b", m: 3},
		{name: "another resource", resource: "secrets", namespace: "ns", rev: 7, afterNS: "ns", afterName: "b", m: 3},
		{name: "another namespace", resource: "configmaps", namespace: "", rev: 7, afterNS: "ns", afterName: "b", m: 3},
		{name: "another start", resource: "configmaps", namespace: "ns", rev: 7, afterNS: "ns", afterName: "a", m: 3},
		{name: "a page past the count", resource: "configmaps", namespace: "ns", rev: 7, afterNS: "ns", afterName: "b", m: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c remainingCache
			c.put("configmaps", "ns", 7, k("ns", "b"), 10)
			n, ok := c.nextPage(tt.resource, tt.namespace, tt.rev, tt.afterNS, tt.afterName, tt.m, k("ns", "e"))
			if n != tt.wantN || ok != tt.wantOK {
				t.Errorf("nextPage() = %d, %v, want %d, %v", n, ok, tt.wantN, tt.wantOK)
			}
		})
	}

	t.Run("a chain", func(t *testing.T) {
		var c remainingCache
		c.put("configmaps", "", 7, k("a", "x"), 10)
		if n, ok := c.nextPage("configmaps", "", 7, "a", "x", 4, k("b", "y")); n != 6 || !ok {
			t.Errorf("second page: nextPage() = %d, %v, want 6, true", n, ok)
		}
		if n, ok := c.nextPage("configmaps", "", 7, "b", "y", 4, k("c", "z")); n != 2 || !ok {
			t.Errorf("third page: nextPage() = %d, %v, want 2, true", n, ok)
		}
		// The slot moved on: the second page's start is gone.
		if n, ok := c.nextPage("configmaps", "", 7, "a", "x", 4, k("b", "y")); ok {
			t.Errorf("second page again: nextPage() = %d, true, want a miss", n)
		}
	})
	t.Run("evicted", func(t *testing.T) {
		var c remainingCache
		c.put("configmaps", "", 7, k("a", "x"), 10)
		for i := range remainingCacheSize {
			c.put("configmaps", "", 7, k("b", fmt.Sprint(i)), 10)
		}
		if n, ok := c.nextPage("configmaps", "", 7, "a", "x", 4, k("b", "y")); ok {
			t.Errorf("nextPage() after %d other lists = %d, true, want a miss", remainingCacheSize, n)
		}
	})
}

// TestDB_ListRemainingPaged: every page of a paged list has the
// Remaining a count at its revision gives, also when the list is
// followed at a past revision after deletes, when another list starts
// after the same key at the newer revision, and namespaced.
func TestDB_ListRemainingPaged(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	for _, ns := range []string{"a", "b"} {
		for i := range 30 {
			mustCreate(t, db, key(ns, fmt.Sprintf("o%02d", i)), "")
		}
	}
	rev1 := db.Rev()

	// page lists from after (ns, name) at rev by limit, checking each
	// page's Remaining against the objects after its last one in all
	// (the unpaged list at rev).
	page := func(t *testing.T, namespace string, rev int64, afterNS, afterName string, limit, pages int) (string, string) {
		t.Helper()
		all, err := db.List(ctx, ListOptions{Resource: "configmaps", Namespace: namespace, Rev: rev})
		if err != nil {
			t.Fatal(err)
		}
		for p := range pages {
			res, err := db.List(ctx, ListOptions{Resource: "configmaps", Namespace: namespace, Rev: rev, AfterNamespace: afterNS, AfterName: afterName, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if !res.More || len(res.Objects) == 0 {
				t.Fatalf("page %d: More = %v with %d objects, want more", p, res.More, len(res.Objects))
			}
			last := res.Objects[len(res.Objects)-1].Key
			var want int64
			for _, o := range all.Objects {
				if keyLess(last, o.Key) {
					want++
				}
			}
			if res.Remaining != want {
				t.Errorf("page %d after %s/%s at rev %d: Remaining = %d, want %d", p, afterNS, afterName, rev, res.Remaining, want)
			}
			afterNS, afterName = last.Namespace, last.Name
		}
		return afterNS, afterName
	}

	ns, name := page(t, "", rev1, "", "", 7, 3)
	for i := range 10 {
		if _, err := db.Delete(ctx, key("b", fmt.Sprintf("o%02d", i*2)), Preconditions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A list at the newer revision after the same key: its own count.
	page(t, "", 0, ns, name, 7, 3)
	// The first list, now at a past revision.
	page(t, "", rev1, ns, name, 7, 4)
	page(t, "b", 0, "", "", 4, 4)
	page(t, "b", rev1, "", "", 4, 5)
}
