package serviceaccount

import (
	"context"
	"crypto"
	"testing"
)

// BenchmarkAuthenticator_AuthenticateToken measures one authentication of
// a ServiceAccount token, with the signature cached (the same client
// sending the same token) and without (every token new).
func BenchmarkAuthenticator_AuthenticateToken(b *testing.B) {
	for _, tc := range []struct {
		name  string
		cache int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			t := &testing.T{}
			f := newFixture(t, newKey(t))
			a, err := NewAuthenticator(AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{f.key.Public()}, Objects: f.objs, VerifiedCacheSize: tc.cache})
			if err != nil {
				b.Fatal(err)
			}
			a.now = f.auth.now
			tok := f.issue(t, Request{Secret: &Ref{Name: "s1", UID: "secret-uid"}})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, ok, err := a.AuthenticateToken(ctx, tok); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkIssuer_Issue measures signing one token.
func BenchmarkIssuer_Issue(b *testing.B) {
	t := &testing.T{}
	f := newFixture(t, newKey(t))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f.issue(t, Request{})
	}
}
