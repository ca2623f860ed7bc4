package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/edgeapi/edgeapi/registry"
	"github.com/edgeapi/edgeapi/store"
)

// The CRD controllers do the work of kube-apiserver's apiextensions
// controllers, in one loop over the stored CustomResourceDefinitions:
//   - names: status.acceptedNames and the NamesAccepted condition. A name
//     another CRD of the group already holds (or a built-in kind of the
//     group) is not accepted: the CRD keeps its old names, or stays
//     unserved if it has none;
//   - establishing: Established once the names are accepted;
//   - serving: the registry serves the kinds of every CRD whose names are
//     accepted, built by Config.CustomResourceKinds from its spec and
//     accepted names, and stops serving those of CRDs that are gone;
//   - cleanup: a CRD being deleted (the DELETE added the
//     customresourcecleanup.apiextensions.k8s.io finalizer) loses its
//     instances, then the finalizer, which removes it.
// Status is written through the API (Objects.UpdateObject on the status
// subresource) as kube-apiserver's controllers write it through their
// loopback client. A commit that touches a CRD wakes the loop; it also
// sweeps every crdSweepInterval, and sooner while instances of a deleted
// CRD are held by their finalizers.

// crdSweepInterval is how often CRDs are looked at without a kick. A var
// so tests can shorten it.
var crdSweepInterval = 5 * time.Second

// crdRetryInterval is how soon a CRD whose cleanup waits on finalizers is
// looked at again.
var crdRetryInterval = 500 * time.Millisecond

// crdStatusManager is the field manager of the controllers' status
// writes: kube-apiserver's loopback client.
const crdStatusManager = "kube-apiserver"

// CRDResource is where CustomResourceDefinitions are served.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// servedCRD is what the registry serves for one CRD, and the state it was
// built from.
type servedCRD struct {
	uid        types.UID
	generation int64
	names      apiextensionsv1.CustomResourceDefinitionNames
	gvrs       []schema.GroupVersionResource
	kinds      []*registry.Kind
}

// crdController is the state of the CRD loop; only its goroutine uses it.
type crdController struct {
	m      *Manager
	kind   *registry.Kind
	served map[string]*servedCRD // by CRD name
	// decoded holds the CRDs of the last round by name. They are shared,
	// never modified: a status write replaces a round's copy.
	decoded map[string]decodedCRD
}

// decodedCRD is a stored CRD, decoded, and the revision it was read at.
type decodedCRD struct {
	modRev int64
	crd    *apiextensionsv1.CustomResourceDefinition
}

// kickCRDs wakes the CRD controller.
func (m *Manager) kickCRDs() {
	select {
	case m.crdKick <- struct{}{}:
	default:
	}
}

