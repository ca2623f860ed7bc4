//go:build etcd

package etcdstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/edgeapi/edgeapi/store"
)

const (
	// DefaultPrefix is kube-apiserver's default --etcd-prefix.
	DefaultPrefix = "/registry"
	// DefaultDialTimeout bounds New's first connection.
	DefaultDialTimeout = 10 * time.Second
	// DefaultListBatch is how many keys one etcd Range reads when a
	// filter or a byte bound means List cannot ask for exactly Limit+1.
	DefaultListBatch = 500
	// DefaultListConcurrency is how many Lists read from etcd at once; the
	// others wait. Each holds up to a list's worth of values twice (etcd's
	// response and the stamped copies), so under a burst of lists this,
	// like the SQLite store's read pool, bounds the memory they take.
	DefaultListConcurrency = 8
	// MaxRequestBytes bounds a request this client sends: etcd's own
	// --max-request-bytes (1.5 MiB by default) decides below it, and
	// values it refuses fail with ErrTooLarge.
	MaxRequestBytes = 64 << 20
)

// Config configures a Store.
type Config struct {
	// Endpoints are the etcd client URLs (kube's --etcd-servers).
	Endpoints []string
	// Prefix is the key prefix (kube's --etcd-prefix), DefaultPrefix when
	// empty. A trailing slash is ignored.
	Prefix string
	// TLS, when non-nil, is the client TLS configuration (kube's
	// --etcd-cafile, --etcd-certfile, --etcd-keyfile).
	TLS *tls.Config
	// DialTimeout bounds the first connection (DefaultDialTimeout when 0).
	DialTimeout time.Duration
	// MaxValueBytes, when positive, is the largest value Create and Update
	// send; larger ones fail with ErrTooLarge before reaching etcd. When
	// 0, etcd decides with its --max-request-bytes, as for
	// kube-apiserver, and its refusal is ErrTooLarge too.
	MaxValueBytes int
	// Transformers, when set, returns the Transformer of a resource's
	// values (encryption at rest, --encryption-provider-config), nil for
	// values stored as they are. A value's path, which a transformer may
	// authenticate, is its etcd key, as kube-apiserver's.
	Transformers func(resource string) store.Transformer
	// ListConcurrency bounds the Lists reading from etcd at once
	// (DefaultListConcurrency when 0).
	ListConcurrency int
	// TypeMeta, when set, names the apiVersion and kind that a resource's
	// values are stored with: values are written with them first, as
	// kube-apiserver's storage requires of JSON values, and read back
	// without them. An empty kind stores values as they are given.
	TypeMeta func(resource string) (apiVersion, kind string)
	// UnavailableWait is how long a request waits for an etcd that cannot
	// answer (no leader, no member reachable) before it fails
	// (DefaultUnavailableWait when 0; see unavailable.go).
	UnavailableWait time.Duration

	// dialOptions are added to the client's gRPC dial options (tests
	// intercept calls with them).
	dialOptions []grpc.DialOption
}

// Store is a store.Store on etcd v3. All methods are safe for concurrent
// use.
type Store struct {
	client   *clientv3.Client
	keys     keyer
	maxValue int
	// transformers is Config.Transformers.
	transformers func(resource string) store.Transformer
	// typeMeta is Config.TypeMeta.
	typeMeta func(resource string) (apiVersion, kind string)
	// listSlots (capacity Config.ListConcurrency) holds one token per
	// List reading.
	listSlots chan struct{}
	// unavailableWait is Config.UnavailableWait.
	unavailableWait time.Duration

	// rev is the newest revision seen in any response header.
	rev atomic.Int64
	// compactedRev is the newest compaction this store made or learned of
	// (from ErrCompacted or a watch response).
	compactedRev atomic.Int64
	closed       atomic.Bool

	// holds guards compaction against held revisions (compaction.go).
	holds store.Holds

	// feed is the one etcd watch that feeds subscribers (watch.go).
	feed feed

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// New connects to etcd, learns the current and compacted revisions, and
// starts the watch that feeds Subscribe.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("open etcd store: no endpoints")
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if cfg.Prefix == "" {
		prefix = DefaultPrefix
	}
	dial := cfg.DialTimeout
	if dial == 0 {
		dial = DefaultDialTimeout
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		TLS:         cfg.TLS,
		DialTimeout: dial,
		// gRPC's own default (2 MiB) would refuse values etcd accepts
		// when its --max-request-bytes is raised.
		MaxCallSendMsgSize: MaxRequestBytes,
		DialOptions:        cfg.dialOptions,
		Context:            ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("open etcd store: %w", err)
	}
	maxValue := cfg.MaxValueBytes
	if maxValue <= 0 {
		maxValue = MaxRequestBytes
	}
	s := &Store{client: client, keys: keyer{prefix: prefix}, maxValue: maxValue, transformers: cfg.Transformers, typeMeta: cfg.TypeMeta,
		listSlots:       make(chan struct{}, cmp.Or(max(cfg.ListConcurrency, 0), DefaultListConcurrency)),
		unavailableWait: cmp.Or(cfg.UnavailableWait, DefaultUnavailableWait)}
	resp, err := client.Get(ctx, prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("open etcd store: %w", err)
	}
	s.observe(resp.Header.Revision)
	compacted, err := s.findCompacted(ctx, resp.Header.Revision)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("open etcd store: %w", err)
	}
	s.compactedRev.Store(compacted)

	feedCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.feed.init(resp.Header.Revision)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runFeed(feedCtx, resp.Header.Revision+1)
	}()
	return s, nil
}

