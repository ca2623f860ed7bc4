package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/store"
)

// Claims: allocation that stays unique when several replicas share the
// store (etcd). Each replica's pools only know what it allocated and what
// it saw in the watch, so two replicas could hand out the same cluster IP
// or node port at once. With BuiltinOptions.Claims set, every value a
// create or update allocates is also claimed in the store: one object per
// value, created with Create, whose ErrExists means another Service holds
// it. This is kube-apiserver's design since 1.33, where each cluster IP
// is a networking.k8s.io/v1 IPAddress object whose parentRef names its
// Service; edgeapi writes its claims in the same shape (kept at
// ipaddresses.networking.k8s.io/<ip>), and node ports the same way under
// servicenodeports.edgeapi.io/<port> (kube-apiserver keeps node ports in
// one bitmap object instead). The pools stay as a fast first guess,
// followed from the watch: a value another replica took is marked used
// when its Service event arrives, and freed when that Service lets it go.
//
// A claim is released (deleted) by the replica whose write freed the
// value: the Service's delete, or an update that drops it, or a failed
// create. A replica killed in between leaves its claim behind; a claim
// whose Service is gone (or no longer holds the value) is taken over once
// it is older than claimGrace, the time a create may take between its
// claim and its store write.
//
// Without Claims (SQLite: one process) nothing changes: the pools are
// exact and a Service create writes one object.

// Where claims are stored.
const (
	ipClaimResource   = "ipaddresses.networking.k8s.io"
	portClaimResource = "servicenodeports.edgeapi.io"
)

// claimParentUIDAnnotation records the UID of the claiming Service, so
// that a claim left by a Service deleted and created again under the same
// name is not taken for the new one's.
const claimParentUIDAnnotation = "edgeapi.io/parent-uid"

// claimGrace is how old a claim whose Service does not hold its value
// must be before another Service takes it over. A var so tests can
// shorten it.
var claimGrace = time.Minute

// maxClaimAttempts bounds how often a create picks new values after
// finding the ones it picked claimed by other replicas.
const maxClaimAttempts = 16

