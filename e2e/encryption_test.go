package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// This file tests --encryption-provider-config end to end: Secrets are
// never in the clear in the stored data (database and WAL, objects and
// change log) while the API serves them in the clear, and keys rotate.

// encKey returns a random base64 key of n bytes.
func encKey(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// writeEncConfig writes an EncryptionConfiguration for secrets with the
// given provider YAML items and returns its path.
func writeEncConfig(t *testing.T, providers ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "encryption.yaml")
	data := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" +
		strings.Join(providers, "\n") + "\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func encProvider(kind, name, secret string) string {
	return fmt.Sprintf("  - %s:\n      keys:\n      - name: %s\n        secret: %s", kind, name, secret)
}

// secretMarker returns a unique secret value whose length is a multiple
// of 3, so that its base64 form (how a Secret's data is kept in JSON) is
// a fixed substring too.
func secretMarker(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b) // 27 bytes
}

// inClear reports whether marker is in b as it is or base64-encoded.
func inClear(b []byte, marker string) bool {
	return bytes.Contains(b, []byte(marker)) ||
		bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte(marker))))
}

func createSecret(t *testing.T, d *Daemon, ns, name, value string) *corev1.Secret {
	t.Helper()
	s, err := d.Clientset().CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string][]byte{"password": []byte(value)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret %s/%s: %v", ns, name, err)
	}
	return s
}

func TestEncryption_SecretsNotInClearOnDisk(t *testing.T) {
	for _, provider := range []string{"aesgcm", "secretbox"} {
		t.Run(provider, func(t *testing.T) {
			cfg := writeEncConfig(t, encProvider(provider, "key1", encKey(t, 32)), "  - identity: {}")
			d := StartDaemon(t, DaemonOptions{Args: []string{"--encryption-provider-config", cfg}})
			cs := d.Clientset()
			ctx := context.Background()
			createNamespace(t, cs, "enc")

			start, err := cs.CoreV1().Secrets("enc").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := cs.CoreV1().Secrets("enc").Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			created, updated, deleted, cmValue := secretMarker(t), secretMarker(t), secretMarker(t), secretMarker(t)
			s1 := createSecret(t, d, "enc", "s1", created)
			s1.Data["password"] = []byte(updated)
			if _, err := cs.CoreV1().Secrets("enc").Update(ctx, s1, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("update secret: %v", err)
			}
			createSecret(t, d, "enc", "s2", deleted)
			if err := cs.CoreV1().Secrets("enc").Delete(ctx, "s2", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete secret: %v", err)
			}
			// A ConfigMap is not encrypted: it shows the file scan finds
			// values that are in the clear.
			if _, err := cs.CoreV1().ConfigMaps("enc").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "cm"},
				BinaryData: map[string][]byte{"v": []byte(cmValue)},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			// The API answers in the clear: GET, LIST and watch.
			got, err := cs.CoreV1().Secrets("enc").Get(ctx, "s1", metav1.GetOptions{})
			if err != nil || string(got.Data["password"]) != updated {
				t.Errorf("GET s1: got %q, %v; want %q", got.Data["password"], err, updated)
			}
			list, err := cs.CoreV1().Secrets("enc").List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 || string(list.Items[0].Data["password"]) != updated {
				t.Errorf("LIST: got %+v, %v; want s1 with %q", list, err, updated)
			}
			wantEvents := []struct {
				typ   watch.EventType
				value string
			}{{watch.Added, created}, {watch.Modified, updated}, {watch.Added, deleted}, {watch.Deleted, deleted}}
			for i, want := range wantEvents {
				select {
				case ev := <-w.ResultChan():
					s, _ := ev.Object.(*corev1.Secret)
					if ev.Type != want.typ || s == nil || string(s.Data["password"]) != want.value {
						t.Errorf("watch event %d: got %s %v, want %s with %q", i, ev.Type, ev.Object, want.typ, want.value)
					}
				case <-time.After(eventually):
					t.Fatalf("watch event %d: none within %v", i, eventually)
				}
			}

			// On disk, in the WAL while running and in the database after
			// a clean stop: the Secret values never, the ConfigMap's yes.
			prefix := "k8s:enc:" + provider + ":v1:key1:"
			check := func(when string) {
				files := storedBytes(t, d.DataDir)
				for _, m := range []string{created, updated, deleted} {
					if inClear(files, m) {
						t.Errorf("%s: secret value %q is in the clear in the stored data", when, m)
					}
				}
				if !inClear(files, cmValue) {
					t.Errorf("%s: the ConfigMap's value is not found in the stored data: the scan does not work", when)
				}
				if !bytes.Contains(files, []byte(prefix)) {
					t.Errorf("%s: no value with prefix %q in the stored data", when, prefix)
				}
			}
			check("running")
			if err := d.Stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			check("stopped")

			// After a restart the change log replays in the clear too: a
			// watch from before the writes comes from the database.
			d2 := StartDaemon(t, DaemonOptions{DataDir: d.DataDir, Args: []string{"--encryption-provider-config", cfg}})
			res := rawGet(t, d2, "/api/v1/namespaces/enc/secrets?watch=1&timeoutSeconds=1&resourceVersion="+start.ResourceVersion)
			if res.Status != http.StatusOK {
				t.Fatalf("watch replay: status %d: %s", res.Status, res.Body)
			}
			for _, m := range []string{created, updated, deleted} {
				if !bytes.Contains(res.Body, []byte(base64.StdEncoding.EncodeToString([]byte(m)))) {
					t.Errorf("watch replay after restart does not carry %q: %s", m, res.Body)
				}
			}
		})
	}
}

