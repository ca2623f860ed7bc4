package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The e2e suite runs against either storage backend. EDGEAPI_E2E_BACKEND=etcd
// runs every daemon with --storage-backend=etcd3 against one etcd that
// TestMain starts (EDGEAPI_ETCD, or the binary scripts/kube-ref-build etcd
// puts under .cache); EDGEAPI_BIN must then be a build with the etcd tag
// (edgeapi-ha). Each data dir gets its own --etcd-prefix, derived from its
// path, so a daemon restarted on the same data dir finds its objects and
// no two tests share any.
const (
	envBackend = "EDGEAPI_E2E_BACKEND"
	envEtcd    = "EDGEAPI_ETCD"
)

// e2eEtcd is the etcd of an etcd run; nil on SQLite.
var e2eEtcd *etcdProcess

// onEtcd reports whether this run stores objects in etcd.
func onEtcd() bool { return os.Getenv(envBackend) == "etcd" }

// requireSQLite skips t on the etcd backend: t is about the SQLite file
// itself (its durability on kill -9 and power loss, its WAL, its
// offline tools), which etcd's own tests cover for etcd.
func requireSQLite(t testing.TB) {
	t.Helper()
	if onEtcd() {
		t.Skip("about the SQLite file: not run on the etcd backend")
	}
}

// backendArgs are the storage flags of a daemon on dataDir.
func backendArgs(dataDir string) []string {
	if e2eEtcd == nil {
		return nil
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	return []string{"--storage-backend=etcd3", "--etcd-servers", e2eEtcd.URL, "--etcd-prefix", etcdPrefixFor(abs)}
}

// etcdPrefixFor is the --etcd-prefix of a daemon on the data dir abs.
func etcdPrefixFor(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return "/e2e/" + hex.EncodeToString(sum[:8])
}

// storageKey is where a daemon on dataDir keeps the object at path
// ("secrets/ns/name"): kube-apiserver's key, under /registry on SQLite
// and under the daemon's --etcd-prefix on etcd.
func storageKey(dataDir, path string) string {
	if e2eEtcd == nil {
		return "/registry/" + path
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	return etcdPrefixFor(abs) + "/" + path
}

// storedBytes returns every stored byte of the daemon on dataDir: its
// SQLite database and WAL, or on etcd every key and value under its
// prefix (read through etcd's JSON gateway).
func storedBytes(t testing.TB, dataDir string) []byte {
	t.Helper()
	if e2eEtcd == nil {
		var all []byte
		for _, name := range []string{"edgeapi.db", "edgeapi.db-wal"} {
			b, err := os.ReadFile(filepath.Join(dataDir, name))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	prefix := storageKey(dataDir, "")
	end := []byte(prefix)
	end[len(end)-1]++
	body, _ := json.Marshal(map[string]string{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
	})
	resp, err := http.Post(e2eEtcd.URL+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("read etcd: %v", err)
	}
	defer resp.Body.Close()
	var out struct {
		Kvs []struct {
			Key, Value []byte
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("read etcd: %v", err)
	}
	var all []byte
	for _, kv := range out.Kvs {
		all = append(append(all, kv.Key...), kv.Value...)
	}
	return all
}

// etcdProcess is one etcd member the tests started.
type etcdProcess struct {
	URL string
	dir string
	cmd *exec.Cmd
}

// etcdBinary returns the etcd to run: $EDGEAPI_ETCD, else the one
// scripts/kube-ref-build etcd builds.
func etcdBinary() (string, error) {
	p := os.Getenv(envEtcd)
	if p == "" {
		p = filepath.Join(moduleRoot, ".cache", "kube-ref", "bin", "etcd")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no etcd binary (set %s or run scripts/kube-ref-build etcd): %w", envEtcd, err)
	}
	return p, nil
}

// e2eMaxRequestBytes is the --max-request-bytes of the etcds the tests
// start: values as large as the SQLite store takes (4 MiB). etcd's
// default is 1.5 MiB, past which creates are 413, as they are for
// kube-apiserver.
const e2eMaxRequestBytes = 5 << 20

// startEtcd starts a single-member etcd on free loopback ports in a
// temporary directory, with e2eMaxRequestBytes, and waits until it answers.
func startEtcd() (*etcdProcess, error) { return startEtcdWith(e2eMaxRequestBytes) }

// startEtcdWith is startEtcd with etcd's --max-request-bytes
// maxRequestBytes (0: etcd's default).
func startEtcdWith(maxRequestBytes int) (*etcdProcess, error) {
	bin, err := etcdBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "edgeapi-e2e-etcd-")
	if err != nil {
		return nil, err
	}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(cport)
	peer := "http://127.0.0.1:" + strconv.Itoa(pport)
	args := []string{"--name", "e2e", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e2e=" + peer, "--log-level", "warn", "--snapshot-count", "10000"}
	if maxRequestBytes > 0 {
		args = append(args, "--max-request-bytes", strconv.Itoa(maxRequestBytes))
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	e := &etcdProcess{URL: client, dir: dir, cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(cport), time.Second); err == nil {
			c.Close()
			return e, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.stop()
	return nil, fmt.Errorf("start etcd: not answering on %s after 30s (log in %s)", client, dir)
}

// stop kills etcd and removes its directory.
func (e *etcdProcess) stop() {
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	os.RemoveAll(e.dir)
}

// rvNotOlder reports whether resourceVersion got (a JSON string) is at or
// after want.
func rvNotOlder(got, want any) bool {
	g, err1 := strconv.ParseInt(fmt.Sprint(got), 10, 64)
	w, err2 := strconv.ParseInt(fmt.Sprint(want), 10, 64)
	return err1 == nil && err2 == nil && g >= w
}
