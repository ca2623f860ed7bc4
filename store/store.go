// Package store keeps Kubernetes objects and their change log in one SQLite
// database in WAL mode.
//
// Every write gets the next value of one global revision counter (int64,
// strictly increasing, never reused, persisted). An object's
// metadata.resourceVersion is the decimal string of its ModRev; the store
// itself writes it into the stored JSON (see Object.Value), so bytes read
// from the store can be sent to clients as they are.
//
// All writes go through one writer goroutine that group-commits: it takes
// every write waiting (bounded by count and bytes), applies them in one
// transaction, commits once (one fsync with synchronous=FULL), and only then
// answers each caller and publishes the batch's events, in revision order,
// to the subscribers registered with Subscribe. That is the only place where
// commits turn into events.
package store

import (
	"context"
	"errors"
)

// Errors returned by Store methods. Callers compare with errors.Is; the HTTP
// layer maps each one to a metav1.Status in one place.
var (
	// ErrNotFound: no object at the key (or, for Watch/List at a revision,
	// nothing to report).
	ErrNotFound = errors.New("store: object not found")
	// ErrExists: Create found an object already at the key.
	ErrExists = errors.New("store: object already exists")
	// ErrConflict: a precondition (expected ModRev or UID) did not hold.
	ErrConflict = errors.New("store: precondition failed")
	// ErrCompacted: the requested revision is older than the compacted
	// revision; the change log no longer holds it.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrFutureRev: the requested revision is newer than the store's
	// current revision.
	ErrFutureRev = errors.New("store: revision not yet available")
	// ErrClosed: the store is closed or closing.
	ErrClosed = errors.New("store: closed")
	// ErrTooLarge: a value exceeds MaxValueBytes.
	ErrTooLarge = errors.New("store: value too large")
	// ErrInvalidObject: a value is not a JSON object with a top-level
	// "metadata" object, so the store cannot stamp its resourceVersion; or
	// a key has an empty resource or name, or a NUL byte.
	ErrInvalidObject = errors.New("store: invalid object")
	// ErrNoSpace: the file system holding the database is full. A create
	// or update that gets it wrote nothing; deletes still commit, and the
	// store accepts every write again once space is freed.
	ErrNoSpace = errors.New("store: no space left on the file system holding the database")
	// ErrUnavailable: the storage (an etcd cluster without a leader or
	// out of reach) could not serve the request for now, and nothing was
	// changed: sending it again later is safe.
	ErrUnavailable = errors.New("store: storage unavailable")
	// ErrUnknownOutcome: a write was sent, but the storage did not
	// confirm whether it was applied before it became unavailable. A
	// client may read the object and send the write again; its
	// preconditions keep it from being applied twice.
	ErrUnknownOutcome = errors.New("store: storage did not confirm the write")
)

// Key names one object. Resource is the storage resource name, qualified by
// group for non-core groups ("configmaps", "leases.coordination.k8s.io").
// Namespace is empty for cluster-scoped objects.
type Key struct {
	Resource  string
	Namespace string
	Name      string
}

// Object is one stored object at one revision.
type Object struct {
	Key Key
	// UID is metadata.uid, kept in its own column for preconditions.
	UID string
	// CreateRev is the revision that created the object.
	CreateRev int64
	// ModRev is the revision of the last write to the object; for an object
	// returned by Delete (and in DELETED events) it is the delete revision.
	ModRev int64
	// Value is the object's JSON. Its metadata.resourceVersion always equals
	// strconv.FormatInt(ModRev, 10): the store stamps it with StampRevision
	// on every write, whatever resourceVersion the caller's bytes carried.
	// Callers must not modify it.
	Value []byte
}

// EventType is the kind of change a committed write made.
type EventType uint8

const (
	Added EventType = iota + 1
	Modified
	Deleted
)

func (t EventType) String() string {
	switch t {
	case Added:
		return "ADDED"
	case Modified:
		return "MODIFIED"
	case Deleted:
		return "DELETED"
	}
	return "UNKNOWN"
}

// Event is one committed write, as recorded in the change log.
type Event struct {
	Type EventType
	// Object is the state after the write. For Deleted it is the last state,
	// stamped with the delete revision (Object.ModRev == the event revision).
	Object Object
	// PrevValue is the state before the write (nil for Added), with its own
	// resourceVersion.
	PrevValue []byte
}

// Rev is the event's revision.
func (e *Event) Rev() int64 { return e.Object.ModRev }

// Preconditions guard Update and Delete. Zero fields are not checked.
type Preconditions struct {
	// ModRev, when non-zero, must equal the stored object's ModRev.
	ModRev int64
	// UID, when non-empty, must equal the stored object's UID.
	UID string
}