func TestEncryption_IdentityFirstStoresPlaintext(t *testing.T) {
	cfg := writeEncConfig(t, "  - identity: {}", encProvider("aesgcm", "key1", encKey(t, 32)))
	d := StartDaemon(t, DaemonOptions{Args: []string{"--encryption-provider-config", cfg}})
	createNamespace(t, d.Clientset(), "enc")
	m := secretMarker(t)
	createSecret(t, d, "enc", "s1", m)
	if files := storedBytes(t, d.DataDir); !inClear(files, m) {
		t.Errorf("identity first: the secret value is not in the clear in the stored data")
	}
}

// TestEncryption_Rotation adds a new key first, rewrites every Secret,
// and then drops the old key: every Secret still reads. The rewrite is
// done both ways README documents: online with
// `kubectl get secrets -A -o json | kubectl replace --validate=false -f -`,
// and offline with `edgeapi rewrite-secrets`.
func TestEncryption_Rotation(t *testing.T) {
	t.Run("kubectl replace", func(t *testing.T) {
		testRotation(t, func(t *testing.T, dir, both string, n int) {
			d := StartDaemon(t, DaemonOptions{DataDir: dir, Args: []string{"--encryption-provider-config", both}})
			out := d.MustKubectl("get", "secrets", "-A", "-o", "json")
			// --validate=false: kubectl validates a List against the
			// protobuf /openapi/v2 document, which edgeapi does not serve
			// (406); the server still validates each Secret.
			rep := d.KubectlStdin(out.Stdout, "replace", "--validate=false", "-f", "-")
			if rep.ExitCode != 0 || strings.Count(rep.Stdout, "replaced") != n {
				t.Fatalf("kubectl replace: %s", rep)
			}
			if err := d.Stop(); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("edgeapi rewrite-secrets", func(t *testing.T) {
		requireSQLite(t) // an offline tool on the SQLite file
		testRotation(t, func(t *testing.T, dir, both string, n int) {
			// Refused while the daemon runs.
			d := StartDaemon(t, DaemonOptions{DataDir: dir, Args: []string{"--encryption-provider-config", both}})
			bin := edgeapiBin.Path(t)
			args := []string{"rewrite-secrets", "--data-dir", dir, "--encryption-provider-config", both}
			if _, stderr, code := runTool(t, bin, args, nil, ""); code == 0 || !strings.Contains(stderr, "in use by another edgeapi") {
				t.Errorf("rewrite-secrets with the daemon running: exit %d, stderr %q; want a refusal", code, stderr)
			}
			if err := d.Stop(); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := runTool(t, bin, args, nil, "")
			if want := fmt.Sprintf("rewrote %d of %d objects", n, n); code != 0 || !strings.Contains(stdout, want) {
				t.Fatalf("rewrite-secrets: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
			}
			stdout, _, code = runTool(t, bin, args, nil, "")
			if want := fmt.Sprintf("rewrote 0 of %d objects", n); code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("rewrite-secrets again: exit %d, stdout %q; want %q", code, stdout, want)
			}
		})
	})
}

// testRotation stores Secrets under an old key, checks they do not read
// without it, calls rewrite with a configuration that has the new key
// first and the old one second, and checks that they all read with only
// the new key.
func testRotation(t *testing.T, rewrite func(t *testing.T, dir, both string, n int)) {
	oldKey, newKey := encKey(t, 32), encKey(t, 32)
	oldOnly := writeEncConfig(t, encProvider("secretbox", "old", oldKey))
	both := writeEncConfig(t, encProvider("aesgcm", "new", newKey), encProvider("secretbox", "old", oldKey))
	newOnly := writeEncConfig(t, encProvider("aesgcm", "new", newKey))

	d := StartDaemon(t, DaemonOptions{Args: []string{"--encryption-provider-config", oldOnly}})
	dir := d.DataDir
	values := map[string]string{}
	for _, ns := range []string{"a", "b"} {
		createNamespace(t, d.Clientset(), ns)
		for i := range 3 {
			name := fmt.Sprintf("s%d", i)
			values[ns+"/"+name] = secretMarker(t)
			createSecret(t, d, ns, name, values[ns+"/"+name])
		}
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	// Without the old key the Secrets do not read: kube-apiserver's 500.
	d = StartDaemon(t, DaemonOptions{DataDir: dir, Args: []string{"--encryption-provider-config", newOnly}})
	res := rawGet(t, d, "/api/v1/namespaces/a/secrets/s0")
	if res.Status != http.StatusInternalServerError || !strings.Contains(string(res.Body), `"message":"Internal error occurred: no matching prefix found"`) {
		t.Errorf("GET without the old key: got %d %s, want 500 Internal error occurred: no matching prefix found", res.Status, res.Body)
	}
	res = rawGet(t, d, "/api/v1/namespaces/a/secrets")
	if want := `"message":"Internal error occurred: unable to transform key \"` + storageKey(dir, "secrets/a/s0") + `\": no matching prefix found"`; res.Status != http.StatusInternalServerError || !strings.Contains(string(res.Body), want) {
		t.Errorf("LIST without the old key: got %d %s, want 500 %s", res.Status, res.Body, want)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	rewrite(t, dir, both, len(values))

	// Only the new key: every Secret reads, with its value.
	d = StartDaemon(t, DaemonOptions{DataDir: dir, Args: []string{"--encryption-provider-config", newOnly}})
	list, err := d.Clientset().CoreV1().Secrets("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("LIST after rotation with only the new key: %v", err)
	}
	if len(list.Items) != len(values) {
		t.Errorf("LIST after rotation: got %d secrets, want %d", len(list.Items), len(values))
	}
	for _, s := range list.Items {
		if want := values[s.Namespace+"/"+s.Name]; string(s.Data["password"]) != want {
			t.Errorf("%s/%s after rotation: got %q, want %q", s.Namespace, s.Name, s.Data["password"], want)
		}
	}
}

func TestEncryption_BadConfigStopsStart(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"short key", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys:\n      - name: k\n        secret: " +
			base64.StdEncoding.EncodeToString([]byte("0123456789")) + "\n",
			"secret is not of the expected length, got 10, expected one of [16 24 32]"},
		{"empty", "", "is empty"},
		{"not yaml", "{{{", "error decoding encryption provider configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "enc.yaml")
			if err := os.WriteFile(p, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := TryStartDaemon(t, DaemonOptions{Args: []string{"--encryption-provider-config", p}})
			if err == nil {
				t.Fatalf("daemon started with a bad encryption config")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "load encryption provider config") {
				t.Errorf("start error: got %v, want it to contain %q", err, tt.want)
			}
			_ = d
		})
	}
}
