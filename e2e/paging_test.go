package e2e

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kube-apiserver's messages for a LIST whose revision has been compacted
// (k8s.io/apiserver/pkg/storage/etcd3/store.go).
const (
	listExpiredMessage          = "The resourceVersion for the provided list is too old."
	inconsistentContinueMessage = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
)

// createConfigMaps creates n ConfigMaps name-0000... in ns with 16 writers.
func createConfigMaps(t *testing.T, cs kubernetes.Interface, ns, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	var next atomic.Int64
	errc := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				name := fmt.Sprintf("%s%04d", prefix, i)
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{}); err != nil {
					errc <- fmt.Errorf("create %s: %w", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func itemLines(items []corev1.ConfigMap) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, cmLine(&items[i]))
	}
	return out
}

// TestList_PagingConsistent lists 1,253 ConfigMaps in pages of 500 while
// another goroutine creates, updates and deletes ConfigMaps in the same
// namespace: the pages are 500, 500 and 253 items, all at the first page's
// resourceVersion, with kube-apiserver's remainingItemCount (753, 253, then
// none), none of the concurrent writes show, and together they equal an
// Exact list at that resourceVersion.
func TestList_PagingConsistent(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "paging"
	createNamespace(t, cs, ns)
	createConfigMaps(t, cs, ns, "cm-", 1253)

	base := "/api/v1/namespaces/" + ns + "/configmaps"
	page1 := rawGet(t, d, base+"?limit=500").cmList(t, "page 1")
	listRV := mustRV(t, page1.ResourceVersion)

	// The writer: updates and deletes of listed ConfigMaps, and creates of
	// names that sort before, among and after them.
	stop := make(chan struct{})
	done := make(chan error, 1)
	var writes atomic.Int64
	go func() {
		done <- func() error {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return nil
				default:
				}
				var err error
				switch i % 4 {
				case 0:
					var cm *corev1.ConfigMap
					cm, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, fmt.Sprintf("cm-%04d", (i*7)%1253), metav1.GetOptions{})
					if err == nil {
						cm.Data = map[string]string{"v": "changed"}
						_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
					}
				case 1:
					err = cs.CoreV1().ConfigMaps(ns).Delete(ctx, fmt.Sprintf("cm-%04d", (i*13)%1253), metav1.DeleteOptions{})
				case 2:
					_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d-late-%d", (i*5)%1253, i)}}, metav1.CreateOptions{})
				case 3:
					_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("late-%d", i)}}, metav1.CreateOptions{})
					if err == nil {
						_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a-late-%d", i)}}, metav1.CreateOptions{})
					}
				}
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return err
				}
				writes.Add(1)
			}
		}()
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	// Let the writer get going before each of the next pages.
	waitWrites := func(n int64) {
		waitFor(t, fmt.Sprintf("%d concurrent writes", n), func() bool { return writes.Load() >= n })
	}

	waitWrites(40)
	page2 := rawGet(t, d, base+"?limit=500&continue="+url.QueryEscape(page1.Continue)).cmList(t, "page 2")
	waitWrites(writes.Load() + 40)
	page3 := rawGet(t, d, base+"?limit=500&continue="+url.QueryEscape(page2.Continue)).cmList(t, "page 3")
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("concurrent writer: %v", err)
	}
	t.Logf("%d concurrent writes during the paged list at %d", writes.Load(), listRV)

	pages := []corev1.ConfigMapList{page1, page2, page3}
	wantCounts := []int{500, 500, 253}
	wantRemaining := []*int64{ptr(int64(753)), ptr(int64(253)), nil}
	var all []corev1.ConfigMap
	for i, p := range pages {
		if got := len(p.Items); got != wantCounts[i] {
			t.Errorf("page %d: %d items, want %d", i+1, got, wantCounts[i])
		}
		if got := mustRV(t, p.ResourceVersion); got != listRV {
			t.Errorf("page %d: resourceVersion %d, want the first page's %d", i+1, got, listRV)
		}
		if got, want := p.RemainingItemCount, wantRemaining[i]; (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("page %d: remainingItemCount %v, want %v", i+1, deref(got), deref(want))
		}
		if (p.Continue == "") != (i == 2) {
			t.Errorf("page %d: continue %q, want a token on every page but the last", i+1, p.Continue)
		}
		for _, cm := range p.Items {
			if rv := mustRV(t, cm.ResourceVersion); rv > listRV {
				t.Errorf("page %d: %s has resourceVersion %d, newer than the list's %d: a concurrent write leaked", i+1, cm.Name, rv, listRV)
			}
		}
		all = append(all, p.Items...)
	}
	got := itemLines(all)
	if !sort.StringsAreSorted(got) {
		t.Errorf("pages are not in name order")
	}
	for i := 1; i < len(all); i++ {
		if all[i].Name == all[i-1].Name {
			t.Errorf("%s appears twice", all[i].Name)
		}
	}
	var want []string
	for i := 0; i < 1253; i++ {
		want = append(want, fmt.Sprintf("cm-%04d", i))
	}
	var names []string
	for _, cm := range all {
		names = append(names, cm.Name)
	}
	if d := lineDiff(names, want); d != "" {
		t.Errorf("the pages' names differ from the 1,253 created before the list (- pages only, + missing):\n%s", d)
	}
	exact := rawGet(t, d, fmt.Sprintf("%s?resourceVersion=%d&resourceVersionMatch=Exact", base, listRV)).cmList(t, "Exact list at the pages' resourceVersion")
	if d := lineDiff(got, itemLines(exact.Items)); d != "" {
		t.Errorf("the pages differ from an Exact list at %d (- pages only, + Exact only):\n%s", listRV, d)
	}
	// And the current state is different, so the check above means something.
	now := rawGet(t, d, base).cmList(t, "list now")
	if lineDiff(itemLines(now.Items), got) == "" {
		t.Errorf("the concurrent writes changed nothing?")
	}

	// client-go's pager over the same namespace sees one consistent
	// snapshot too (no writer now): it must equal a plain LIST.
	t.Run("ClientGoLimit", func(t *testing.T) {
		var items []corev1.ConfigMap
		opts := metav1.ListOptions{Limit: 200}
		var rv string
		for {
			l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if rv == "" {
				rv = l.ResourceVersion
			} else if l.ResourceVersion != rv {
				t.Errorf("page resourceVersion %s, want %s", l.ResourceVersion, rv)
			}
			items = append(items, l.Items...)
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
		if d := lineDiff(itemLines(items), itemLines(now.Items)); d != "" {
			t.Errorf("client-go pages differ from a LIST:\n%s", d)
		}
	})
}

