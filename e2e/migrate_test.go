//go:build etcd

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// This file tests `edgeapi migrate` end to end, with the binary built
// with the etcd backend (edgeapi-ha): a SQLite daemon's objects move to
// a real etcd, at kube-apiserver's key layout, and back to a new SQLite
// data dir, keeping every object's uid, creationTimestamp and content,
// while watches, continue tokens and resourceVersions from before the
// move get 410 Gone (or 409 for an update).
//
// Run it with: go test -tags etcd -run TestMigrate ./e2e (EDGEAPI_ETCD
// names the etcd binary; EDGEAPI_HA_BIN a prebuilt edgeapi-ha).

var (
	haBinOnce sync.Once
	haBinPath string
	haBinErr  error
)

// haBinary returns edgeapi built with the tag etcd: $EDGEAPI_HA_BIN, or
// built once per test run.
func haBinary(t *testing.T) string {
	t.Helper()
	haBinOnce.Do(func() {
		if p := os.Getenv("EDGEAPI_HA_BIN"); p != "" {
			haBinPath = p
			_, haBinErr = os.Stat(p)
			return
		}
		buildDirOnce.Do(func() { buildDir, buildDirErr = os.MkdirTemp("", "edgeapi-e2e-bin-") })
		if buildDirErr != nil {
			haBinErr = buildDirErr
			return
		}
		out := filepath.Join(buildDir, "edgeapi-ha")
		cmd := exec.Command("go", "build", "-tags", "etcd", "-o", out, "./daemon")
		cmd.Dir = moduleRoot
		if msg, err := cmd.CombinedOutput(); err != nil {
			haBinErr = fmt.Errorf("go build -tags etcd ./daemon: %v\n%s", err, msg)
			return
		}
		haBinPath = out
	})
	if haBinErr != nil {
		t.Fatalf("edgeapi-ha: %v", haBinErr)
	}
	return haBinPath
}

