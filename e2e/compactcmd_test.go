package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataDirBytes is the size of the data dir's database and its WAL.
func dataDirBytes(t *testing.T, dataDir string) int64 {
	t.Helper()
	var n int64
	for _, name := range []string{"edgeapi.db", "edgeapi.db-wal"} {
		fi, err := os.Stat(filepath.Join(dataDir, name))
		if err == nil {
			n += fi.Size()
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return n
}

// TestCompactDefrag grows a database (creates, updates, then deletes of
// most objects), and with the daemon stopped runs `edgeapi compact` and
// `edgeapi defrag`: both refuse while the daemon runs; afterwards the
// files are smaller, `edgeapi check` passes, the daemon starts and serves
// the objects left, and a watch from before the compaction gets 410 Gone.
func TestCompactDefrag(t *testing.T) {
	requireSQLite(t)
	t.Parallel()
	const (
		ns   = "defrag"
		n    = 300
		kept = 30
	)
	d := StartDaemon(t)
	createNamespace(t, d.Clientset(), ns)
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	body := func(name string, i int) []byte {
		return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"i":"%d","pad":%q}}`,
			name, i, strings.Repeat("x", 8<<10)))
	}
	for i := range n {
		name := fmt.Sprintf("cm-%03d", i)
		if res := doRaw(t, d, http.MethodPost, base, "application/json", "application/json", body(name, i)); res.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, res.Status, res.Body)
		}
		for u := 1; u <= 2; u++ {
			if res := doRaw(t, d, http.MethodPut, base+"/"+name, "application/json", "application/json", body(name, i+u*1000)); res.Status != http.StatusOK {
				t.Fatalf("update %s: %d %s", name, res.Status, res.Body)
			}
		}
	}
	old := listCMs(t, d, ns)
	for i := kept; i < n; i++ {
		name := fmt.Sprintf("cm-%03d", i)
		if res := doRaw(t, d, http.MethodDelete, base+"/"+name, "", "application/json", nil); res.Status != http.StatusOK {
			t.Fatalf("delete %s: %d %s", name, res.Status, res.Body)
		}
	}
	last := listCMs(t, d, ns)

	for _, cmd := range []string{"compact", "defrag"} {
		if _, errOut, code := edgeapiTool(t, cmd, "--data-dir", d.DataDir); code == 0 || !strings.Contains(errOut, "in use by another edgeapi") {
			t.Errorf("edgeapi %s beside the daemon: exit %d, stderr %q; want a failure naming the lock", cmd, code, errOut)
		}
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	before := dataDirBytes(t, d.DataDir)

	out, errOut, code := edgeapiTool(t, "compact", "--data-dir", d.DataDir)
	if code != 0 {
		t.Fatalf("edgeapi compact: exit %d: %s%s", code, out, errOut)
	}
	t.Logf("edgeapi compact: %s", strings.TrimSpace(out))
	compacted := dataDirBytes(t, d.DataDir)
	out, errOut, code = edgeapiTool(t, "defrag", "--data-dir", d.DataDir)
	if code != 0 {
		t.Fatalf("edgeapi defrag: exit %d: %s%s", code, out, errOut)
	}
	t.Logf("edgeapi defrag: %s", strings.TrimSpace(out))
	after := dataDirBytes(t, d.DataDir)
	t.Logf("database and WAL: %d bytes, %d after compact, %d after defrag", before, compacted, after)
	// 30 objects of 8 KiB (about 0.5 MiB with their managedFields) are
	// left of some 900 writes of 8 KiB.
	if after >= before/4 || after > compacted {
		t.Errorf("database and WAL: %d bytes, %d after compact, %d after defrag; want a quarter or less, and defrag no larger", before, compacted, after)
	}
	if out, errOut, code := edgeapiTool(t, "check", "--data-dir", d.DataDir); code != 0 {
		t.Errorf("edgeapi check after compact and defrag: exit %d: %s%s", code, out, errOut)
	}

	d = StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	got := listCMs(t, d, ns)
	if len(got.objects) != kept {
		t.Errorf("after compact and defrag: %d objects, want %d", len(got.objects), kept)
	}
	for name, cm := range last.objects {
		if g, ok := got.objects[name]; !ok || g.Data["i"] != cm.Data["i"] || g.ResourceVersion != cm.ResourceVersion {
			t.Errorf("after compact and defrag: %s is %v (rv %s), want i=%s rv %s", name, g.Data["i"], g.ResourceVersion, cm.Data["i"], cm.ResourceVersion)
		}
	}
	if got.rv < last.rv {
		t.Errorf("after compact and defrag: list resourceVersion %d, want at least %d", got.rv, last.rv)
	}
	for _, rv := range []int64{old.rv, last.rv - 1} {
		if _, expired := watchUntilTimeout(t, d, base, rv); expired == "" {
			t.Errorf("a watch from resourceVersion %d (before the compaction) did not get 410 Gone", rv)
		}
	}
	// The current revision is not compacted: a watch from it works.
	if _, expired := watchUntilTimeout(t, d, base, got.rv); expired != "" {
		t.Errorf("a watch from the current resourceVersion %d: %s", got.rv, expired)
	}
	if res := doRaw(t, d, http.MethodPost, base, "application/json", "application/json", body("new", 0)); res.Status != http.StatusCreated {
		t.Errorf("create after compact and defrag: %d %s", res.Status, res.Body)
	}
}
