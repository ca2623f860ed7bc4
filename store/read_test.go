package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// names lists the keys of objs as "ns/name".
func names(objs []Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key.Namespace + "/" + o.Key.Name
	}
	return out
}

func TestDB_Get(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	if _, err := db.Get(ctx, key("ns", "a")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing) error = %v, want ErrNotFound", err)
	}
	want := mustCreate(t, db, key("ns", "a"), "1")
	// Same name, other resource: not the same object.
	if _, err := db.Get(ctx, Key{Resource: "secrets", Namespace: "ns", Name: "a"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(other resource) error = %v, want ErrNotFound", err)
	}
	got, err := db.Get(ctx, key("ns", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Key != want.Key || got.ModRev != want.ModRev || !bytes.Equal(got.Value, want.Value) {
		t.Errorf("Get() = %+v, want %+v", got, want)
	}
}

func TestDB_List(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	var all []string
	for _, ns := range []string{"a", "b", "c"} {
		for _, name := range []string{"x1", "x2", "y1", "y2"} {
			mustCreate(t, db, key(ns, name), "")
			all = append(all, ns+"/"+name)
		}
	}
	// Another resource, interleaved in key order, must never show up.
	for _, ns := range []string{"a", "b", "d"} {
		if _, err := db.Create(ctx, Key{Resource: "secrets", Namespace: ns, Name: "x1"}, "u", obj(ns, "x1", "")); err != nil {
			t.Fatal(err)
		}
	}
	rev := db.Rev()
	isX := func(o *Object) bool { return strings.HasPrefix(o.Key.Name, "x") }

	tests := []struct {
		name          string
		opts          ListOptions
		want          []string
		more          bool
		remaining     int64
		wantCountRows bool
	}{
		{name: "all", opts: ListOptions{}, want: all},
		{name: "namespace", opts: ListOptions{Namespace: "b"}, want: all[4:8]},
		{name: "missing namespace", opts: ListOptions{Namespace: "zz"}, want: nil},
		{name: "limit", opts: ListOptions{Limit: 5}, want: all[:5], more: true, remaining: 7},
		{name: "limit exact", opts: ListOptions{Limit: 12}, want: all},
		{name: "after", opts: ListOptions{AfterNamespace: "a", AfterName: "y2"}, want: all[4:]},
		{name: "after mid", opts: ListOptions{AfterNamespace: "b", AfterName: "x2", Limit: 2}, want: all[6:8], more: true, remaining: 4},
		{name: "after missing key", opts: ListOptions{AfterNamespace: "b", AfterName: "x3"}, want: all[6:]},
		{name: "namespace after", opts: ListOptions{Namespace: "b", AfterNamespace: "b", AfterName: "x2"}, want: all[6:8]},
		{name: "namespace after earlier namespace", opts: ListOptions{Namespace: "b", AfterNamespace: "a", AfterName: "zz"}, want: all[4:8]},
		{name: "namespace after later namespace", opts: ListOptions{Namespace: "b", AfterNamespace: "c", AfterName: "a"}, want: nil},
		{name: "namespace limit", opts: ListOptions{Namespace: "c", Limit: 1}, want: all[8:9], more: true, remaining: 3},
		{name: "filter", opts: ListOptions{Filter: isX}, want: []string{"a/x1", "a/x2", "b/x1", "b/x2", "c/x1", "c/x2"}},
		{name: "filter limit", opts: ListOptions{Filter: isX, Limit: 3}, want: []string{"a/x1", "a/x2", "b/x1"}, more: true, remaining: -1},
		// c/x2 passes and is last: nothing after it passes, so no more.
		{name: "filter limit at last match", opts: ListOptions{Filter: isX, Limit: 6}, want: []string{"a/x1", "a/x2", "b/x1", "b/x2", "c/x1", "c/x2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Resource = "configmaps"
			res, err := db.List(ctx, tt.opts)
			if err != nil {
				t.Fatalf("List() error = %v", err)
			}
			if got := names(res.Objects); fmt.Sprint(got) != fmt.Sprint(tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("List() = %v, want %v", got, tt.want)
			}
			if res.More != tt.more || res.Remaining != tt.remaining || res.Rev != rev {
				t.Errorf("List() more=%v remaining=%d rev=%d, want %v %d %d", res.More, res.Remaining, res.Rev, tt.more, tt.remaining, rev)
			}
			for _, o := range res.Objects {
				wantStamped(t, o)
			}
		})
	}

	t.Run("paging", func(t *testing.T) {
		for _, limit := range []int{1, 2, 5, 11, 12, 13} {
			var got []string
			opts := ListOptions{Resource: "configmaps", Limit: limit}
			for page := 0; ; page++ {
				res, err := db.List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, names(res.Objects)...)
				if want := int64(len(all) - len(got)); res.Remaining != want {
					t.Errorf("limit %d page %d: Remaining = %d, want %d", limit, page, res.Remaining, want)
				}
				if !res.More {
					break
				}
				last := res.Objects[len(res.Objects)-1].Key
				opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
			}
			if fmt.Sprint(got) != fmt.Sprint(all) {
				t.Errorf("limit %d: pages = %v, want %v", limit, got, all)
			}
		}
	})

	t.Run("future revision", func(t *testing.T) {
		if _, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: rev + 1}); !errors.Is(err, ErrFutureRev) {
			t.Errorf("List() error = %v, want ErrFutureRev", err)
		}
	})
}