// startMigrateEtcd starts a single-member etcd of the test's own (with
// etcd's default request size bound, which the too-large test relies on),
// stopped when the test ends, and returns its client URL. The test is
// skipped when there is no etcd binary.
func startMigrateEtcd(t *testing.T) string {
	t.Helper()
	if _, err := etcdBinary(); err != nil {
		t.Skipf("no etcd binary: %v", err)
	}
	e, err := startEtcdWith(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e.URL
}

// runMigrate runs edgeapi-ha migrate with args and returns its output and
// exit code.
func runMigrate(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runTool(t, haBinary(t), append([]string{"migrate"}, args...), nil, "")
}

// mustMigrate runs migrate and fails the test unless it exits 0.
func mustMigrate(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, code := runMigrate(t, args...)
	if code != 0 {
		t.Fatalf("edgeapi migrate %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
	}
	t.Logf("edgeapi migrate %v:\n%s", args, stdout)
	return stdout
}

// migratedRe reads the object count and source revision from migrate's
// summary.
var migratedRe = regexp.MustCompile(`migrated (\d+) objects from \S+ \(revision (\d+)\)`)

// migrateSummary returns the objects and source revision migrate reported.
func migrateSummary(t *testing.T, out string) (objects int, srcRev int64) {
	t.Helper()
	m := migratedRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("migrate printed no summary:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n, mustRV(t, m[2])
}

// migrateObject is one object the test created: where the API serves it,
// where etcd keeps it, and its state before the move.
type migrateObject struct {
	path    string // API path
	etcdKey string
	obj     map[string]any
}

// postJSON creates an object with a raw POST and returns it.
func postJSON(t *testing.T, d *Daemon, collection, body string) map[string]any {
	t.Helper()
	res := doRaw(t, d, http.MethodPost, collection, "application/json", "application/json", []byte(body))
	if res.Status != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", collection, res.Status, res.Body)
	}
	return decodeObject(t, res.Body)
}

func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// meta returns obj's metadata.field as a string.
func meta(obj map[string]any, field string) string {
	m, _ := obj["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

// withoutRV returns a copy of obj without metadata.resourceVersion.
func withoutRV(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	c := decodeObject(t, b)
	delete(c["metadata"].(map[string]any), "resourceVersion")
	return c
}

// firstWatchEvent opens a watch at path and returns its HTTP status and
// first line (an event), bounded by a hang guard.
func firstWatchEvent(t *testing.T, d *Daemon, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil && line == "" {
		t.Fatalf("GET %s: read first event: %v", path, err)
	}
	return resp.StatusCode, line
}

const migrateCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"widgets.migrate.edgeapi.test"},
"spec":{"group":"migrate.edgeapi.test","scope":"Namespaced",
"names":{"plural":"widgets","singular":"widget","kind":"Widget"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
"spec":{"type":"object","properties":{"size":{"type":"integer"},"color":{"type":"string"}}}}}}}]}}`

// TestMigrate_RoundTrip moves a SQLite daemon's objects to etcd and back
// to a new SQLite data dir, checking the etcd layout on the way and every
// object at the end.
func TestMigrate_RoundTrip(t *testing.T) {
	etcdURL := startMigrateEtcd(t)
	haBinary(t)
	enc := writeEncConfig(t, encProvider("aesgcm", "key1", encKey(t, 32)), "  - identity: {}")
	srcDir := t.TempDir()
	d := StartDaemon(t, DaemonOptions{DataDir: srcDir, SQLite: true, Args: []string{"--encryption-provider-config", enc}})

	var objs []migrateObject
	add := func(path, etcdKey string, obj map[string]any) {
		objs = append(objs, migrateObject{path: path, etcdKey: etcdKey, obj: obj})
	}
	for _, ns := range []string{"mig-a", "mig-a-b"} {
		o := postJSON(t, d, "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`","labels":{"team":"x"}}}`)
		add("/api/v1/namespaces/"+ns, "/registry/namespaces/"+ns, o)
	}
	for _, k := range []struct{ ns, name string }{{"mig-a", "c1"}, {"mig-a", "c2"}, {"mig-a", "c3"}, {"mig-a-b", "c1"}} {
		postJSON(t, d, "/api/v1/namespaces/"+k.ns+"/configmaps",
			`{"metadata":{"name":"`+k.name+`","labels":{"app":"m"},"annotations":{"note":"kept"}},"data":{"k":"`+k.ns+"/"+k.name+`"}}`)
	}
	// An update (create and modify revisions differ) and a delete (the
	// object must not come back).
	res := doRaw(t, d, http.MethodPatch, "/api/v1/namespaces/mig-a/configmaps/c1", "application/merge-patch+json", "application/json",
		[]byte(`{"data":{"k2":"patched"}}`))
	if res.Status != http.StatusOK {
		t.Fatalf("patch c1: %d %s", res.Status, res.Body)
	}
	if res := doRaw(t, d, http.MethodDelete, "/api/v1/namespaces/mig-a/configmaps/c3", "", "application/json", nil); res.Status != http.StatusOK {
		t.Fatalf("delete c3: %d %s", res.Status, res.Body)
	}
	for _, k := range []struct{ ns, name string }{{"mig-a", "c1"}, {"mig-a", "c2"}, {"mig-a-b", "c1"}} {
		path := "/api/v1/namespaces/" + k.ns + "/configmaps/" + k.name
		add(path, "/registry/configmaps/"+k.ns+"/"+k.name, decodeObject(t, rawGet(t, d, path).Body))
	}
	marker := secretMarker(t)
	add("/api/v1/namespaces/mig-a/secrets/s1", "/registry/secrets/mig-a/s1",
		postJSON(t, d, "/api/v1/namespaces/mig-a/secrets", `{"metadata":{"name":"s1"},"type":"Opaque","stringData":{"password":"`+marker+`"}}`))
	add("/api/v1/namespaces/mig-a/services/svc", "/registry/services/specs/mig-a/svc",
		postJSON(t, d, "/api/v1/namespaces/mig-a/services", `{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80,"targetPort":8080}],"selector":{"app":"m"}}}`))
	postJSON(t, d, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", migrateCRD)
	crs := "/apis/migrate.edgeapi.test/v1/namespaces/mig-a/widgets"
	for deadline := time.Now().Add(eventually); rawGet(t, d, crs).Status != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("widgets not served after %v", eventually)
		}
	}
	for _, name := range []string{"w1", "w2"} {
		add(crs+"/"+name, "/registry/migrate.edgeapi.test/widgets/mig-a/"+name,
			postJSON(t, d, crs, `{"apiVersion":"migrate.edgeapi.test/v1","kind":"Widget","metadata":{"name":"`+name+`"},"spec":{"size":3,"color":"red"}}`))
	}
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.migrate.edgeapi.test"
	add(crdPath, "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.migrate.edgeapi.test",
		decodeObject(t, rawGet(t, d, crdPath).Body))

	// A continue token and a watch resourceVersion from before the move.
	page := decodeObject(t, rawGet(t, d, "/api/v1/namespaces/mig-a/configmaps?limit=1").Body)
	cont := meta(page, "continue")
	listRV := meta(page, "resourceVersion")
	if cont == "" {
		t.Fatalf("first page of two ConfigMaps has no continue token: %v", page)
	}
	oldC1 := objs[2].obj // mig-a/c1 as patched

	// A data dir a daemon serves is refused.
	if _, stderr, code := runMigrate(t, "--from", "sqlite:"+srcDir, "--to", "etcd:"+etcdURL); code == 0 || !strings.Contains(stderr, "in use") {
		t.Errorf("migrate from a served data dir: exit %d, stderr %q; want a refusal naming the lock", code, stderr)
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("stop daemon: %v", err)
	}

	// Without the encryption config the Secret cannot be read: refused,
	// with a hint, and nothing left in etcd.
	if _, stderr, code := runMigrate(t, "--from", "sqlite:"+srcDir, "--to", "etcd:"+etcdURL); code == 0 || !strings.Contains(stderr, "--encryption-provider-config") {
		t.Errorf("migrate of an encrypted data dir without its config: exit %d, stderr %q; want a refusal naming the flag", code, stderr)
	}

	// SQLite -> etcd.
	out := mustMigrate(t, "--from", "sqlite:"+srcDir, "--to", "etcd:"+etcdURL, "--encryption-provider-config", enc)
	migrated, srcRev := migrateSummary(t, out)
	if srcRev < mustRV(t, listRV) {
		t.Errorf("source revision %d below the last list's %s", srcRev, listRV)
	}

	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: requestTimeout, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	all, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if int(all.Count) != migrated {
		t.Errorf("etcd holds %d keys under /registry/, migrate reported %d objects", all.Count, migrated)
	}
	for _, o := range objs {
		resp, err := cli.Get(ctx, o.etcdKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Errorf("etcd has no key %s", o.etcdKey)
			continue
		}
		kv := resp.Kvs[0]
		if kv.ModRevision <= srcRev {
			t.Errorf("etcd %s at revision %d, not above the source's %d", o.etcdKey, kv.ModRevision, srcRev)
		}
		if bytes.HasPrefix(kv.Value, []byte("k8s:enc:")) {
			// Encrypted as the daemon on etcd would (the Secret).
			if inClear(kv.Value, marker) {
				t.Errorf("etcd %s holds the secret in the clear", o.etcdKey)
			}
			continue
		}
		got := decodeObject(t, kv.Value)
		if meta(got, "uid") != meta(o.obj, "uid") {
			t.Errorf("etcd %s uid = %q, want %q", o.etcdKey, meta(got, "uid"), meta(o.obj, "uid"))
		}
		// As kube-apiserver's storage reads JSON values: apiVersion and
		// kind of the storage version.
		if got["apiVersion"] != o.obj["apiVersion"] || got["kind"] != o.obj["kind"] {
			t.Errorf("etcd %s stored as %v %v, want %v %v", o.etcdKey, got["apiVersion"], got["kind"], o.obj["apiVersion"], o.obj["kind"])
		}
	}
	if all, err := cli.Get(ctx, "/registry/secrets/", clientv3.WithPrefix()); err != nil || len(all.Kvs) == 0 {
		t.Errorf("no Secret in etcd: %v", err)
	} else if inClear(all.Kvs[0].Value, marker) {
		t.Errorf("the Secret is in the clear in etcd, with an encryption config given")
	}
	if resp, err := cli.Get(ctx, "/registry/configmaps/mig-a/c3"); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("deleted ConfigMap in etcd: %v %v", resp, err)
	}
	if _, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(srcRev)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("etcd read at the source revision %d: %v, want compacted", srcRev, err)
	}
	if resp, err := cli.Get(ctx, "/registry-migrate"); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("scratch key left in etcd: %v %v", resp, err)
	}

	// Neither a second move into the loaded etcd nor one into a data dir
	// that holds a database.
	if _, stderr, code := runMigrate(t, "--from", "sqlite:"+srcDir, "--to", "etcd:"+etcdURL, "--encryption-provider-config", enc); code == 0 || !strings.Contains(stderr, "already holds keys") {
		t.Errorf("migrate into a loaded etcd: exit %d, stderr %q; want a refusal", code, stderr)
	}
	if _, stderr, code := runMigrate(t, "--from", "etcd:"+etcdURL, "--to", "sqlite:"+srcDir); code == 0 || !strings.Contains(stderr, "already holds a database") {
		t.Errorf("migrate into a data dir with a database: exit %d, stderr %q; want a refusal", code, stderr)
	}

	// etcd -> a new SQLite data dir, which a daemon then serves.
	newDir := filepath.Join(t.TempDir(), "data")
	out = mustMigrate(t, "--from", "etcd:"+etcdURL, "--to", "sqlite:"+newDir, "--encryption-provider-config", enc)
	back, etcdRev := migrateSummary(t, out)
	if back != migrated {
		t.Errorf("moved %d objects back from etcd, %d there", back, migrated)
	}
	if inClear(storedBytes(t, newDir), marker) {
		t.Errorf("the Secret is in the clear in the new data dir, which has an encryption config")
	}
	d2 := StartDaemon(t, DaemonOptions{DataDir: newDir, SQLite: true, Args: []string{"--encryption-provider-config", enc}})
	for _, o := range objs {
		res := rawGet(t, d2, o.path)
		if res.Status != http.StatusOK {
			t.Errorf("GET %s after the move: %d %s", o.path, res.Status, res.Body)
			continue
		}
		got := decodeObject(t, res.Body)
		if rv := mustRV(t, meta(got, "resourceVersion")); rv <= etcdRev {
			t.Errorf("%s resourceVersion %d, not above etcd's %d", o.path, rv, etcdRev)
		}
		if !reflect.DeepEqual(withoutRV(t, got), withoutRV(t, o.obj)) {
			t.Errorf("%s after the move:\n%s\nbefore:\n%v", o.path, res.Body, o.obj)
		}
	}
	if res := rawGet(t, d2, "/api/v1/namespaces/mig-a/configmaps/c3"); res.Status != http.StatusNotFound {
		t.Errorf("deleted ConfigMap after the move: %d %s", res.Status, res.Body)
	}

	// What clients kept from before the move is gone: 410 for the
	// continue token and the watch, 409 for an update with an old
	// resourceVersion.
	res = rawGet(t, d2, "/api/v1/namespaces/mig-a/configmaps?limit=1&continue="+cont)
	if res.Status != http.StatusGone {
		t.Errorf("old continue token: %d %s, want 410", res.Status, res.Body)
	}
	for _, rv := range []string{listRV, meta(oldC1, "resourceVersion")} {
		code, line := firstWatchEvent(t, d2, "/api/v1/namespaces/mig-a/configmaps?watch=1&resourceVersion="+rv)
		if code != http.StatusGone && !(code == http.StatusOK && strings.Contains(line, `"ERROR"`) && strings.Contains(line, `"code":410`)) {
			t.Errorf("watch from the old resourceVersion %s: %d %s, want 410 Gone", rv, code, line)
		}
	}
	stale, err := json.Marshal(oldC1)
	if err != nil {
		t.Fatal(err)
	}
	res = doRaw(t, d2, http.MethodPut, "/api/v1/namespaces/mig-a/configmaps/c1", "application/json", "application/json", stale)
	if res.Status != http.StatusConflict {
		t.Errorf("update with the resourceVersion from before the move: %d %s, want 409", res.Status, res.Body)
	}
}

