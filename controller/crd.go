package controller

import (
	"context"
	"encoding/json"
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
// loopback client. kube-apiserver writes a new CRD's status twice: its
// naming controller accepts the names (Established False, "Installing"),
// and once the custom resource handler serves them, its establishing
// controller sets Established. Here the kinds are registered before the
// status is written, so a CRD whose names are accepted gets both in one
// write: the state kube-apiserver ends in, with one update of the CRD
// instead of two.
//
// The loop keeps every CRD's metadata, names and status in memory
// (crdState), kept current by the commits it observes: a round decodes
// only the CRDs written since the last one, and reads a CRD's schemas
// only to build its kinds. A commit that touches a CRD wakes the loop; it
// also runs every crdSweepInterval, and sooner while instances of a
// deleted CRD are held by their finalizers.

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

// crdChanges collects the CRDs that commits wrote, for the CRD loop. The
// store's writer records them (Manager.observe); the loop takes them.
type crdChanges struct {
	mu sync.Mutex
	// byName holds the last committed state of each CRD written since the
	// last take; a Deleted event's object is the CRD's last state.
	byName map[string]store.Event
}

// record notes the CRD events of a commit and reports whether there was
// one.
func (c *crdChanges) record(events []store.Event, resource string) bool {
	found := false
	for i := range events {
		e := &events[i]
		if e.Object.Key.Resource != resource {
			continue
		}
		if !found {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.byName == nil {
				c.byName = map[string]store.Event{}
			}
			found = true
		}
		// The store's values are immutable: keeping them is safe.
		c.byName[e.Object.Key.Name] = store.Event{Type: e.Type, Object: e.Object}
	}
	return found
}

// take returns the recorded changes and forgets them.
func (c *crdChanges) take() map[string]store.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byName
	c.byName = nil
	return m
}

// crdController is the state of the CRD loop; only its goroutine uses it.
type crdController struct {
	m      *Manager
	kind   *registry.Kind
	served map[string]*servedCRD // by CRD name
	// crds holds every stored CRD by name, as of listRev and the changes
	// taken since.
	crds    map[string]*crdState
	listed  bool
	listRev int64
}

