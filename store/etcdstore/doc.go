// Package etcdstore implements store.Store on etcd v3, with
// kube-apiserver's key layout under a configurable prefix (keys.go), so
// that the same data could be read by a kube-apiserver.
//
// Revisions are etcd's: an object's resourceVersion is its key's
// ModRevision, CreateRev its CreateRevision. Values are stored as the JSON
// the caller gives, resourceVersion left as it is (kube-apiserver removes
// it; a reader of either kind overwrites it from the ModRevision), and are
// read back stamped with the ModRevision by store.StampRevision.
//
// Use: New(ctx, Config{Endpoints, Prefix, TLS}) with TLS from ClientTLS
// (kube's --etcd-cafile, --etcd-certfile, --etcd-keyfile), then
// RunCompactor for kube's --etcd-compaction-interval, and Close.
// Subscribe is fed by one etcd watch on the prefix (watch.go); every write
// through the store waits until that feed has published its revision, so
// subscribers see a write before its writer is answered, as with SQLite,
// and writes through other stores on the same etcd reach them too.
//
// While etcd cannot answer (a member lost, a leader election, no member
// reachable), reads wait for it up to Config.UnavailableWait and then
// fail with store.ErrUnavailable; a write is sent again, with the same
// revision comparison, until etcd answers, and one that an earlier
// attempt had applied succeeds with that attempt's revision, so a write
// is applied and answered once. A write that etcd never answered within
// the wait fails with store.ErrUnknownOutcome (unavailable.go).
//
// Everything but this file builds only with the build tag etcd (go test
// -tags etcd ./store/etcdstore): the etcd client adds about 12 MB to the
// stripped binary, and the default build must not link it. Without the
// tag the package is empty.
//
// Differences from the SQLite store, all from etcd:
//   - List returns etcd key order, which differs from (namespace, name)
//     order only where a namespace is a prefix of another followed by a
//     byte below '/' ("a" and "a-b"); paging follows the same order.
//   - Hold is local to this process: another client compacting the same
//     etcd does not see it.
//   - Rev and CompactedRev are what this process has seen: a write through
//     another client shows once a response or the watch feed carries it.
//   - Keys may not hold '/' in namespace or name (ErrInvalidObject).
//   - When etcd has compacted past the feed while its watch was broken, the
//     feed goes on from the compacted revision and subscribers miss the
//     events in between.
package etcdstore
