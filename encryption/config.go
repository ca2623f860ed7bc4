// Package encryption reads kube-apiserver's EncryptionConfiguration file
// (--encryption-provider-config) and turns it into the store's value
// transformers: Secrets (or any resource the file names) encrypted at rest
// with the identity, aesgcm, aescbc and secretbox providers, in
// kube-apiserver's stored format.
//
// The configuration types, their validation and the transformers are
// kube-apiserver's own packages (k8s.io/apiserver/pkg/apis/apiserver and
// k8s.io/apiserver/pkg/storage/value/...), so that a file kube-apiserver
// accepts is accepted with the same defaults, a file it refuses is refused
// with the same field errors, and values carry the same prefixes
// (k8s:enc:aesgcm:v1:<key>:, k8s:enc:secretbox:v1:<key>:), nonces and
// authenticated data. What is written here is the wiring kube-apiserver's
// encryptionconfig package does, without its KMS plugins, health checks
// and reloading, which edgeapi does not have.
package encryption

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"

	"github.com/edgeapi/edgeapi/store"
)

// Stored-value prefixes of kube-apiserver's providers.
const (
	prefixAESGCM    = "k8s:enc:aesgcm:v1:"
	prefixAESCBC    = "k8s:enc:aescbc:v1:"
	prefixSecretbox = "k8s:enc:secretbox:v1:"
)

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := apiserver.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiserverv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// Config is a loaded encryption configuration: a transformer per group
// resource, matched as kube-apiserver matches them (exact, then
// "*.group", then "*.*").
type Config struct {
	byResource map[schema.GroupResource]value.Transformer
}

// Load reads, validates and builds the configuration in the file at path.
// Its errors say what is wrong in kube-apiserver's words.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading encryption provider configuration file %q: %w", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("encryption provider configuration file %q is empty", path)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("encryption provider configuration file %q: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes, validates and builds an EncryptionConfiguration.
func Parse(data []byte) (*Config, error) {
	obj, gvk, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("error decoding encryption provider configuration: %w", err)
	}
	ec, ok := obj.(*apiserver.EncryptionConfiguration)
	if !ok {
		return nil, fmt.Errorf("got unexpected config type: %v", gvk)
	}
	if errs := validation.ValidateEncryptionConfiguration(ec, false); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}

	prefixed := map[schema.GroupResource][]value.PrefixTransformer{}
	for _, rc := range ec.Resources {
		ts, err := providers(rc)
		if err != nil {
			return nil, err
		}
		for _, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			for _, mask := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
				if _, masked := prefixed[mask]; masked {
					return nil, fmt.Errorf("resource %q is masked by earlier rule %q", yamlString(gr), yamlString(mask))
				}
			}
			prefixed[gr] = append(prefixed[gr], ts...)
		}
	}
	c := &Config{byResource: make(map[schema.GroupResource]value.Transformer, len(prefixed))}
	for gr, ts := range prefixed {
		c.byResource[gr] = value.NewPrefixTransformers(errors.New("no matching prefix found"), ts...)
	}
	return c, nil
}