// claim is the stored claim object: an IPAddress's fields that edgeapi
// uses.
type claim struct {
	Metadata struct {
		Name              string            `json:"name"`
		UID               types.UID         `json:"uid"`
		CreationTimestamp metav1.Time       `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels,omitempty"`
		Annotations       map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		ParentRef struct {
			Group     string `json:"group"`
			Resource  string `json:"resource"`
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"parentRef"`
	} `json:"spec"`
}

// heldBy reports whether c names svc (same namespace, name and UID).
func (c *claim) heldBy(svc *corev1.Service) bool {
	p := &c.Spec.ParentRef
	return p.Namespace == svc.Namespace && p.Name == svc.Name && c.Metadata.Annotations[claimParentUIDAnnotation] == string(svc.UID)
}

// newClaim returns the claim of value name for svc, and its UID.
func newClaim(name string, svc *corev1.Service, now time.Time) ([]byte, string, error) {
	var c claim
	c.Metadata.Name = name
	c.Metadata.UID = types.UID(uuid.NewString())
	c.Metadata.CreationTimestamp = metav1.NewTime(now.Truncate(time.Second))
	c.Metadata.Labels = map[string]string{"ipaddress.kubernetes.io/managed-by": "edgeapi"}
	c.Metadata.Annotations = map[string]string{claimParentUIDAnnotation: string(svc.UID)}
	c.Spec.ParentRef.Resource = "services"
	c.Spec.ParentRef.Namespace, c.Spec.ParentRef.Name = svc.Namespace, svc.Name
	b, err := json.Marshal(&c)
	return b, string(c.Metadata.UID), err
}

// ipClaimKey and portClaimKey are the store keys of claims.
func (a *serviceAllocator) ipClaimKey(offset int) store.Key {
	return store.Key{Resource: ipClaimResource, Name: a.ipAt(offset).String()}
}

func (a *serviceAllocator) portClaimKey(offset int) store.Key {
	return store.Key{Resource: portClaimResource, Name: strconv.Itoa(a.portRange.Base + offset)}
}

// errClaimed: another Service holds the value.
var errClaimed = errors.New("registry: value claimed by another service")

// claimValue claims key for svc. It returns errClaimed when a live
// Service holds it, an AlreadyExists Status error when a create of a
// Service of the same name holds it (two creates of one name racing on
// two replicas), or the store's error.
func (a *serviceAllocator) claimValue(ctx context.Context, key store.Key, svc *corev1.Service) error {
	value, uid, err := newClaim(key.Name, svc, time.Now())
	if err != nil {
		return err
	}
	for range 3 {
		_, err := a.claims.Create(ctx, key, uid, value)
		if !errors.Is(err, store.ErrExists) {
			return err
		}
		cur, err := a.claims.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return err
		}
		var c claim
		if err := json.Unmarshal(cur.Value, &c); err != nil {
			return fmt.Errorf("read claim %s: %w", key.Name, err)
		}
		if c.heldBy(svc) {
			return nil
		}
		live, err := a.claimLive(ctx, key, &c)
		if err != nil {
			return err
		}
		if live {
			p := &c.Spec.ParentRef
			if p.Namespace == svc.Namespace && p.Name == svc.Name {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "services"}, svc.Name)
			}
			return errClaimed
		}
		// Left over: take it over, unless someone else does first.
		_, err = a.claims.Update(ctx, key, store.Preconditions{ModRev: cur.ModRev}, value)
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return errClaimed
}

// claimLive reports whether claim c of key still holds its value: it is
// younger than claimGrace (its create may not have written its Service
// yet), or its Service exists, with its UID, and holds the value.
func (a *serviceAllocator) claimLive(ctx context.Context, key store.Key, c *claim) (bool, error) {
	if time.Since(c.Metadata.CreationTimestamp.Time) < claimGrace {
		return true, nil
	}
	p := &c.Spec.ParentRef
	o, err := a.claims.Get(ctx, store.Key{Resource: "services", Namespace: p.Namespace, Name: p.Name})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var svc corev1.Service
	if err := json.Unmarshal(o.Value, &svc); err != nil {
		return false, fmt.Errorf("read service %s/%s: %w", p.Namespace, p.Name, err)
	}
	if string(svc.UID) != c.Metadata.Annotations[claimParentUIDAnnotation] {
		return false, nil
	}
	a.mu.Lock()
	ips, ports := a.heldLocked(&svc)
	a.mu.Unlock()
	for _, o := range ips {
		if a.ipClaimKey(o) == key {
			return true, nil
		}
	}
	for _, o := range ports {
		if a.portClaimKey(o) == key {
			return true, nil
		}
	}
	return false, nil
}

// releaseClaim deletes the claim at key if svc holds it. Errors are
// dropped: a claim left behind is taken over after claimGrace.
func (a *serviceAllocator) releaseClaim(ctx context.Context, key store.Key, svc *corev1.Service) {
	cur, err := a.claims.Get(ctx, key)
	if err != nil {
		return
	}
	var c claim
	if json.Unmarshal(cur.Value, &c) != nil || !c.heldBy(svc) {
		return
	}
	_, _ = a.claims.Delete(ctx, key, store.Preconditions{ModRev: cur.ModRev})
}

// claimReservation claims every value r took for svc. On failure it
// releases the claims it made; taken lists the values other Services
// hold (their pool offsets, as ips and ports).
func (a *serviceAllocator) claimReservation(ctx context.Context, svc *corev1.Service, r *reservation) (takenIPs, takenPorts []int, err error) {
	var made []store.Key
	fail := func(e error) ([]int, []int, error) {
		for _, k := range made {
			a.releaseClaim(context.WithoutCancel(ctx), k, svc)
		}
		return takenIPs, takenPorts, e
	}
	for _, o := range r.ips {
		k := a.ipClaimKey(o)
		switch err := a.claimValue(ctx, k, svc); {
		case errors.Is(err, errClaimed):
			takenIPs = append(takenIPs, o)
		case err != nil:
			return fail(err)
		default:
			made = append(made, k)
		}
	}
	for _, o := range r.ports {
		k := a.portClaimKey(o)
		switch err := a.claimValue(ctx, k, svc); {
		case errors.Is(err, errClaimed):
			takenPorts = append(takenPorts, o)
		case err != nil:
			return fail(err)
		default:
			made = append(made, k)
		}
	}
	if len(takenIPs) > 0 || len(takenPorts) > 0 {
		return fail(nil)
	}
	return nil, nil, nil
}

// releaseOffsets releases svc's claims of the given pool offsets.
func (a *serviceAllocator) releaseOffsets(ctx context.Context, svc *corev1.Service, ips, ports []int) {
	for _, o := range ips {
		a.releaseClaim(ctx, a.ipClaimKey(o), svc)
	}
	for _, o := range ports {
		a.releaseClaim(ctx, a.portClaimKey(o), svc)
	}
}

// observe follows the Services every replica writes, from the store's
// events: values a Service holds are marked used, values it no longer
// holds (or held, when deleted) are freed. It runs on the store's event
// path and only takes a.mu.
func (a *serviceAllocator) observe(events []store.Event) {
	for i := range events {
		ev := &events[i]
		if ev.Object.Key.Resource != "services" {
			continue
		}
		var cur, prev corev1.Service
		if json.Unmarshal(ev.Object.Value, &cur) != nil {
			continue
		}
		hasPrev := ev.Type == store.Modified && json.Unmarshal(ev.PrevValue, &prev) == nil
		a.mu.Lock()
		ips, ports := a.heldLocked(&cur)
		if ev.Type == store.Deleted {
			for _, o := range ips {
				delete(a.ips.used, o)
			}
			for _, o := range ports {
				delete(a.ports.used, o)
			}
		} else {
			for _, o := range ips {
				a.ips.used[o] = true
			}
			for _, o := range ports {
				a.ports.used[o] = true
			}
		}
		if hasPrev {
			oldIPs, oldPorts := a.heldLocked(&prev)
			for _, o := range minus(oldIPs, ips) {
				delete(a.ips.used, o)
			}
			for _, o := range minus(oldPorts, ports) {
				delete(a.ports.used, o)
			}
		}
		a.mu.Unlock()
	}
}