// TestList_ContinueAfterCompaction: a continue token whose revision has been
// compacted gets kube-apiserver's 410 Expired with a fresh continue token in
// the Status's metadata; that token continues the list, inconsistently, at
// the current revision. An Exact list at a compacted revision is 410 too.
func TestList_ContinueAfterCompaction(t *testing.T) {
	t.Parallel()
	d := startDaemonArgs(t, "--compaction-interval", "1s")
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "continue-compacted"
	createNamespace(t, cs, ns)
	createConfigMaps(t, cs, ns, "cm-", 12)
	base := "/api/v1/namespaces/" + ns + "/configmaps"

	page1 := rawGet(t, d, base+"?limit=5").cmList(t, "page 1")
	listRV := mustRV(t, page1.ResourceVersion)
	if page1.Continue == "" {
		t.Fatalf("page 1 has no continue token")
	}
	// Change an object on the next page, and add one at the end.
	cm7, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0007", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm7.Data = map[string]string{"v": "changed"}
	if cm7, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm7, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-zz-late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCompactedPast(t, d, cs, "default", listRV)

	r := rawGet(t, d, base+"?limit=5&continue="+url.QueryEscape(page1.Continue))
	if r.Status != 410 {
		t.Fatalf("continue from compacted revision %d: got %d %s, want 410", listRV, r.Status, r.Body)
	}
	st := r.status(t)
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != inconsistentContinueMessage || st.Details != nil {
		t.Errorf("continue from compacted revision: got %s,\nwant a v1 Status Failure 410 Expired with message %q and no details", r.Body, inconsistentContinueMessage)
	}
	if st.Continue == "" {
		t.Fatalf("410 for a compacted continue token: metadata.continue is empty, want a token to continue inconsistently (kube-apiserver's handleCompactedErrorForPaging): %s", r.Body)
	}

	// The fresh token continues after cm-0004 at the current state.
	var items []corev1.ConfigMap
	tok := st.Continue
	var firstRV int64
	for page := 2; tok != ""; page++ {
		l := rawGet(t, d, base+"?limit=5&continue="+url.QueryEscape(tok)).cmList(t, fmt.Sprintf("page %d from the fresh token", page))
		rv := mustRV(t, l.ResourceVersion)
		if firstRV == 0 {
			firstRV = rv
			if rv < mustRV(t, cm7.ResourceVersion) {
				t.Errorf("the inconsistent continuation is at revision %d, want the current one (at least %s)", rv, cm7.ResourceVersion)
			}
		} else if rv != firstRV {
			t.Errorf("page %d: resourceVersion %d, want %d like the continuation's first page", page, rv, firstRV)
		}
		items = append(items, l.Items...)
		tok = l.Continue
		if page > 10 {
			t.Fatalf("the continuation doesn't end")
		}
	}
	var got []string
	for _, cm := range items {
		got = append(got, cm.Name+"="+cm.Data["v"])
	}
	want := []string{"cm-0005=0", "cm-0006=0", "cm-0007=changed", "cm-0008=0", "cm-0009=0", "cm-0010=0", "cm-0011=0", "cm-zz-late="}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the inconsistent continuation listed %v, want %v", got, want)
	}

	t.Run("ExactListCompacted", func(t *testing.T) {
		for _, q := range []string{
			"resourceVersion=" + strconv.FormatInt(listRV, 10) + "&resourceVersionMatch=Exact",
			// limit with a resourceVersion and no resourceVersionMatch is Exact.
			"resourceVersion=" + strconv.FormatInt(listRV, 10) + "&limit=5",
		} {
			r := rawGet(t, d, base+"?"+q)
			if r.Status != 410 {
				t.Errorf("LIST ?%s (compacted): got %d %s, want 410", q, r.Status, r.Body)
				continue
			}
			st := r.status(t)
			if st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != listExpiredMessage {
				t.Errorf("LIST ?%s (compacted): got %s, want 410 Expired %q", q, r.Body, listExpiredMessage)
			}
		}
		// NotOlderThan at a compacted revision is fine: the current state.
		l := rawGet(t, d, base+"?resourceVersionMatch=NotOlderThan&resourceVersion="+strconv.FormatInt(listRV, 10)).cmList(t, "NotOlderThan at a compacted revision")
		if len(l.Items) != 13 {
			t.Errorf("NotOlderThan at a compacted revision: %d items, want 13", len(l.Items))
		}
	})
}