// providers builds rc's providers in order: the first writes, all read.
func providers(rc apiserver.ResourceConfiguration) ([]value.PrefixTransformer, error) {
	var out []value.PrefixTransformer
	for _, p := range rc.Providers {
		var (
			t   value.PrefixTransformer
			err error
		)
		switch {
		case p.AESGCM != nil:
			t, err = aesProvider(p.AESGCM, aestransformer.NewGCMTransformer, prefixAESGCM)
		case p.AESCBC != nil:
			t, err = aesProvider(p.AESCBC, func(b cipher.Block) (value.Transformer, error) {
				return aestransformer.NewCBCTransformer(b), nil
			}, prefixAESCBC)
		case p.Secretbox != nil:
			t, err = secretboxProvider(p.Secretbox)
		case p.Identity != nil:
			t = value.PrefixTransformer{Transformer: identity.NewEncryptCheckTransformer(), Prefix: []byte{}}
		case p.KMS != nil:
			return nil, fmt.Errorf("provider kms %q: KMS plugins are not supported by edgeapi; use aesgcm, aescbc or secretbox", p.KMS.Name)
		default:
			return nil, errors.New("provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// aesProvider is an AES provider: one prefixed transformer per key, in
// the file's order, under the provider's prefix.
func aesProvider(c *apiserver.AESConfiguration, newT func(cipher.Block) (value.Transformer, error), prefix string) (value.PrefixTransformer, error) {
	keys := make([]value.PrefixTransformer, 0, len(c.Keys))
	for _, k := range c.Keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("could not obtain secret for named key %s: %w", k.Name, err)
		}
		block, err := aes.NewCipher(secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("error while creating cipher for named key %s: %w", k.Name, err)
		}
		t, err := newT(block)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("error while creating transformer for named key %s: %w", k.Name, err)
		}
		keys = append(keys, value.PrefixTransformer{Transformer: t, Prefix: []byte(k.Name + ":")})
	}
	return value.PrefixTransformer{
		Transformer: value.NewPrefixTransformers(errors.New("no matching key was found for the provided AES transformer"), keys...),
		Prefix:      []byte(prefix),
	}, nil
}

// secretboxProvider is the secretbox provider: one prefixed transformer
// per 32-byte key.
func secretboxProvider(c *apiserver.SecretboxConfiguration) (value.PrefixTransformer, error) {
	keys := make([]value.PrefixTransformer, 0, len(c.Keys))
	for _, k := range c.Keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("could not obtain secret for named key %s: %w", k.Name, err)
		}
		if len(secret) != 32 {
			return value.PrefixTransformer{}, fmt.Errorf("expected key size 32 for secretbox provider, got %v", len(secret))
		}
		var key [32]byte
		copy(key[:], secret)
		keys = append(keys, value.PrefixTransformer{Transformer: secretbox.NewSecretboxTransformer(key), Prefix: []byte(k.Name + ":")})
	}
	return value.PrefixTransformer{
		Transformer: value.NewPrefixTransformers(errors.New("no matching key was found for the provided Secretbox transformer"), keys...),
		Prefix:      []byte(prefixSecretbox),
	}, nil
}

// yamlString writes gr as the configuration file names it.
func yamlString(gr schema.GroupResource) string {
	if gr.Group == "" && gr.Resource == "*" {
		return "*."
	}
	return gr.String()
}

// transformerFor returns gr's transformer, nil when none is configured.
func (c *Config) transformerFor(gr schema.GroupResource) value.Transformer {
	if t := c.byResource[gr]; t != nil {
		return t
	}
	if t := c.byResource[schema.GroupResource{Group: gr.Group, Resource: "*"}]; t != nil {
		return t
	}
	return c.byResource[schema.GroupResource{Group: "*", Resource: "*"}]
}

// Transformers returns the store's Config.Transformers for c: storage
// resources are "plural" in the core group and "plural.group" elsewhere.
func (c *Config) Transformers() func(resource string) store.Transformer {
	var cache sync.Map // resource -> store.Transformer (nil included)
	return func(resource string) store.Transformer {
		if t, ok := cache.Load(resource); ok {
			t, _ := t.(store.Transformer)
			return t
		}
		var out store.Transformer
		if t := c.transformerFor(schema.ParseGroupResource(resource)); t != nil {
			out = adapter{t}
		}
		cache.Store(resource, out)
		return out
	}
}

// adapter is a kube value.Transformer as a store.Transformer, with the
// storage path as authenticated data as kube-apiserver's etcd3 storage
// passes it.
type adapter struct{ t value.Transformer }

func (a adapter) ToStorage(path string, v []byte) ([]byte, error) {
	return a.t.TransformToStorage(context.Background(), v, value.DefaultContext(path))
}

func (a adapter) FromStorage(path string, stored []byte) ([]byte, bool, error) {
	return a.t.TransformFromStorage(context.Background(), stored, value.DefaultContext(path))
}

// Resources lists the group resources c names, for the start-up log.
func (c *Config) Resources() string {
	names := make([]string, 0, len(c.byResource))
	for gr := range c.byResource {
		names = append(names, yamlString(gr))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