// runCRDController runs the CRD loop until ctx ends. Without the
// CustomResourceDefinition kind in the registry it does nothing.
func (m *Manager) runCRDController(ctx context.Context) {
	k := m.cfg.Registry.Lookup(CRDResource)
	if k == nil {
		m.markCRDsServed()
		return
	}
	c := &crdController{m: m, kind: k, served: map[string]*servedCRD{}}
	t := time.NewTicker(crdSweepInterval)
	defer t.Stop()
	for {
		retry, err := c.sync(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Sugar().Warnw("sync custom resource definitions", "error", err)
			retry = true
		}
		var soon <-chan time.Time
		if retry {
			soon = time.After(crdRetryInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.crdKick:
		case <-soon:
		case <-t.C:
		}
	}
}

// crdState is one stored CRD, decoded.
type crdState struct {
	crd       *apiextensionsv1.CustomResourceDefinition
	createRev int64
}

// sync runs one round over every CRD. retry asks for another round soon.
func (c *crdController) sync(ctx context.Context) (retry bool, err error) {
	res, err := c.m.cfg.Store.List(ctx, store.ListOptions{Resource: c.kind.StorageResource})
	if err != nil {
		return false, fmt.Errorf("list custom resource definitions: %w", err)
	}
	crds := make([]*crdState, 0, len(res.Objects))
	decoded := make(map[string]decodedCRD, len(res.Objects))
	for _, o := range res.Objects {
		// A round runs after every commit that touches a CRD; only the
		// CRDs that changed since the last round are decoded again.
		d, ok := c.decoded[o.Key.Name]
		if !ok || d.modRev != o.ModRev {
			obj, err := c.kind.DecodeStored(o.Value)
			if err != nil {
				return false, err
			}
			crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
			if !ok {
				return false, fmt.Errorf("decode custom resource definition %s: got %T", o.Key.Name, obj)
			}
			d = decodedCRD{modRev: o.ModRev, crd: crd}
		}
		decoded[o.Key.Name] = d
		crds = append(crds, &crdState{crd: d.crd, createRev: o.CreateRev})
	}
	c.decoded = decoded
	// The oldest CRD of a group gets a contested name, as in kube-apiserver
	// where the first to be processed holds it.
	sort.SliceStable(crds, func(i, j int) bool { return crds[i].createRev < crds[j].createRev })

	var errs []error
	var names []statusWrite
	for _, s := range crds {
		if s.crd.DeletionTimestamp != nil {
			continue
		}
		if w, ok := c.acceptNames(s, crds); ok {
			names = append(names, w)
		}
	}
	errs = append(errs, c.writeAll(ctx, names)...)
	// Serving comes before establishing (kubectl wait --for
	// condition=established, then a create, must find the resource) and
	// before cleanup (after a restart, the instances of a CRD deleted
	// before it are found through the kinds it serves).
	// A CRD whose kinds cannot be built is reported, and the others are
	// served: either way the stored CRDs have been through serving once.
	if err := c.serve(crds); err != nil {
		errs = append(errs, err)
	}
	c.m.markCRDsServed()
	var established []statusWrite
	for _, s := range crds {
		if s.crd.DeletionTimestamp != nil {
			continue
		}
		if w, ok := c.establish(s); ok {
			established = append(established, w)
		}
	}
	errs = append(errs, c.writeAll(ctx, established)...)
	for _, s := range crds {
		if s.crd.DeletionTimestamp == nil || !hasFinalizer(s.crd, registry.CRDCleanupFinalizer) {
			continue
		}
		waiting, err := c.cleanup(ctx, s)
		if err != nil {
			errs = append(errs, err)
		}
		retry = retry || waiting
	}
	return retry, errors.Join(errs...)
}

// statusWrite is a status change for one CRD that a round decided on.
type statusWrite struct {
	s      *crdState
	orig   *apiextensionsv1.CustomResourceDefinition
	change func(*apiextensionsv1.CustomResourceDefinition)
}

// plan records change for s: s.crd becomes a copy with the change made,
// so that the rest of the round sees it, until writeAll writes it.
func plan(s *crdState, change func(*apiextensionsv1.CustomResourceDefinition)) statusWrite {
	w := statusWrite{s: s, orig: s.crd, change: change}
	next := s.crd.DeepCopy()
	change(next)
	s.crd = next
	return w
}

// crdWriters bounds the status writes a round makes at once. The writes
// of a burst of CRDs then share group commits instead of waiting for one
// fsync each.
const crdWriters = 32

// writeAll makes the writes, crdWriters at a time. Each CRD ends with what
// was written, or with its state before the plan when the write failed.
func (c *crdController) writeAll(ctx context.Context, writes []statusWrite) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, crdWriters)
	for _, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// writeStatus applies the change to the stored CRD and keeps
			// what it wrote in w.s.crd.
			w.s.crd = w.orig
			if err := c.writeStatus(ctx, w.s, w.change); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errs
}

// acceptNames plans the naming step for s when it changes its status.
func (c *crdController) acceptNames(s *crdState, all []*crdState) (statusWrite, bool) {
	crd := s.crd
	if equality.Semantic.DeepEqual(crd.Spec.Names, crd.Status.AcceptedNames) {
		return statusWrite{}, false
	}
	names, accepted, established := c.namesAndConditions(crd, all)
	if equality.Semantic.DeepEqual(names, crd.Status.AcceptedNames) && sameCondition(findCondition(crd, apiextensionsv1.NamesAccepted), &accepted) {
		return statusWrite{}, false
	}
	return plan(s, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Status.AcceptedNames = names
		setCondition(crd, accepted)
		setCondition(crd, established)
	}), true
}

// establish plans Established once the names are accepted. Its write
// comes after serve registered the kinds, so a client that waits for
// Established finds the resource served.
func (c *crdController) establish(s *crdState) (statusWrite, bool) {
	crd := s.crd
	if !isConditionTrue(crd, apiextensionsv1.NamesAccepted) || isConditionTrue(crd, apiextensionsv1.Established) {
		return statusWrite{}, false
	}
	return plan(s, func(crd *apiextensionsv1.CustomResourceDefinition) {
		setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Established,
			Status:  apiextensionsv1.ConditionTrue,
			Reason:  "InitialNamesAccepted",
			Message: "the initial names have been accepted",
		})
	}), true
}