// TestList_RemainingItemCountTwoLists follows two paged lists that start
// after the same ConfigMap at different resourceVersions, with deletes
// between them: each page's remainingItemCount is the count at its own
// list's resourceVersion (later pages take it from the page before, so
// one list's count must never leak into the other's).
func TestList_RemainingItemCountTwoLists(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "remaining"
	createNamespace(t, cs, ns)
	createConfigMaps(t, cs, ns, "cm-", 10)
	base := "/api/v1/namespaces/" + ns + "/configmaps?limit=3"

	a1 := rawGet(t, d, base).cmList(t, "list A page 1")
	for _, name := range []string{"cm-0005", "cm-0007"} {
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b1 := rawGet(t, d, base).cmList(t, "list B page 1")
	b2 := rawGet(t, d, base+"&continue="+url.QueryEscape(b1.Continue)).cmList(t, "list B page 2")
	a2 := rawGet(t, d, base+"&continue="+url.QueryEscape(a1.Continue)).cmList(t, "list A page 2")
	a3 := rawGet(t, d, base+"&continue="+url.QueryEscape(a2.Continue)).cmList(t, "list A page 3")

	tests := []struct {
		what string
		page corev1.ConfigMapList
		last string
		want *int64
	}{
		{what: "list A page 1", page: a1, last: "cm-0002", want: ptr(int64(7))},
		{what: "list A page 2", page: a2, last: "cm-0005", want: ptr(int64(4))},
		{what: "list A page 3", page: a3, last: "cm-0008", want: ptr(int64(1))},
		{what: "list B page 1", page: b1, last: "cm-0002", want: ptr(int64(5))},
		{what: "list B page 2", page: b2, last: "cm-0006", want: ptr(int64(2))},
	}
	for _, tt := range tests {
		if n := len(tt.page.Items); n != 3 || tt.page.Items[n-1].Name != tt.last {
			t.Errorf("%s: %d items ending %v, want 3 ending %s", tt.what, n, itemLines(tt.page.Items), tt.last)
		}
		if got := tt.page.RemainingItemCount; got == nil || *got != *tt.want {
			t.Errorf("%s: remainingItemCount %v, want %d", tt.what, deref(got), *tt.want)
		}
	}
	if a1.ResourceVersion == b1.ResourceVersion {
		t.Errorf("both lists at resourceVersion %s: the deletes between them did not count", a1.ResourceVersion)
	}
}