// TestMigrate_FailureLeavesNoTarget: a move that fails part way leaves
// the target as it was, empty, so that it can be tried again.
func TestMigrate_FailureLeavesNoTarget(t *testing.T) {
	etcdURL := startMigrateEtcd(t)
	haBinary(t)
	srcDir := t.TempDir()
	d := StartDaemon(t, DaemonOptions{DataDir: srcDir, SQLite: true})
	postJSON(t, d, "/api/v1/namespaces", `{"metadata":{"name":"mig-big"}}`)
	postJSON(t, d, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", migrateCRD)
	crs := "/apis/migrate.edgeapi.test/v1/namespaces/mig-big/widgets"
	for deadline := time.Now().Add(eventually); rawGet(t, d, crs).Status != http.StatusOK; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("widgets not served after %v", eventually)
		}
	}
	// 2 MB: within what SQLite and the API take, over etcd's request
	// limit (1.5 MiB).
	postJSON(t, d, crs, `{"apiVersion":"migrate.edgeapi.test/v1","kind":"Widget","metadata":{"name":"big"},"spec":{"color":"`+strings.Repeat("r", 2<<20)+`"}}`)
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: requestTimeout, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, stderr, code := runMigrate(t, "--from", "sqlite:"+srcDir, "--to", "etcd:"+etcdURL)
	if code == 0 || !strings.Contains(stderr, "/registry/widgets.migrate.edgeapi.test/mig-big/big") || !strings.Contains(stderr, "too large") {
		t.Errorf("migrate of an object too large for etcd: exit %d, stderr %q; want an error naming it", code, stderr)
	}
	for _, prefix := range []string{"/registry/", "/registry-migrate"} {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 0 {
			t.Errorf("etcd keys under %s after a failed move: %d (%v), want none", prefix, resp.Count, err)
		}
	}

	// An etcd source with a key that is no edgeapi object: refused, and
	// no database left; with --allow-unmapped the rest moves.
	if _, err := cli.Put(ctx, "/registry/health", `{"health":"true"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "/registry/configmaps/default/kept", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept","namespace":"default","uid":"u-kept"}}`); err != nil {
		t.Fatal(err)
	}
	newDir := filepath.Join(t.TempDir(), "data")
	_, stderr, code = runMigrate(t, "--from", "etcd:"+etcdURL, "--to", "sqlite:"+newDir)
	if code == 0 || !strings.Contains(stderr, "/registry/health") || !strings.Contains(stderr, "--allow-unmapped") {
		t.Errorf("migrate of an etcd with a key that is no object: exit %d, stderr %q; want an error naming it", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(newDir, "edgeapi.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database in the target after a failed move: %v", err)
	}
	out := mustMigrate(t, "--from", "etcd:"+etcdURL, "--to", "sqlite:"+newDir, "--allow-unmapped")
	if n, _ := migrateSummary(t, out); n != 1 || !strings.Contains(out, "left out") || !strings.Contains(out, "/registry/health") {
		t.Errorf("migrate --allow-unmapped moved %d objects and printed:\n%s\nwant 1 and the key left out", n, out)
	}
}