// crdState is what the loop knows of one stored CRD.
type crdState struct {
	// crd holds what the loop uses of the CRD (see crdHead): not its
	// schemas, managedFields or annotations. It is shared, never
	// modified: a change replaces it.
	crd       *apiextensionsv1.CustomResourceDefinition
	createRev int64
	modRev    int64
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
	c := &crdController{m: m, kind: k, served: map[string]*servedCRD{}, crds: map[string]*crdState{}}
	t := time.NewTicker(crdSweepInterval)
	defer t.Stop()
	for {
		// Status writes and cleanup are the leader's; every replica
		// serves.
		retry, err := c.sync(ctx, m.leadContext())
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

// crdHead decodes a stored CRD without what the loop does not use: of
// the metadata, the name, uid, generation, deletionTimestamp and
// finalizers; of the spec, the group, names and scope. Skipping the
// schemas, managedFields (which list every field of the schemas) and
// annotations (kubectl's last-applied configuration holds the whole CRD)
// saves most of the decoding and keeps the loop small in memory.
// Metadata and Spec shadow the embedded CRD's.
type crdHead struct {
	apiextensionsv1.CustomResourceDefinition
	Metadata struct {
		Name              string       `json:"name"`
		UID               types.UID    `json:"uid"`
		Generation        int64        `json:"generation"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		Finalizers        []string     `json:"finalizers"`
	} `json:"metadata"`
	Spec struct {
		Group      string                                        `json:"group"`
		Names      apiextensionsv1.CustomResourceDefinitionNames `json:"names"`
		Scope      apiextensionsv1.ResourceScope                 `json:"scope"`
		Conversion *apiextensionsv1.CustomResourceConversion     `json:"conversion"`
	} `json:"spec"`
}

// decodeHead decodes a stored CRD as crdState keeps it.
func decodeHead(o store.Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	var h crdHead
	if err := json.Unmarshal(o.Value, &h); err != nil {
		return nil, fmt.Errorf("decode custom resource definition %s: %w", o.Key.Name, err)
	}
	crd := &h.CustomResourceDefinition
	m := &h.Metadata
	crd.ObjectMeta = metav1.ObjectMeta{Name: m.Name, UID: m.UID, Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp, Finalizers: m.Finalizers}
	crd.Spec.Group, crd.Spec.Names, crd.Spec.Scope, crd.Spec.Conversion = h.Spec.Group, h.Spec.Names, h.Spec.Scope, h.Spec.Conversion
	return crd, nil
}

// head returns crd as crdState keeps it (see crdHead): a shallow copy of
// what the loop uses. crd must not be modified afterwards.
func head(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	m := &crd.ObjectMeta
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   crd.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, UID: m.UID, Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp, Finalizers: m.Finalizers},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: crd.Spec.Group, Names: crd.Spec.Names, Scope: crd.Spec.Scope, Conversion: crd.Spec.Conversion},
		Status:     crd.Status,
	}
}

// refresh brings c.crds up to date: the first round lists every CRD,
// later rounds apply the commits observed since.
func (c *crdController) refresh(ctx context.Context) error {
	if !c.listed {
		// Changes recorded before the list are in it, or newer than it.
		res, err := c.m.cfg.Store.List(ctx, store.ListOptions{Resource: c.kind.StorageResource})
		if err != nil {
			return fmt.Errorf("list custom resource definitions: %w", err)
		}
		crds := make(map[string]*crdState, len(res.Objects))
		for _, o := range res.Objects {
			crd, err := decodeHead(o)
			if err != nil {
				return err
			}
			crds[o.Key.Name] = &crdState{crd: crd, createRev: o.CreateRev, modRev: o.ModRev}
		}
		c.crds, c.listRev, c.listed = crds, res.Rev, true
	}
	var errs []error
	for name, e := range c.m.crdChanges.take() {
		cur := c.crds[name]
		if e.Object.ModRev <= c.listRev || (cur != nil && e.Object.ModRev <= cur.modRev) {
			continue // the list, or a later change, has it
		}
		if e.Type == store.Deleted {
			delete(c.crds, name)
			continue
		}
		crd, err := decodeHead(e.Object)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.crds[name] = &crdState{crd: crd, createRev: e.Object.CreateRev, modRev: e.Object.ModRev}
	}
	return errors.Join(errs...)
}

// sync runs one round over every CRD. retry asks for another round soon.
// wctx is the context of the round's writes (names, Established, cleanup):
// the leadership's, or nil on a replica that does not lead, which serves
// the CRDs as their stored status says and writes nothing.
func (c *crdController) sync(ctx, wctx context.Context) (retry bool, err error) {
	if err := c.refresh(ctx); err != nil {
		if !c.listed {
			return false, err
		}
		// A CRD that does not decode is left as it was; the others go on.
		c.m.log.Sugar().Warnw("sync custom resource definitions", "error", err)
	}
	crds := make([]*crdState, 0, len(c.crds))
	for _, s := range c.crds {
		crds = append(crds, s)
	}
	// The oldest CRD of a group gets a contested name, as in kube-apiserver
	// where the first to be processed holds it.
	sort.Slice(crds, func(i, j int) bool {
		if crds[i].createRev != crds[j].createRev {
			return crds[i].createRev < crds[j].createRev
		}
		return crds[i].crd.Name < crds[j].crd.Name
	})

	r := &crdRound{c: c, all: crds, writes: map[*crdState]*statusWrite{}}
	if wctx == nil {
		errs := r.serveAndWrite(ctx, ctx)
		c.m.markCRDsServed()
		return false, errors.Join(errs...)
	}
	for _, s := range crds {
		if s.crd.DeletionTimestamp != nil {
			continue
		}
		r.acceptNames(s)
	}
	for _, s := range crds {
		if s.crd.DeletionTimestamp != nil {
			continue
		}
		r.establish(s)
	}
	// Serving comes before the status writes (kubectl wait --for
	// condition=established, then a create, must find the resource) and
	// before cleanup (after a restart, the instances of a CRD deleted
	// before it are found through the kinds it serves).
	errs := r.serveAndWrite(ctx, wctx)
	// A CRD whose kinds cannot be built is reported, and the others are
	// served: either way the stored CRDs have been through serving once.
	c.m.markCRDsServed()
	for _, s := range crds {
		if s.crd.DeletionTimestamp == nil || !hasFinalizer(s.crd, registry.CRDCleanupFinalizer) {
			continue
		}
		waiting, err := c.cleanup(wctx, s)
		if err != nil {
			errs = append(errs, err)
		}
		retry = retry || waiting
	}
	return retry, errors.Join(errs...)
}

// crdRound is the work one round decides on: the status writes and the
// names taken in each group as the writes will leave them.
type crdRound struct {
	c      *crdController
	all    []*crdState // by age
	writes map[*crdState]*statusWrite
	// groups holds the names taken in each group looked at, built on
	// first use.
	groups map[string]*groupNames
	// crdKinds holds the kinds served for CRDs, built on first use.
	crdKinds map[*registry.Kind]bool
}

// statusWrite is a status change for one CRD that a round decided on.
type statusWrite struct {
	s      *crdState
	orig   *apiextensionsv1.CustomResourceDefinition
	change func(*apiextensionsv1.CustomResourceDefinition)
}

// plan records change for s: s.crd becomes a copy with the change made,
// so that the rest of the round sees it, until the write is made. Changes
// planned for one CRD in a round are made in one write, in order.
func (r *crdRound) plan(s *crdState, change func(*apiextensionsv1.CustomResourceDefinition)) {
	prev := s.crd
	next := prev.DeepCopy()
	change(next)
	s.crd = next
	if w := r.writes[s]; w != nil {
		first := w.change
		w.change = func(crd *apiextensionsv1.CustomResourceDefinition) {
			first(crd)
			change(crd)
		}
		return
	}
	r.writes[s] = &statusWrite{s: s, orig: prev, change: change}
}

// acceptNames plans the naming step for s when it changes its status.
func (r *crdRound) acceptNames(s *crdState) {
	crd := s.crd
	if equality.Semantic.DeepEqual(crd.Spec.Names, crd.Status.AcceptedNames) {
		return
	}
	g := r.groupNames(crd.Spec.Group)
	names, accepted, established := namesAndConditions(crd, g)
	if equality.Semantic.DeepEqual(names, crd.Status.AcceptedNames) && sameCondition(findCondition(crd, apiextensionsv1.NamesAccepted), &accepted) {
		return
	}
	g.add(crd.Status.AcceptedNames, -1)
	g.add(names, 1)
	r.plan(s, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Status.AcceptedNames = names
		setCondition(crd, accepted)
		setCondition(crd, established)
	})
}

// establish plans Established once the names are accepted. Like every
// status write, it is made once serveAndWrite registered the kinds, so a
// client that waits for Established finds the resource served.
func (r *crdRound) establish(s *crdState) {
	crd := s.crd
	if !isConditionTrue(crd, apiextensionsv1.NamesAccepted) || isConditionTrue(crd, apiextensionsv1.Established) {
		return
	}
	cond := establishedCondition(crd)
	if old := findCondition(crd, apiextensionsv1.Established); old != nil && sameCondition(old, &cond) {
		return
	}
	r.plan(s, func(crd *apiextensionsv1.CustomResourceDefinition) {
		setCondition(crd, cond)
	})
}

// establishedCondition is the Established condition a CRD whose names are
// accepted gets: True, or, as kube-apiserver's establishing controller
// has it, False while its conversion webhook's caBundle holds no usable
// certificate (a CRD may be created so; it is established once the
// caBundle is fixed).
func establishedCondition(crd *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionCondition {
	if registry.ConversionCABundleInvalid(crd) {
		return apiextensionsv1.CustomResourceDefinitionCondition{
			Type:    apiextensionsv1.Established,
			Status:  apiextensionsv1.ConditionFalse,
			Reason:  "InvalidCABundle",
			Message: "The conversion webhook CABundle is invalid",
		}
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{
		Type:    apiextensionsv1.Established,
		Status:  apiextensionsv1.ConditionTrue,
		Reason:  "InitialNamesAccepted",
		Message: "the initial names have been accepted",
	}
}

// groupNames is the names taken in one API group: the accepted names of
// its CRDs and the names of its built-in kinds. They are counted, so that
// a CRD's accepted names can change during a round.
type groupNames struct {
	resources map[string]int // plurals, singulars and short names
	kinds     map[string]int // kinds and list kinds
}

// add counts n's names d times (1 to take them, -1 to give them back).
func (g *groupNames) add(n apiextensionsv1.CustomResourceDefinitionNames, d int) {
	count := func(m map[string]int, name string) {
		if name != "" {
			m[name] += d
		}
	}
	count(g.resources, n.Plural)
	count(g.resources, n.Singular)
	for _, sn := range n.ShortNames {
		count(g.resources, sn)
	}
	count(g.kinds, n.Kind)
	count(g.kinds, n.ListKind)
}

// used returns the set view of names.
func used(names map[string]int) func(string) bool {
	return func(name string) bool { return names[name] > 0 }
}

// groupNames returns the names taken in group, built from every CRD of
// the round and the registry's built-in kinds on first use.
func (r *crdRound) groupNames(group string) *groupNames {
	if g, ok := r.groups[group]; ok {
		return g
	}
	g := &groupNames{resources: map[string]int{}, kinds: map[string]int{}}
	for _, s := range r.all {
		if s.crd.Spec.Group == group {
			g.add(s.crd.Status.AcceptedNames, 1)
		}
	}
	if r.crdKinds == nil {
		r.crdKinds = map[*registry.Kind]bool{}
		for _, sv := range r.c.served {
			for _, k := range sv.kinds {
				r.crdKinds[k] = true
			}
		}
	}
	for _, k := range r.c.m.cfg.Registry.Kinds() {
		if k.GVK.Group != group || r.crdKinds[k] {
			continue
		}
		g.add(apiextensionsv1.CustomResourceDefinitionNames{Plural: k.Resource, Singular: k.Singular, ShortNames: k.ShortNames, Kind: k.GVK.Kind, ListKind: k.ListKind}, 1)
	}
	if r.groups == nil {
		r.groups = map[string]*groupNames{}
	}
	r.groups[group] = g
	return g
}

// namesAndConditions decides which of crd's requested names it may have,
// against g, the names the CRDs of its group accepted and the built-in
// kinds of the group, with kube-apiserver's conditions: a name is
// accepted when it is already crd's or nobody else's.
func namesAndConditions(crd *apiextensionsv1.CustomResourceDefinition, g *groupNames) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := used(g.resources), used(g.kinds)

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
func freeName(requested, accepted string, used func(string) bool) error {
	if requested == accepted || !used(requested) {
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
		s.crd = head(written)
	}
	return nil
}

// crdWriters bounds the status writes a round makes at once. The writes
// of a burst of CRDs then share group commits instead of waiting for one
// fsync each.
const crdWriters = 32

// crdBuildChunk is how many CRDs' kinds are built before they are
// registered (one registry snapshot) and their status writes start: the
// writes of one chunk overlap the building of the next.
const crdBuildChunk = 16

// serveAndWrite makes the registry serve exactly the CRDs whose names are
// accepted or that are established, and makes the round's status writes.
// Kinds are built again for a CRD whose spec (generation) or accepted
// names changed, and removed for one that is gone. A CRD's status write
// is made once its kinds are registered; the writes run under wctx.
func (r *crdRound) serveAndWrite(ctx, wctx context.Context) []error {
	c := r.c
	var (
		remove []schema.GroupVersionResource
		builds []*crdState
	)
	building := map[*crdState]bool{}
	seen := map[string]bool{}
	for _, s := range r.all {
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
		if c.m.cfg.CustomResourceKinds != nil {
			builds = append(builds, s)
			building[s] = true
		}
	}
	for name, cur := range c.served {
		if !seen[name] {
			remove = append(remove, cur.gvrs...)
			delete(c.served, name)
		}
	}
	if len(remove) > 0 {
		c.m.cfg.Registry.Replace(remove, nil)
	}

	// The writers take the writes as they come: first those of CRDs
	// served already (or not at all), then chunk by chunk.
	jobs := make(chan *statusWrite, len(r.writes))
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range min(crdWriters, len(r.writes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range jobs {
				// writeStatus applies the change to the stored CRD and
				// keeps what it wrote in w.s.crd, or w.orig on failure.
				w.s.crd = w.orig
				if err := c.writeStatus(wctx, w.s, w.change); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, s := range r.all {
		if w := r.writes[s]; w != nil && !building[s] {
			jobs <- w
		}
	}
	for len(builds) > 0 {
		chunk := builds[:min(crdBuildChunk, len(builds))]
		builds = builds[len(chunk):]
		if err := c.serveChunk(ctx, chunk); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		for _, s := range chunk {
			if w := r.writes[s]; w != nil {
				jobs <- w
			}
		}
	}
	close(jobs)
	wg.Wait()
	return errs
}

// serveChunk builds the kinds of the CRDs in chunk, under the accepted
// names the round gave them, and publishes them as one registry snapshot.
// Their status writes have not started: only this goroutine reads them.
func (c *crdController) serveChunk(ctx context.Context, chunk []*crdState) error {
	var (
		remove []schema.GroupVersionResource
		add    []*registry.Kind
		errs   []error
	)
	for _, s := range chunk {
		crd, err := c.readForKinds(ctx, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("serve custom resource definition %s: %w", s.crd.Name, err))
			continue
		}
		if crd == nil {
			continue // gone or replaced: a later round sees it
		}
		kinds, err := c.m.cfg.CustomResourceKinds(crd)
		if err != nil {
			errs = append(errs, fmt.Errorf("serve custom resource definition %s: %w", s.crd.Name, err))
			continue
		}
		if cur := c.served[s.crd.Name]; cur != nil {
			remove = append(remove, cur.gvrs...)
		}
		next := &servedCRD{uid: crd.UID, generation: crd.Generation, names: s.crd.Status.AcceptedNames, kinds: kinds}
		for _, k := range kinds {
			next.gvrs = append(next.gvrs, k.GVK.GroupVersion().WithResource(k.Resource))
		}
		add = append(add, kinds...)
		c.served[s.crd.Name] = next
	}
	if len(remove) > 0 || len(add) > 0 {
		// A kind re-added after its removal in the same snapshot stays.
		c.m.cfg.Registry.Replace(remove, add)
	}
	return errors.Join(errs...)
}

// readForKinds reads s's CRD whole, as the kinds are built from it: its
// stored spec with the accepted names the round gave it (they may lag the
// spec's: a conflicting rename). It returns nil when the CRD is gone or
// was replaced by another of the same name.
func (c *crdController) readForKinds(ctx context.Context, s *crdState) (*apiextensionsv1.CustomResourceDefinition, error) {
	o, err := c.m.cfg.Store.Get(ctx, store.Key{Resource: c.kind.StorageResource, Name: s.crd.Name})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	obj, err := c.kind.DecodeStored(o.Value)
	if err != nil {
		return nil, err
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, fmt.Errorf("decode custom resource definition %s: got %T", s.crd.Name, obj)
	}
	if crd.UID != s.crd.UID {
		return nil, nil
	}
	crd.Spec.Names = s.crd.Status.AcceptedNames
	crd.Status = *s.crd.Status.DeepCopy()
	return crd, nil
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