// namesAndConditions decides which of crd's requested names it may have,
// against the names the other CRDs of its group accepted and the built-in
// kinds of the group, with kube-apiserver's conditions: a name is
// accepted when it is already crd's or nobody else's.
func (c *crdController) namesAndConditions(crd *apiextensionsv1.CustomResourceDefinition, all []*crdState) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := map[string]bool{}, map[string]bool{}
	for _, s := range all {
		if s.crd.Spec.Group != crd.Spec.Group {
			continue
		}
		n := s.crd.Status.AcceptedNames
		resources[n.Plural], resources[n.Singular] = true, true
		for _, sn := range n.ShortNames {
			resources[sn] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	for _, k := range c.m.cfg.Registry.Kinds() {
		if k.GVK.Group != crd.Spec.Group || c.isServedCRDKind(k) {
			continue
		}
		resources[k.Resource], resources[k.Singular] = true, true
		for _, sn := range k.ShortNames {
			resources[sn] = true
		}
		kinds[k.GVK.Kind], kinds[k.ListKind] = true, true
	}
	delete(resources, "")
	delete(kinds, "")

	want, have := crd.Spec.Names, crd.Status.AcceptedNames
	names := have
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	if err := freeName(want.Plural, have.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = want.Plural
	}
	if err := freeName(want.Singular, have.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = want.Singular
	}
	if !slices.Equal(want.ShortNames, have.ShortNames) {
		var errs []string
		for _, sn := range want.ShortNames {
			// A short name crd holds already, or one equal to its own
			// plural or singular, is no conflict.
			if slices.Contains(have.ShortNames, sn) || sn == have.Plural || sn == have.Singular {
				continue
			}
			if err := freeName(sn, "", resources); err != nil {
				errs = append(errs, err.Error())
			}
		}
		switch len(errs) {
		case 0:
			names.ShortNames = want.ShortNames
		case 1:
			conflict("ShortNamesConflict", errors.New(errs[0]))
		default:
			// An aggregate of errors reads "[a, b]".
			conflict("ShortNamesConflict", errors.New("["+strings.Join(errs, ", ")+"]"))
		}
	}
	if err := freeName(want.Kind, have.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = want.Kind
	}
	if err := freeName(want.ListKind, have.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = want.ListKind
	}
	names.Categories = want.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}

	// Established is false until the establishing step sees the names
	// accepted; once true it stays.
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
		Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := findCondition(crd, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: "Installing", Message: "the initial names have been accepted",
		}
	}
	return names, cond, established
}

// freeName returns an error when requested is neither crd's accepted name
// nor unused.
func freeName(requested, accepted string, used map[string]bool) error {
	if requested == accepted || !used[requested] {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// cleanup finalizes a CRD being deleted: it deletes its instances when it
// was established, and removes its finalizer once none is left. waiting
// reports instances still held by their own finalizers.
func (c *crdController) cleanup(ctx context.Context, s *crdState) (waiting bool, err error) {
	terminating := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
		Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
	}
	if !sameCondition(findCondition(s.crd, apiextensionsv1.Terminating), &terminating) {
		if err := c.writeStatus(ctx, s, func(crd *apiextensionsv1.CustomResourceDefinition) { setCondition(crd, terminating) }); err != nil {
			return false, err
		}
	}
	var done apiextensionsv1.CustomResourceDefinitionCondition
	if isConditionTrue(s.crd, apiextensionsv1.Established) {
		left, err := c.deleteInstances(ctx, s.crd)
		if err != nil {
			msg := fmt.Sprintf("could not issue all deletes: %v", err)
			if werr := c.writeStatus(ctx, s, func(crd *apiextensionsv1.CustomResourceDefinition) {
				setCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
					Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
					Reason: "InstanceDeletionFailed", Message: msg,
				})
			}); werr != nil {
				return false, errors.Join(err, werr)
			}
			return false, err
		}
		if left > 0 {
			return true, nil
		}
		done = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
			Reason: "InstanceDeletionCompleted", Message: "removed all instances",
		}
	} else {
		done = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
			Reason: "NeverEstablished", Message: "resource was never established",
		}
	}
	// Emptying the finalizers of a CRD being deleted removes it.
	return false, c.writeStatus(ctx, s, func(crd *apiextensionsv1.CustomResourceDefinition) {
		setCondition(crd, done)
		crd.Finalizers = slices.DeleteFunc(crd.Finalizers, func(f string) bool { return f == registry.CRDCleanupFinalizer })
	})
}

