package encryption

import (
	"bytes"
	"testing"
)

// FuzzConfig_FromStorage: whatever bytes are stored (a corrupted row, a
// prefix naming a provider or key that does not exist, a truncated
// ciphertext), reading them with every provider configured returns the
// value or an error, never a panic; and a value written reads back.
func FuzzConfig_FromStorage(f *testing.F) {
	cfg, err := Parse(config(aesgcm("k1", key(32, 1)), secretboxP("k2", key(32, 2)), aescbc("k3", key(32, 3)), "  - identity: {}"))
	if err != nil {
		f.Fatal(err)
	}
	tr := cfg.Transformers()("secrets")
	for _, s := range []string{"", "k8s:enc:aesgcm:v1:k1:", "k8s:enc:secretbox:v1:k2:xx", "k8s:enc:aescbc:v1:k3:0123456789abcdef0123456789abcdef", "k8s:enc:aesgcm:v1:nope:", `{"kind":"Secret"}`} {
		f.Add([]byte(s), []byte("value"))
	}
	if sealed, err := tr.ToStorage("/registry/secrets/ns/a", []byte(`{"kind":"Secret"}`)); err == nil {
		f.Add(sealed, []byte("x"))
	}
	f.Fuzz(func(t *testing.T, stored, value []byte) {
		_, _, _ = tr.FromStorage("/registry/secrets/ns/a", stored)
		sealed, err := tr.ToStorage("/registry/secrets/ns/a", value)
		if err != nil {
			t.Fatalf("ToStorage: %v", err)
		}
		got, _, err := tr.FromStorage("/registry/secrets/ns/a", sealed)
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("round trip: %q, %v; want %q", got, err, value)
		}
		// Under another object's path (authenticated data) it must not
		// read as the value.
		if got, _, err := tr.FromStorage("/registry/secrets/ns/b", sealed); err == nil && bytes.Equal(got, value) && len(value) > 0 {
			t.Fatalf("a value sealed for ns/a reads under ns/b")
		}
	})
}