// findCompacted returns etcd's compacted revision, which no API reports:
// the oldest revision at or below cur that a Range can still read, less
// nothing (etcd reads at the compacted revision itself). It bisects with
// count-only Ranges on one key, about log2(cur) of them.
func (s *Store) findCompacted(ctx context.Context, cur int64) (int64, error) {
	readable := func(rev int64) (bool, error) {
		_, err := s.client.Get(ctx, s.keys.prefix+"/", clientv3.WithRev(rev), clientv3.WithCountOnly())
		if errors.Is(err, rpctypes.ErrCompacted) {
			return false, nil
		}
		return err == nil, err
	}
	if cur <= 1 {
		return 0, nil
	}
	if ok, err := readable(1); err != nil || ok {
		return 0, err
	}
	lo, hi := int64(1), cur // lo unreadable, hi readable
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := readable(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// observe raises the current revision to rev.
func (s *Store) observe(rev int64) {
	for {
		cur := s.rev.Load()
		if rev <= cur || s.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// observeCompacted raises the compacted revision to rev.
func (s *Store) observeCompacted(rev int64) {
	for {
		cur := s.compactedRev.Load()
		if rev <= cur || s.compactedRev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// Rev implements store.Store: the newest revision this store has seen in
// a response (its own writes, reads and the watch feed).
func (s *Store) Rev() int64 { return s.rev.Load() }

// CompactedRev implements store.Store: the newest compaction this store
// made or learned of. Another client's compaction is learned from the
// first read it fails or from the watch.
func (s *Store) CompactedRev() int64 { return s.compactedRev.Load() }

// Close stops the watch feed and closes the client; it returns the first
// error.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.feed.close()
	s.wg.Wait()
	if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("close etcd client: %w", err)
	}
	return nil
}

// translate maps etcd errors to the store's, wrapping others with what.
func (s *Store) translate(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return store.ErrCompacted
	case errors.Is(err, rpctypes.ErrFutureRev):
		return store.ErrFutureRev
	case errors.Is(err, rpctypes.ErrNoSpace):
		return store.ErrQuotaExceeded
	case errors.Is(err, rpctypes.ErrRequestTooLarge), status.Code(err) == codes.ResourceExhausted:
		return store.ErrTooLarge
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case s.closed.Load():
		return store.ErrClosed
	case unavailable(err):
		return fmt.Errorf("%s: %w: %v", what, store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// transformer returns resource's transformer, nil when values are stored
// as they are.
func (s *Store) transformer(resource string) store.Transformer {
	if s.transformers == nil {
		return nil
	}
	return s.transformers(resource)
}

// encode returns the stored form of value, the object at etcd key k: with
// its apiVersion and kind first (see Config.TypeMeta), through the
// resource's transformer.
func (s *Store) encode(key store.Key, k string, value []byte) ([]byte, error) {
	value = s.withTypeMeta(key.Resource, value)
	t := s.transformer(key.Resource)
	if t == nil {
		return value, nil
	}
	out, err := t.ToStorage(k, value)
	if err != nil {
		return nil, fmt.Errorf("transform %s for storage: %w", k, err)
	}
	return out, nil
}

// withTypeMeta returns value, a JSON object, with "apiVersion" and "kind"
// first when Config.TypeMeta names them for resource; value otherwise.
func (s *Store) withTypeMeta(resource string, value []byte) []byte {
	if s.typeMeta == nil || len(value) < 2 || value[0] != '{' || bytes.HasPrefix(value, typeMetaPrefix) {
		return value
	}
	apiVersion, kind := s.typeMeta(resource)
	if kind == "" {
		return value
	}
	out := make([]byte, 0, len(value)+len(apiVersion)+len(kind)+28)
	out = append(out, `{"apiVersion":"`...)
	out = append(out, apiVersion...)
	out = append(out, `","kind":"`...)
	out = append(out, kind...)
	out = append(out, '"')
	if rest := bytes.TrimLeft(value[1:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, value[1:]...)
}

// typeMetaPrefix starts the values withTypeMeta writes.
var typeMetaPrefix = []byte(`{"apiVersion":"`)

// stripTypeMeta is the package function when Config.TypeMeta is set:
// values are stored with their apiVersion and kind only then.
func (s *Store) stripTypeMeta(value []byte) []byte {
	if s.typeMeta == nil {
		return value
	}
	return stripTypeMeta(value)
}

// stripTypeMeta returns value without the "apiVersion" and "kind" members
// withTypeMeta puts first, as the callers gave it; value when it does not
// start with them. It may overwrite one byte of value in place.
func stripTypeMeta(value []byte) []byte {
	rest, ok := bytes.CutPrefix(value, typeMetaPrefix)
	if !ok {
		return value
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return value
	}
	rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"kind":"`))
	if !ok {
		return value
	}
	if i = bytes.IndexByte(rest, '"'); i < 0 {
		return value
	}
	rest = rest[i+1:]
	switch {
	case len(rest) > 0 && rest[0] == ',':
		// The caller's first member follows the comma, which becomes
		// the object's '{': no copy. value is this store's own (etcd's
		// decoded response, or a transformer's output).
		rest[0] = '{'
		return rest
	case len(rest) > 0 && rest[0] == '}':
		return []byte("{}")
	}
	return value
}

// encryptedPrefix starts every value kube-apiserver's encrypting
// providers write.
var encryptedPrefix = []byte("k8s:enc:")

// errReadEncrypted is kube-apiserver's identity transformer's answer to an
// encrypted value.
var errReadEncrypted = errors.New("identity transformer tried to read encrypted data")

// decode returns the caller's form of kv's value, as etcd holds it, and
// whether it is stale (see store.Transformer.FromStorage).
func (s *Store) decode(key store.Key, kv *mvccpb.KeyValue) ([]byte, bool, error) {
	t := s.transformer(key.Resource)
	if t == nil {
		if bytes.HasPrefix(kv.Value, encryptedPrefix) {
			return nil, false, &store.TransformError{Path: string(kv.Key), Err: errReadEncrypted}
		}
		return s.stripTypeMeta(kv.Value), false, nil
	}
	v, stale, err := t.FromStorage(string(kv.Key), kv.Value)
	if err != nil {
		return nil, false, &store.TransformError{Path: string(kv.Key), Err: err}
	}
	return s.stripTypeMeta(v), stale, nil
}

// stored turns a key-value as etcd holds it into an Object: its value
// decoded and stamped with its ModRevision.
func (s *Store) stored(key store.Key, kv *mvccpb.KeyValue) (store.Object, error) {
	obj, _, err := s.storedStale(key, kv)
	return obj, err
}

// storedInList is stored for a list or a watch: kube-apiserver names the
// key in a transformer's error there.
func (s *Store) storedInList(key store.Key, kv *mvccpb.KeyValue) (store.Object, error) {
	obj, _, err := s.storedStale(key, kv)
	var te *store.TransformError
	if errors.As(err, &te) {
		return store.Object{}, &store.TransformError{Path: te.Path, Err: fmt.Errorf("unable to transform key %q: %w", te.Path, te.Err)}
	}
	return obj, err
}

// storedStale is stored, also reporting whether the value is stale.
func (s *Store) storedStale(key store.Key, kv *mvccpb.KeyValue) (store.Object, bool, error) {
	v, stale, err := s.decode(key, kv)
	if err != nil {
		return store.Object{}, false, err
	}
	obj, err := object(key, v, "", kv.CreateRevision, kv.ModRevision)
	return obj, stale, err
}

// object turns the caller's form of a value, with its revisions, into an
// Object, the value stamped with modRev. uid is the object's when the
// caller knows it; "" reads it from the value.
func object(key store.Key, value []byte, uid string, createRev, modRev int64) (store.Object, error) {
	v, err := store.StampRevision(value, modRev)
	if err != nil {
		return store.Object{}, fmt.Errorf("read %s/%s/%s: %w", key.Resource, key.Namespace, key.Name, err)
	}
	if uid == "" {
		uid = store.MetadataUID(value)
	}
	return store.Object{
		Key:       key,
		UID:       uid,
		CreateRev: createRev,
		ModRev:    modRev,
		Value:     v,
	}, nil
}

// Alive implements store.Prober: a linearizable count-only read of the
// prefix, which etcd answers only with a quorum.
func (s *Store) Alive(ctx context.Context) error {
	_, err := s.get(ctx, "probe etcd", s.keys.prefix+"/", clientv3.WithCountOnly())
	return err
}

var _ store.Prober = (*Store)(nil)