// deleteInstances deletes every stored instance of crd, as a DELETE of
// each would (their finalizers hold them), and returns how many are left.
func (c *crdController) deleteInstances(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (left int, err error) {
	served := c.served[crd.Name]
	if served == nil || len(served.kinds) == 0 {
		return 0, nil
	}
	// Every version shares the storage; any kind deletes.
	k := served.kinds[0]
	res, err := c.m.cfg.Store.List(ctx, store.ListOptions{Resource: k.StorageResource})
	if err != nil {
		return 0, err
	}
	bg := metav1.DeletePropagationBackground
	var errs []error
	for _, o := range res.Objects {
		deleted, err := c.m.cfg.Objects.DeleteObject(ctx, k, o.Key.Namespace, o.Key.Name, &metav1.DeleteOptions{PropagationPolicy: &bg})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, err)
			left++
		case !deleted:
			left++
		}
	}
	return left, errors.Join(errs...)
}

// writeStatus changes s.crd's status with change, through the status
// subresource, and keeps what was written in s.crd. A CRD gone meanwhile
// is no error: the next round sees it gone.
func (c *crdController) writeStatus(ctx context.Context, s *crdState, change func(*apiextensionsv1.CustomResourceDefinition)) error {
	var written *apiextensionsv1.CustomResourceDefinition
	deleted, err := c.m.cfg.Objects.UpdateObject(ctx, c.kind, "", s.crd.Name, "status", crdStatusManager, func(cur runtime.Object) (runtime.Object, error) {
		crd, ok := cur.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			return nil, fmt.Errorf("update custom resource definition %s: got %T", s.crd.Name, cur)
		}
		if crd.UID != s.crd.UID {
			return nil, apierrors.NewNotFound(CRDResource.GroupResource(), s.crd.Name)
		}
		change(crd)
		written = crd
		return crd, nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of custom resource definition %s: %w", s.crd.Name, err)
	}
	if written != nil && !deleted {
		s.crd = written
	}
	return nil
}

// serve makes the registry serve exactly the CRDs whose names are accepted
// or that are established: kinds are
// built again for a CRD whose spec (generation) or accepted names changed,
// and removed for one that is gone or no longer established. All changes
// of a round are published as one registry snapshot.
func (c *crdController) serve(crds []*crdState) error {
	build := c.m.cfg.CustomResourceKinds
	if build == nil {
		return nil
	}
	var (
		remove []schema.GroupVersionResource
		add    []*registry.Kind
		errs   []error
	)
	seen := map[string]bool{}
	for _, s := range crds {
		crd := s.crd
		// Served once its names are accepted, as kube-apiserver's CRD
		// handler serves it, and while it is established.
		if !isConditionTrue(crd, apiextensionsv1.Established) && !isConditionTrue(crd, apiextensionsv1.NamesAccepted) {
			continue
		}
		seen[crd.Name] = true
		cur := c.served[crd.Name]
		if cur != nil && cur.uid == crd.UID && cur.generation == crd.Generation && equality.Semantic.DeepEqual(cur.names, crd.Status.AcceptedNames) {
			continue
		}
		// Kinds are served under the accepted names, which may lag the
		// spec's (a conflicting rename).
		named := crd.DeepCopy()
		named.Spec.Names = crd.Status.AcceptedNames
		kinds, err := build(named)
		if err != nil {
			errs = append(errs, fmt.Errorf("serve custom resource definition %s: %w", crd.Name, err))
			continue
		}
		if cur != nil {
			remove = append(remove, cur.gvrs...)
		}
		next := &servedCRD{uid: crd.UID, generation: crd.Generation, names: crd.Status.AcceptedNames, kinds: kinds}
		for _, k := range kinds {
			next.gvrs = append(next.gvrs, k.GVK.GroupVersion().WithResource(k.Resource))
		}
		add = append(add, kinds...)
		c.served[crd.Name] = next
	}
	for name, cur := range c.served {
		if !seen[name] {
			remove = append(remove, cur.gvrs...)
			delete(c.served, name)
		}
	}
	if len(remove) > 0 || len(add) > 0 {
		// A kind re-added after its removal in the same round stays.
		c.m.cfg.Registry.Replace(remove, add)
	}
	return errors.Join(errs...)
}

// isServedCRDKind reports whether k was registered for a CRD.
func (c *crdController) isServedCRDKind(k *registry.Kind) bool {
	for _, s := range c.served {
		if slices.Contains(s.kinds, k) {
			return true
		}
	}
	return false
}

func findCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	return registry.FindCRDCondition(crd, t)
}

func setCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	registry.SetCRDCondition(crd, c)
}

func isConditionTrue(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	c := findCondition(crd, t)
	return c != nil && c.Status == apiextensionsv1.ConditionTrue
}

// sameCondition compares what a condition says, not when it changed.
func sameCondition(a, b *apiextensionsv1.CustomResourceDefinitionCondition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

func hasFinalizer(crd *apiextensionsv1.CustomResourceDefinition, f string) bool {
	return slices.Contains(crd.Finalizers, f)
}