// ListOptions select what List returns.
type ListOptions struct {
	Resource string
	// Namespace limits the list to one namespace; empty lists all.
	Namespace string
	// Rev is the revision to read at: 0 means the current revision. An
	// older revision is reconstructed from the change log (ErrCompacted when
	// it is below the compacted revision: the state at the compacted
	// revision itself can still be rebuilt, as in etcd), a newer one is
	// ErrFutureRev.
	Rev int64
	// After, when set, skips every object whose key is at or before it in
	// key order: the continue position of a paged list.
	AfterNamespace, AfterName string
	// Limit bounds the number of objects returned; 0 means no limit. When
	// a filter is given, Limit counts objects that pass it.
	Limit int
	// Filter, when non-nil, is called for each candidate in key order;
	// objects for which it returns false are skipped. It must not retain
	// the Object.
	Filter func(*Object) bool
	// MaxBytes, when positive, ends the list early once the values
	// returned add up to MaxBytes or more (at least one object is
	// returned). Such a list is Cut: a caller reads the rest with further
	// calls at the same Rev, after the last key, under a Hold.
	MaxBytes int
	// Objects, when it has room, is where the result's objects go (from
	// its start, overwriting what it holds): a caller reading a list page
	// by page passes the page before, once done with it, so that each
	// page does not grow a slice of its own. Nil: a new slice.
	Objects []Object
}

// ListResult is one consistent snapshot.
type ListResult struct {
	Objects []Object
	// Rev is the revision the list was read at.
	Rev int64
	// More reports that objects after the last one returned exist (and pass
	// the filter); Remaining counts candidates after the last returned
	// object before filtering, for remainingItemCount, and is -1 when not
	// known.
	More      bool
	Remaining int64
	// Cut reports that MaxBytes ended the list before Limit or the last
	// object: objects may follow (More is true), and Remaining is -1.
	Cut bool
}

// Store is the object store. All methods are safe for concurrent use.
type Store interface {
	// Get returns the current object at key, or ErrNotFound.
	Get(ctx context.Context, key Key) (Object, error)
	// List returns objects from one snapshot in etcd key order, as
	// kube-apiserver lists them: by the bytes of "<namespace>/<name>" (so
	// namespace a-b comes before a), of "<name>" when cluster-scoped.
	List(ctx context.Context, opts ListOptions) (ListResult, error)
	// Hold keeps the state at rev readable until release is called:
	// compaction meanwhile stops short of rev, so a reader can read one
	// revision in several List calls (a large list written out in pages).
	// Holding a revision that is already compacted does nothing. Each
	// Hold must be released, once.
	Hold(rev int64) (release func())
	// Create stores value at key with a new revision. ErrExists when an
	// object is already at key.
	Create(ctx context.Context, key Key, uid string, value []byte) (Object, error)
	// Update replaces the object at key if pre holds: ErrNotFound,
	// ErrConflict. The returned Object has the new ModRev.
	Update(ctx context.Context, key Key, pre Preconditions, value []byte) (Object, error)
	// Delete removes the object at key if pre holds: ErrNotFound,
	// ErrConflict. The returned Object is the last state stamped with the
	// delete revision.
	Delete(ctx context.Context, key Key, pre Preconditions) (Object, error)
	// GuaranteedUpdate is the read-modify-write loop: it reads the current
	// object, calls tryUpdate with it, and writes the result with
	// ModRev as precondition, retrying from a fresh read when another writer
	// got in between. If tryUpdate returns an error the loop stops with it.
	// If tryUpdate returns a value equal to the current one (ignoring
	// resourceVersion) nothing is written and the current object is
	// returned. ErrNotFound when there is no object at key.
	GuaranteedUpdate(ctx context.Context, key Key, tryUpdate func(cur Object) ([]byte, error)) (Object, error)
	// Changes returns change-log events with revision > afterRev, in
	// revision order, at most limit (0 = no limit). ErrCompacted when
	// afterRev is older than the compacted revision, ErrFutureRev when it is
	// newer than the current one.
	Changes(ctx context.Context, afterRev int64, limit int) ([]Event, error)
	// ChangeKeys is Changes without Value and PrevValue, for readers that
	// look for keys or UIDs in the log: it reads no value.
	ChangeKeys(ctx context.Context, afterRev int64, limit int) ([]Event, error)
	// Compact deletes change-log entries at or below rev, in bounded
	// batches; afterwards reads at those revisions fail with ErrCompacted.
	// While revisions are held (Hold), it compacts only up to the oldest.
	Compact(ctx context.Context, rev int64) error
	// Rev returns the current revision (the last committed write).
	Rev() int64
	// CompactedRev returns the compacted revision: change-log entries at or
	// below it are gone.
	CompactedRev() int64
	// Subscribe registers fn to receive every committed batch of events, in
	// revision order, after commit and before the writers are answered. fn
	// runs on the writer goroutine: it must not block. Returns a function
	// that unsubscribes.
	Subscribe(fn func(events []Event)) (cancel func())
	// Close stops the writer after draining queued writes, checkpoints the
	// WAL and closes the database.
	Close() error
}
