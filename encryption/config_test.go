package encryption

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeapi/edgeapi/store"
)

// key returns a base64 key of n bytes, all b.
func key(n int, b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n))
}

// config is an EncryptionConfiguration for secrets with the given
// providers (YAML list items, indented for the providers list).
func config(providers ...string) []byte {
	return []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
` + strings.Join(providers, "\n") + "\n")
}

func aesgcm(name, secret string) string {
	return fmt.Sprintf("  - aesgcm:\n      keys:\n      - name: %s\n        secret: %s", name, secret)
}

func secretboxP(name, secret string) string {
	return fmt.Sprintf("  - secretbox:\n      keys:\n      - name: %s\n        secret: %s", name, secret)
}

func aescbc(name, secret string) string {
	return fmt.Sprintf("  - aescbc:\n      keys:\n      - name: %s\n        secret: %s", name, secret)
}

const identityP = "  - identity: {}"

const path = "/registry/secrets/default/s1"

func mustTransformer(t *testing.T, data []byte, resource string) store.Transformer {
	t.Helper()
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tr := c.Transformers()(resource)
	if tr == nil {
		t.Fatalf("no transformer for %q", resource)
	}
	return tr
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{"no resources", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n",
			"resources: Required value: at least one resources is required"},
		{"no providers", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n",
			"resources[0].providers: Required value: at least one resources[0].providers is required"},
		{"short aes key", string(config(aesgcm("k1", key(10, 1)))),
			"resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 10, expected one of [16 24 32]"},
		{"short secretbox key", string(config(secretboxP("k1", key(16, 1)))),
			"resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]"},
		{"not base64", string(config(aesgcm("k1", "not-base64!"))),
			"resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded"},
		{"no key name", string(config(aesgcm(`""`, key(32, 1)))),
			"resources[0].providers[0].aesgcm.keys[0].name: Required value: name is a mandatory field for a key"},
		{"overlap", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, '*.']\n  providers:\n  - identity: {}\n",
			"using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"},
		{"masked by earlier rule", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.*']\n  providers:\n  - identity: {}\n- resources: [secrets]\n  providers:\n  - identity: {}\n",
			`resource "secrets" is masked by earlier rule "*.*"`},
		{"kms", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms:\n      apiVersion: v2\n      name: plugin\n      endpoint: unix:///tmp/kms.sock\n",
			`provider kms "plugin": KMS plugins are not supported by edgeapi`},
		{"wrong kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: Nope\n",
			`no kind "Nope" is registered`},
		{"unknown field", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresourcez: []\n",
			`unknown field "resourcez"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			if err == nil {
				t.Fatalf("Parse: got no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: got error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoad_EmptyAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir + "/missing.yaml"); err == nil || !strings.Contains(err.Error(), "error reading encryption provider configuration file") {
		t.Errorf("Load(missing): got %v, want a read error", err)
	}
}

func TestTransformer_RoundTripAndPrefix(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		prefix   string
	}{
		{"aesgcm", aesgcm("key1", key(32, 7)), "k8s:enc:aesgcm:v1:key1:"},
		{"aesgcm 16-byte key", aesgcm("k16", key(16, 7)), "k8s:enc:aesgcm:v1:k16:"},
		{"aescbc", aescbc("cbc", key(32, 7)), "k8s:enc:aescbc:v1:cbc:"},
		{"secretbox", secretboxP("box", key(32, 7)), "k8s:enc:secretbox:v1:box:"},
		{"identity", identityP, ""},
	}
	plain := []byte(`{"metadata":{"name":"s1"},"data":{"password":"aHVudGVyMg=="}}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := mustTransformer(t, config(tt.provider), "secrets")
			stored, err := tr.ToStorage(path, plain)
			if err != nil {
				t.Fatalf("ToStorage: %v", err)
			}
			if !bytes.HasPrefix(stored, []byte(tt.prefix)) {
				t.Errorf("stored value starts %q, want prefix %q", stored[:min(len(stored), 30)], tt.prefix)
			}
			if tt.prefix != "" && bytes.Contains(stored, []byte("aHVudGVyMg==")) {
				t.Errorf("stored value holds the secret in the clear: %q", stored)
			}
			got, stale, err := tr.FromStorage(path, stored)
			if err != nil {
				t.Fatalf("FromStorage: %v", err)
			}
			if !bytes.Equal(got, plain) || stale {
				t.Errorf("FromStorage: got %q stale %v, want %q stale false", got, stale, plain)
			}
			again, _ := tr.ToStorage(path, plain)
			if tt.prefix != "" && bytes.Equal(again, stored) {
				t.Errorf("two encryptions of one value are equal: the nonce is not random")
			}
		})
	}
}

func TestTransformer_AESGCMAuthenticatesPath(t *testing.T) {
	tr := mustTransformer(t, config(aesgcm("key1", key(32, 7))), "secrets")
	stored, err := tr.ToStorage(path, []byte("{}"))
	if err != nil {
		t.Fatalf("ToStorage: %v", err)
	}
	if _, _, err := tr.FromStorage("/registry/secrets/default/other", stored); err == nil {
		t.Errorf("FromStorage under another key: got no error, want an authentication failure")
	}
}

func TestTransformer_KeyOrder(t *testing.T) {
	old := mustTransformer(t, config(secretboxP("old", key(32, 1))), "secrets")
	storedOld, err := old.ToStorage(path, []byte("{}"))
	if err != nil {
		t.Fatalf("ToStorage: %v", err)
	}

	// A new key added first: it writes, the old one still reads (stale).
	rotated := mustTransformer(t, config(aesgcm("new", key(32, 2)), secretboxP("old", key(32, 1))), "secrets")
	storedNew, err := rotated.ToStorage(path, []byte("{}"))
	if err != nil {
		t.Fatalf("ToStorage: %v", err)
	}
	if want := "k8s:enc:aesgcm:v1:new:"; !bytes.HasPrefix(storedNew, []byte(want)) {
		t.Errorf("rotated config writes %q, want prefix %q", storedNew[:20], want)
	}
	got, stale, err := rotated.FromStorage(path, storedOld)
	if err != nil || string(got) != "{}" || !stale {
		t.Errorf("read old value: got %q stale %v err %v, want {} stale true", got, stale, err)
	}
	if _, stale, err := rotated.FromStorage(path, storedNew); err != nil || stale {
		t.Errorf("read new value: got stale %v err %v, want not stale", stale, err)
	}

	// Two keys in one provider: the first writes.
	twoKeys := []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - name: second
        secret: ` + key(32, 4) + `
      - name: first
        secret: ` + key(32, 3) + `
`)
	tk := mustTransformer(t, twoKeys, "secrets")
	if s, _ := tk.ToStorage(path, []byte("{}")); !bytes.HasPrefix(s, []byte("k8s:enc:aesgcm:v1:second:")) {
		t.Errorf("two keys: writes %q, want the first listed key, second", s[:25])
	}

	// The old key removed: its values no longer read, in kube's words.
	newOnly := mustTransformer(t, config(aesgcm("new", key(32, 2))), "secrets")
	if _, _, err := newOnly.FromStorage(path, storedOld); err == nil || err.Error() != "no matching prefix found" {
		t.Errorf("read old value without its key: got %v, want no matching prefix found", err)
	}
	otherKey := mustTransformer(t, config(aesgcm("other", key(32, 2))), "secrets")
	if _, _, err := otherKey.FromStorage(path, storedNew); err == nil || err.Error() != "no matching key was found for the provided AES transformer" {
		t.Errorf("read aesgcm value without its key: got %v", err)
	}
	// Identity reads plaintext but refuses encrypted data: kube-apiserver
	// then finds no provider for the prefix.
	idFirst := mustTransformer(t, config(identityP), "secrets")
	if _, _, err := idFirst.FromStorage(path, storedNew); err == nil || err.Error() != "no matching prefix found" {
		t.Errorf("identity reading encrypted data: got %v", err)
	}
}

func TestConfig_Transformers_Resources(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, leases.coordination.k8s.io]
  providers:
  - aesgcm:
      keys:
      - name: k
        secret: ` + key(32, 1) + `
- resources: ['*.apps']
  providers:
  - identity: {}
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tf := c.Transformers()
	for _, tt := range []struct {
		resource string
		want     bool
	}{
		{"secrets", true}, {"leases.coordination.k8s.io", true}, {"deployments.apps", true},
		{"configmaps", false}, {"leases", false},
	} {
		if got := tf(tt.resource) != nil; got != tt.want {
			t.Errorf("Transformers()(%q) set: got %v, want %v", tt.resource, got, tt.want)
		}
	}
}
