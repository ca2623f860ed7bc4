package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestQuotaBackendBytes runs the daemon with a 4 MiB --quota-backend-bytes
// and fills it with 32 KiB ConfigMaps: past the quota creates and updates
// get a 507 Status that says the database space is exceeded, without
// Retry-After; reads and deletes work; /readyz stays ready and its verbose
// form shows the condition, as the log does; a restart over quota starts
// and serves reads; and once the objects are deleted and the
// change log compacted, writes succeed again without a restart.
func TestQuotaBackendBytes(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	const ns = "quota"
	// Until the deletes, the daemon runs without compaction each second:
	// compacting the creates' history frees room, which could clear the
	// over-quota state before the checks below when the daemon is slow
	// (under emulation, scripts/test-arch). Then it restarts with it.
	opts := DaemonOptions{DataDir: t.TempDir(), Args: []string{"--quota-backend-bytes", "4Mi", "--compaction-interval", "1s"}}
	held := DaemonOptions{DataDir: opts.DataDir, Args: []string{"--quota-backend-bytes", "4Mi", "--compaction-interval", "1h"}}
	d := StartDaemon(t, held)
	createNamespace(t, d.Clientset(), ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	create := func(name string, i int) httpResult {
		return doRaw(t, d, http.MethodPost, base, "application/json", "application/json", diskFullCM(name, i))
	}

	var created []string
	var refused httpResult
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatalf("1000 creates of 32 KiB under a 4 MiB quota and none refused")
		}
		name := fmt.Sprintf("cm-%d", i)
		res := create(name, i)
		if res.Status != http.StatusCreated {
			refused = res
			break
		}
		created = append(created, name)
	}
	if len(created) == 0 {
		t.Fatalf("the first create was refused: %d %s", refused.Status, refused.Body)
	}
	checkQuotaExceeded(t, "create", refused)

	cur := rawGet(t, d, base+"/"+created[0])
	if cur.Status != http.StatusOK {
		t.Fatalf("get over quota: %d %s", cur.Status, cur.Body)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(cur.Body, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["i"] = "changed"
	checkQuotaExceeded(t, "update", doRaw(t, d, http.MethodPut, base+"/"+created[0], "application/json", "application/json", mustJSON(t, cm)))
	if got := rawGet(t, d, base+"/"+created[0]); string(got.Body) != string(cur.Body) {
		t.Errorf("%s changed after a refused update:\ngot  %s\nwant %s", created[0], got.Body, cur.Body)
	}
	if got := listCMs(t, d, ns); len(got.objects) != len(created) {
		t.Errorf("list over quota: %d objects, want %d", len(got.objects), len(created))
	}

	ready := rawGet(t, d, "/readyz?verbose")
	if ready.Status != http.StatusOK || !strings.Contains(string(ready.Body), "quota_exceeded=true") {
		t.Errorf("/readyz?verbose over quota: %d %s, want 200 with quota_exceeded=true", ready.Status, ready.Body)
	}

	if out := d.output.String(); !strings.Contains(out, "database space exceeded: the database has reached its quota") {
		t.Errorf("the daemon's log does not say the quota was reached")
	}

	// A restart over quota: the daemon starts, gets ready, serves reads
	// and still refuses creates.
	if err := d.Stop(); err != nil {
		t.Fatalf("stop over quota: %v", err)
	}
	d = StartDaemon(t, held)
	if got := rawGet(t, d, base+"/"+created[0]); got.Status != http.StatusOK {
		t.Errorf("get after a restart over quota: %d %s", got.Status, got.Body)
	}
	checkQuotaExceeded(t, "create after a restart", create("restarted", 0))
	if err := d.Stop(); err != nil {
		t.Fatalf("stop over quota: %v", err)
	}
	d = StartDaemon(t, opts)

	for _, name := range created {
		if res := doRaw(t, d, http.MethodDelete, base+"/"+name, "", "application/json", nil); res.Status != http.StatusOK {
			t.Fatalf("delete %s over quota: %d %s", name, res.Status, res.Body)
		}
	}
	// The deleted objects stay in the change log until the compactor (every
	// second here) compacts them; then creates succeed again.
	deadline := time.Now().Add(eventually)
	for i := 0; ; i++ {
		res := create(fmt.Sprintf("after-%d", i), i)
		if res.Status == http.StatusCreated {
			break
		}
		checkQuotaExceeded(t, "create while space is reclaimed", res)
		if time.Now().After(deadline) {
			t.Fatalf("creates still refused %v after deleting every object", eventually)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The create that succeeded may itself take the database to the quota
	// again while the compactor is still freeing the deletes' history; the
	// condition clears once it has.
	waitFor(t, "quota_exceeded=false in /readyz?verbose", func() bool {
		ready := rawGet(t, d, "/readyz?verbose")
		return ready.Status == http.StatusOK && strings.Contains(string(ready.Body), "quota_exceeded=false")
	})
	if out := d.output.String(); !strings.Contains(out, "database back under its quota") {
		t.Errorf("the daemon's log does not say the database is back under its quota")
	}
	t.Logf("%d objects of 32 KiB fit under the 4 MiB quota", len(created))
}

// checkQuotaExceeded checks the answer to a write refused because the
// database reached its quota: a 507 Status with etcd's words and no
// Retry-After.
func checkQuotaExceeded(t *testing.T, what string, res httpResult) {
	t.Helper()
	if res.Status != http.StatusInsufficientStorage {
		t.Fatalf("%s over quota: %d %s, want 507", what, res.Status, res.Body)
	}
	var st metav1.Status
	if err := json.Unmarshal(res.Body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("%s over quota: body %s is not a Status (%v)", what, res.Body, err)
	}
	if st.Code != http.StatusInsufficientStorage || st.Reason != "InsufficientStorage" ||
		!strings.Contains(st.Message, "database space exceeded") || !strings.Contains(st.Message, "quota") {
		t.Errorf("%s over quota: Status %+v", what, st)
	}
	if got := res.Header.Get("Retry-After"); got != "" {
		t.Errorf("%s over quota: Retry-After %q, want none", what, got)
	}
}

// sizeStats are the change-log figures of /debug/edgeapi/stats.
type sizeStats struct {
	Rev, CompactedRev, ChangeLogRows, SizeCompactions int64
}

func storeSizeStats(t *testing.T, d *Daemon) sizeStats {
	t.Helper()
	got := rawGet(t, d, "/debug/edgeapi/stats")
	var s struct {
		Store sizeStats `json:"store"`
	}
	if got.Status != http.StatusOK {
		t.Fatalf("stats: %d %s", got.Status, got.Body)
	}
	if err := json.Unmarshal(got.Body, &s); err != nil {
		t.Fatalf("stats: %v", err)
	}
	return s.Store
}

// TestCompactionMaxRows runs the daemon with a compaction interval of an
// hour and --compaction-max-rows 200, writes 600 changes, and sees the
// change log compacted anyway: a watch from before is told 410 Gone, and
// one from within the newest 100 revisions still starts.
func TestCompactionMaxRows(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	const ns, maxRows = "sizebound", 200
	d := StartDaemon(t, DaemonOptions{Args: []string{"--compaction-interval", "1h", "--compaction-max-rows", fmt.Sprint(maxRows)}})
	createNamespace(t, d.Clientset(), ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	first := int64(0)
	for i := range 3 * maxRows {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"i":"%d"}}`, i, i)
		res := doRaw(t, d, http.MethodPost, base, "application/json", "application/json", []byte(body))
		if res.Status != http.StatusCreated {
			t.Fatalf("create cm-%d: %d %s", i, res.Status, res.Body)
		}
		if i == 0 {
			var cm metav1.PartialObjectMetadata
			if err := json.Unmarshal(res.Body, &cm); err != nil {
				t.Fatal(err)
			}
			first = mustRV(t, cm.ResourceVersion)
		}
	}
	waitFor(t, "a compaction for the change log's size", func() bool { return storeSizeStats(t, d).SizeCompactions > 0 })
	st := storeSizeStats(t, d)
	if st.ChangeLogRows > maxRows || st.CompactedRev <= first {
		t.Errorf("after the size compaction: %+v, want at most %d change-log rows and compacted past %d", st, maxRows, first)
	}
	old := rawGet(t, d, fmt.Sprintf("%s?watch=1&resourceVersion=%d&timeoutSeconds=1", base, first))
	if !strings.Contains(string(old.Body), `"code":410`) {
		t.Errorf("watch from %d after the size compaction: %d %s, want an ERROR 410 event", first, old.Status, old.Body)
	}
	recent := rawGet(t, d, fmt.Sprintf("%s?watch=1&resourceVersion=%d&timeoutSeconds=1", base, st.Rev-maxRows/2+1))
	if recent.Status != http.StatusOK || strings.Contains(string(recent.Body), `"code":410`) {
		t.Errorf("watch from within the newest %d revisions: %d %s, want it to start", maxRows/2, recent.Status, recent.Body)
	}
}
