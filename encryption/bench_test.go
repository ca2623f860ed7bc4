package encryption

import (
	"bytes"
	"testing"
)

// BenchmarkTransformer measures writing and reading back a 1 KiB value
// with each provider: the CPU encryption adds to a Secret's write and to
// a read that misses the caches.
func BenchmarkTransformer(b *testing.B) {
	value := bytes.Repeat([]byte("x"), 1024)
	for _, bc := range []struct{ name, provider string }{
		{"aesgcm", aesgcm("k", key(32, 1))},
		{"secretbox", secretboxP("k", key(32, 1))},
		{"identity", identityP},
	} {
		c, err := Parse(config(bc.provider))
		if err != nil {
			b.Fatal(err)
		}
		tr := c.Transformers()("secrets")
		stored, _ := tr.ToStorage(path, value)
		b.Run(bc.name+"/write", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.ToStorage(path, value); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/read", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := tr.FromStorage(path, stored); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