func TestDB_ListSnapshot(t *testing.T) {
	// Writers create one object per revision: a consistent list at
	// revision R holds exactly the R objects with ModRev <= R.
	db := openTest(t, Config{})
	ctx := context.Background()
	var (
		wg   sync.WaitGroup
		stop atomic.Bool
		next atomic.Int64
	)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				n := next.Add(1)
				k := key(fmt.Sprintf("ns%d", n%3), fmt.Sprintf("o%06d", n))
				if _, err := db.Create(ctx, k, "u", obj(k.Namespace, k.Name, "")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := 0; i < 50 || db.Rev() < 200; i++ {
		res, err := db.List(ctx, ListOptions{Resource: "configmaps"})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(res.Objects)) != res.Rev {
			t.Fatalf("List() at rev %d returned %d objects, want %d", res.Rev, len(res.Objects), res.Rev)
		}
		for _, o := range res.Objects {
			if o.ModRev > res.Rev {
				t.Fatalf("List() at rev %d returned %v at rev %d", res.Rev, o.Key, o.ModRev)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}

// snapshot is what a list returned, in comparable form.
func snapshot(objs []Object) string {
	var b strings.Builder
	for _, o := range objs {
		fmt.Fprintf(&b, "%s/%s uid=%s c=%d m=%d %s\n", o.Key.Namespace, o.Key.Name, o.UID, o.CreateRev, o.ModRev, o.Value)
	}
	return b.String()
}

func TestDB_ListPast(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))

	// A random history of creates, updates, deletes and re-creates over
	// a few keys in two namespaces, remembering the list at every revision.
	type want struct{ all, ns1 string }
	at := map[int64]want{0: {}}
	live := map[Key]bool{}
	for i := 0; i < 150; i++ {
		k := key(fmt.Sprintf("ns%d", rng.IntN(2)), fmt.Sprintf("k%d", rng.IntN(8)))
		var err error
		switch {
		case !live[k]:
			_, err = db.Create(ctx, k, fmt.Sprintf("uid-%d", i), obj(k.Namespace, k.Name, fmt.Sprint(i)))
			live[k] = true
		case rng.IntN(3) == 0:
			_, err = db.Delete(ctx, k, Preconditions{})
			live[k] = false
		default:
			_, err = db.Update(ctx, k, Preconditions{}, obj(k.Namespace, k.Name, fmt.Sprint(i)))
		}
		if err != nil {
			t.Fatal(err)
		}
		all, err := db.List(ctx, ListOptions{Resource: "configmaps"})
		if err != nil {
			t.Fatal(err)
		}
		ns1, err := db.List(ctx, ListOptions{Resource: "configmaps", Namespace: "ns1"})
		if err != nil {
			t.Fatal(err)
		}
		at[all.Rev] = want{snapshot(all.Objects), snapshot(ns1.Objects)}
	}
	// Objects of another resource changing later must not leak in.
	if _, err := db.Create(ctx, Key{Resource: "secrets", Namespace: "ns0", Name: "k0"}, "u", obj("ns0", "k0", "")); err != nil {
		t.Fatal(err)
	}

	for rev := int64(0); rev <= db.Rev()-1; rev++ {
		w, ok := at[rev]
		if !ok {
			t.Fatalf("no list recorded at rev %d", rev)
		}
		if rev == 0 {
			continue // Rev 0 means "current"
		}
		res, err := db.List(ctx, ListOptions{Resource: "configmaps", Rev: rev})
		if err != nil {
			t.Fatalf("List(rev %d) error = %v", rev, err)
		}
		if got := snapshot(res.Objects); got != w.all || res.Rev != rev {
			t.Fatalf("List(rev %d) = rev %d\n%s\nwant\n%s", rev, res.Rev, got, w.all)
		}
		res, err = db.List(ctx, ListOptions{Resource: "configmaps", Namespace: "ns1", Rev: rev})
		if err != nil {
			t.Fatal(err)
		}
		if got := snapshot(res.Objects); got != w.ns1 {
			t.Fatalf("List(ns1, rev %d) =\n%s\nwant\n%s", rev, got, w.ns1)
		}

		// Paged, two at a time, at the same revision.
		var paged []Object
		opts := ListOptions{Resource: "configmaps", Rev: rev, Limit: 2}
		for {
			res, err := db.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			paged = append(paged, res.Objects...)
			if want := int64(strings.Count(w.all, "\n") - len(paged)); res.More && res.Remaining != want {
				t.Fatalf("List(rev %d, paged) Remaining = %d, want %d", rev, res.Remaining, want)
			}
			if !res.More {
				break
			}
			last := res.Objects[len(res.Objects)-1].Key
			opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
		}
		if got := snapshot(paged); got != w.all {
			t.Fatalf("List(rev %d, paged) =\n%s\nwant\n%s", rev, got, w.all)
		}
	}
}

// TestMergeList_ValuesOutliveRows: a list's values are the driver's own
// buffers (mergeList does not copy them), so each must keep its bytes
// after the rows that follow it are read, whatever their sizes.
func TestMergeList_ValuesOutliveRows(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	want := map[string]string{}
	for i := range 200 {
		name := fmt.Sprintf("o%03d", i)
		data := strings.Repeat(string(rune('a'+i%26)), 1+i*37%3000)
		want[name] = string(mustCreate(t, db, key("ns", name), data).Value)
	}
	res, err := db.List(ctx, ListOptions{Resource: "configmaps", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != len(want) {
		t.Fatalf("List() returned %d objects, want %d", len(res.Objects), len(want))
	}
	for _, o := range res.Objects {
		if got := string(o.Value); got != want[o.Key.Name] {
			t.Errorf("value of %s = %.40q… (%d bytes), want %.40q… (%d bytes)", o.Key.Name, got, len(got), want[o.Key.Name], len(want[o.Key.Name]))
		}
		if cap(o.Value) != len(o.Value) {
			t.Errorf("value of %s has cap %d, want its length %d (an append must not reach past it)", o.Key.Name, cap(o.Value), len(o.Value))
		}
	}
}

func TestOwnedValue_Keep(t *testing.T) {
	shared := []byte("first value")
	fresh := []byte("second value")
	var a arena
	var w ownedValue

	got := w.keep(fresh, &a)
	if unsafe.SliceData(got) != unsafe.SliceData(fresh) || string(got) != "second value" {
		t.Errorf("keep(new buffer) = %q at a copy, want the buffer itself", got)
	}
	got = w.keep(shared, &a)
	if unsafe.SliceData(got) != unsafe.SliceData(shared) {
		t.Errorf("keep(another new buffer) copied it, want the buffer itself")
	}
	// The driver hands out the same buffer again: from now on, copies.
	reused := shared[:5]
	got = w.keep(reused, &a)
	if unsafe.SliceData(got) == unsafe.SliceData(reused) || string(got) != "first" {
		t.Errorf("keep(reused buffer) = %q, want a copy of %q", got, "first")
	}
	got = w.keep(fresh, &a)
	if unsafe.SliceData(got) == unsafe.SliceData(fresh) || string(got) != "second value" {
		t.Errorf("keep(new buffer after a reuse) = %q, want a copy", got)
	}
	if got := w.keep(nil, &a); len(got) != 0 {
		t.Errorf("keep(nil) = %q, want empty", got)
	}
}

// TestDB_ListObjectsBuffer: a list given ListOptions.Objects returns its
// objects in that slice, from its start, and pages read one into the
// other's slice each hold their own objects.
func TestDB_ListObjectsBuffer(t *testing.T) {
	db := openTest(t, Config{})
	ctx := context.Background()
	var all []string
	for i := range 10 {
		name := fmt.Sprintf("o%02d", i)
		mustCreate(t, db, key("ns", name), name)
		all = append(all, "ns/"+name)
	}
	buf := make([]Object, 2, 8)
	res, err := db.List(ctx, ListOptions{Resource: "configmaps", Limit: 4, Objects: buf})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res.Objects); strings.Join(got, " ") != strings.Join(all[:4], " ") {
		t.Errorf("List(Objects: buf) = %v, want %v", got, all[:4])
	}
	if &res.Objects[0] != &buf[:1][0] {
		t.Errorf("List(Objects: buf) returned a new slice, want buf's array")
	}

	var got []string
	o := ListOptions{Resource: "configmaps", Limit: 3}
	for {
		res, err := db.List(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range res.Objects {
			got = append(got, obj.Key.Namespace+"/"+obj.Key.Name)
			if !bytes.Contains(obj.Value, []byte(`"`+obj.Key.Name+`"`)) {
				t.Errorf("%s: value %s is another object's", obj.Key.Name, obj.Value)
			}
		}
		if !res.More {
			break
		}
		last := res.Objects[len(res.Objects)-1].Key
		o.AfterNamespace, o.AfterName, o.Objects = last.Namespace, last.Name, res.Objects
	}
	if strings.Join(got, " ") != strings.Join(all, " ") {
		t.Errorf("pages read into each other's slices = %v, want %v", got, all)
	}
}
