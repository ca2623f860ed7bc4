package registry

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/edgeapi/edgeapi/store"
)

// Defaults of the Service allocators, kube-apiserver's.
const (
	// DefaultServiceClusterIPRange is kube-apiserver's default
	// --service-cluster-ip-range. Its first address goes to the
	// default/kubernetes Service.
	DefaultServiceClusterIPRange = "10.0.0.0/24"
	// DefaultServiceNodePortRange is kube-apiserver's default
	// --service-node-port-range.
	DefaultServiceNodePortRange = "30000-32767"
	// maxServiceRangeHostBits bounds the cluster IP range to 2^20
	// addresses (kube-apiserver refuses IPv4 ranges larger than /12 and
	// IPv6 ranges larger than /108).
	maxServiceRangeHostBits = 20
)

// Errors of the allocators, worded as kube-apiserver's.
var (
	errIPAllocated   = errors.New("provided IP is already allocated")
	errPortAllocated = errors.New("provided port is already allocated")
	errRangeFull     = errors.New("range is full")
)

// BuiltinOptions configure the built-in kinds. The zero value means
// kube-apiserver's defaults.
type BuiltinOptions struct {
	// ServiceClusterIPRange is the CIDR Service cluster IPs come from
	// (--service-cluster-ip-range); empty means
	// DefaultServiceClusterIPRange.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the inclusive "min-max" range of node ports
	// (--service-node-port-range); empty means DefaultServiceNodePortRange.
	ServiceNodePortRange string
	// Claims, when set, is the store several replicas share (etcd): each
	// allocated cluster IP and node port is claimed in it, so that no two
	// replicas hand out the same value, and the allocators follow its
	// Service events (see serviceclaims.go). Nil (SQLite: one process):
	// allocation stays in memory.
	Claims store.Store
}

// ParseServiceClusterIPRange parses a --service-cluster-ip-range value
// (empty: the default). The range needs at least 8 addresses and at most
// 2^20.
func ParseServiceClusterIPRange(s string) (netip.Prefix, error) {
	if s == "" {
		s = DefaultServiceClusterIPRange
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse service cluster IP range %q: %w", s, err)
	}
	host := p.Addr().BitLen() - p.Bits()
	if host < 3 || host > maxServiceRangeHostBits {
		return netip.Prefix{}, fmt.Errorf("parse service cluster IP range %q: the range must hold between 2^3 and 2^%d addresses", s, maxServiceRangeHostBits)
	}
	return p.Masked(), nil
}

// PortRange is an inclusive range of ports.
type PortRange struct{ Base, Size int }

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1) }

// ParsePortRange parses a --service-node-port-range value ("30000-32767",
// or a single port; empty: the default).
func ParsePortRange(s string) (PortRange, error) {
	if s == "" {
		s = DefaultServiceNodePortRange
	}
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	min, err := strconv.Atoi(lo)
	if err != nil {
		return PortRange{}, fmt.Errorf("parse port range %q: %w", s, err)
	}
	max := min
	if found {
		if max, err = strconv.Atoi(hi); err != nil {
			return PortRange{}, fmt.Errorf("parse port range %q: %w", s, err)
		}
	}
	if min < 1 || max > 65535 || max < min {
		return PortRange{}, fmt.Errorf("parse port range %q: want 1 <= min <= max <= 65535", s)
	}
	return PortRange{Base: min, Size: max - min + 1}, nil
}

// KubernetesServiceIP is the cluster IP of the default/kubernetes Service:
// the first address of the range after the network address.
func KubernetesServiceIP(opts BuiltinOptions) (netip.Addr, error) {
	p, err := ParseServiceClusterIPRange(opts.ServiceClusterIPRange)
	if err != nil {
		return netip.Addr{}, err
	}
	return p.Addr().Next(), nil
}

// pool hands out offsets 0..size-1 of a range. Dynamic allocation prefers
// the upper band, leaving the lower band (the first reserved offsets) to
// clients that ask for a fixed value, as kube-apiserver's allocators do
// (KEP-3070, KEP-3668). Not safe for concurrent use: serviceAllocator
// locks.
type pool struct {
	size     int
	reserved int
	used     map[int]bool
}

func newPool(size, reserved int) *pool {
	return &pool{size: size, reserved: reserved, used: map[int]bool{}}
}

// next takes a free offset: a random one in the upper band, else the first
// free one in the lower band.
func (p *pool) next() (int, bool) {
	upper := p.size - p.reserved
	if upper > 0 {
		start := rand.IntN(upper)
		for i := 0; i < upper; i++ {
			o := p.reserved + (start+i)%upper
			if !p.used[o] {
				p.used[o] = true
				return o, true
			}
		}
	}
	for o := 0; o < p.reserved && o < p.size; o++ {
		if !p.used[o] {
			p.used[o] = true
			return o, true
		}
	}
	return 0, false
}

// serviceAllocator allocates Service cluster IPs and node ports. Its state
// is derived from the stored Services: load rebuilds it from a list at
// start, beginCreate and beginUpdate reserve before the store write and
// give back what a failed write or a dry run reserved, afterDelete frees
// what a deleted Service held. A crash loses only the in-memory state, which
// the next start rebuilds, so nothing leaks and nothing is handed out twice.
type serviceAllocator struct {
	prefix    netip.Prefix
	portRange PortRange
	// first is the first usable address (the network address is skipped;
	// so is the IPv4 broadcast address, at the end).
	first netip.Addr

	// claims is BuiltinOptions.Claims: nil when allocation is in memory
	// only.
	claims store.Store

	// mu guards ips and ports. It is never held across a store call.
	mu    sync.Mutex
	ips   *pool
	ports *pool
}

// newServiceAllocator returns the allocator over opts' ranges.
func newServiceAllocator(opts BuiltinOptions) (*serviceAllocator, error) {
	prefix, err := ParseServiceClusterIPRange(opts.ServiceClusterIPRange)
	if err != nil {
		return nil, err
	}
	ports, err := ParsePortRange(opts.ServiceNodePortRange)
	if err != nil {
		return nil, err
	}
	size := 1<<(prefix.Addr().BitLen()-prefix.Bits()) - 1 // without the network address
	if prefix.Addr().Is4() {
		size-- // nor the broadcast address
	}
	a := &serviceAllocator{prefix: prefix, portRange: ports, first: prefix.Addr().Next(), claims: opts.Claims}
	a.ips = newPool(size, min(max(16, size/16), 256))
	a.ports = newPool(ports.Size, min(max(16, ports.Size/32), 128))
	if a.claims != nil {
		// For the life of the store: the registry has no Close.
		a.claims.Subscribe(a.observe)
	}
	return a, nil
}

// ipOffset is addr's offset in the pool, or -1 when out of range.
func (a *serviceAllocator) ipOffset(addr netip.Addr) int {
	if !a.prefix.Contains(addr) {
		return -1
	}
	d := new(big.Int).Sub(new(big.Int).SetBytes(addr.AsSlice()), new(big.Int).SetBytes(a.first.AsSlice()))
	if d.Sign() < 0 || !d.IsInt64() || d.Int64() >= int64(a.ips.size) {
		return -1
	}
	return int(d.Int64())
}

func (a *serviceAllocator) ipAt(offset int) netip.Addr {
	n := new(big.Int).Add(new(big.Int).SetBytes(a.first.AsSlice()), big.NewInt(int64(offset)))
	b := n.FillBytes(make([]byte, a.first.BitLen()/8))
	addr, _ := netip.AddrFromSlice(b)
	return addr
}

// reservation is what one create or update reserved (taken now) and what
// it frees when its write commits (released later).
type reservation struct {
	ips, ports         []int
	freeIPs, freePorts []int
	// svc is the Service, for its claims (with Claims only).
	svc *corev1.Service
}

// undoLocked gives back what r took.
func (a *serviceAllocator) undoLocked(r *reservation) {
	for _, o := range r.ips {
		delete(a.ips.used, o)
	}
	for _, o := range r.ports {
		delete(a.ports.used, o)
	}
}

// finish returns the FinishFunc of r: on success the freed values go back
// to the pools, otherwise the reserved ones do.
func (a *serviceAllocator) finish(r *reservation) FinishFunc {
	var once sync.Once
	return func(ctx context.Context, success bool) {
		once.Do(func() {
			if a.claims != nil {
				if success {
					a.releaseOffsets(context.WithoutCancel(ctx), r.svc, r.freeIPs, r.freePorts)
				} else {
					a.releaseOffsets(context.WithoutCancel(ctx), r.svc, r.ips, r.ports)
				}
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if !success {
				a.undoLocked(r)
				return
			}
			for _, o := range r.freeIPs {
				delete(a.ips.used, o)
			}
			for _, o := range r.freePorts {
				delete(a.ports.used, o)
			}
		})
	}
}

// load marks the IPs and ports of the stored Services as used, replacing
// any earlier state. A stored value outside the ranges (the flags changed
// since) is ignored: it was allocated under the old ranges. With Claims,
// it also claims the values of Services stored without claims (moved from
// SQLite with edgeapi migrate): one Create each, which finds the claims of
// the others in place.
func (a *serviceAllocator) load(objs []runtime.Object) error {
	if err := a.loadPools(objs); err != nil {
		return err
	}
	if a.claims == nil {
		return nil
	}
	ctx := context.Background()
	for _, obj := range objs {
		svc := obj.(*corev1.Service)
		a.mu.Lock()
		ips, ports := a.heldLocked(svc)
		a.mu.Unlock()
		keys := make([]store.Key, 0, len(ips)+len(ports))
		for _, o := range ips {
			keys = append(keys, a.ipClaimKey(o))
		}
		for _, o := range ports {
			keys = append(keys, a.portClaimKey(o))
		}
		for _, k := range keys {
			value, uid, err := newClaim(k.Name, svc, time.Now())
			if err != nil {
				return err
			}
			if _, err := a.claims.Create(ctx, k, uid, value); err != nil && !errors.Is(err, store.ErrExists) {
				return fmt.Errorf("claim %s of service %s/%s: %w", k.Name, svc.Namespace, svc.Name, err)
			}
		}
	}
	return nil
}

// loadPools is load's part in memory.
func (a *serviceAllocator) loadPools(objs []runtime.Object) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ips.used = map[int]bool{}
	a.ports.used = map[int]bool{}
	for _, obj := range objs {
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return fmt.Errorf("load services: unexpected object %T", obj)
		}
		ips, ports := a.heldLocked(svc)
		for _, o := range ips {
			a.ips.used[o] = true
		}
		for _, o := range ports {
			a.ports.used[o] = true
		}
	}
	return nil
}

// heldLocked returns the pool offsets svc holds.
func (a *serviceAllocator) heldLocked(svc *corev1.Service) (ips, ports []int) {
	if needsClusterIP(svc) {
		for _, ip := range svc.Spec.ClusterIPs {
			if addr, err := netip.ParseAddr(ip); err == nil {
				if o := a.ipOffset(addr); o >= 0 {
					ips = append(ips, o)
				}
			}
		}
	}
	add := func(port int32) {
		if o := int(port) - a.portRange.Base; port != 0 && o >= 0 && o < a.portRange.Size {
			for _, x := range ports {
				if x == o {
					return
				}
			}
			ports = append(ports, o)
		}
	}
	for _, p := range svc.Spec.Ports {
		add(p.NodePort)
	}
	add(svc.Spec.HealthCheckNodePort)
	return ips, ports
}

// afterDelete frees what a deleted Service held, and releases its claims.
func (a *serviceAllocator) afterDelete(ctx context.Context, obj runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	a.mu.Lock()
	ips, ports := a.heldLocked(svc)
	for _, o := range ips {
		delete(a.ips.used, o)
	}
	for _, o := range ports {
		delete(a.ports.used, o)
	}
	a.mu.Unlock()
	if a.claims != nil {
		a.releaseOffsets(context.WithoutCancel(ctx), svc, ips, ports)
	}
}

// beginCreate allocates a new Service's cluster IP (unless headless or
// ExternalName) and node ports (NodePort and LoadBalancer), and sets its
// IP family fields, as kube-apiserver's allocateCreate does before
// validation. Requested values that are taken or out of range are a 422.
func (a *serviceAllocator) beginCreate(ctx context.Context, obj runtime.Object) (FinishFunc, error) {
	svc := obj.(*corev1.Service)
	normalizeClusterIPs(svc, nil)
	if err := a.initIPFamilies(svc); err != nil {
		return nil, err
	}
	return a.reserve(ctx, svc, nil)
}

// reserve allocates what svc needs and old (nil on create) does not hold,
// and notes what old held that svc does not, to free after the write.
// With Claims it claims the values allocated; values found claimed by
// other replicas are marked used and the allocation is made again, so a
// requested value held elsewhere is refused as one held here would be.
func (a *serviceAllocator) reserve(ctx context.Context, svc, old *corev1.Service) (FinishFunc, error) {
	var spec *corev1.ServiceSpec
	if a.claims != nil {
		spec = svc.Spec.DeepCopy()
	}
	for attempt := 1; ; attempt++ {
		r := &reservation{svc: svc}
		a.mu.Lock()
		if err := a.allocateLocked(svc, old, r); err != nil {
			a.undoLocked(r)
			a.mu.Unlock()
			return nil, err
		}
		if old != nil {
			oldIPs, oldPorts := a.heldLocked(old)
			newIPs, newPorts := a.heldLocked(svc)
			r.freeIPs = minus(oldIPs, newIPs)
			r.freePorts = minus(oldPorts, newPorts)
		}
		a.mu.Unlock()
		if a.claims == nil {
			return a.finish(r), nil
		}
		takenIPs, takenPorts, err := a.claimReservation(ctx, svc, r)
		if err == nil && len(takenIPs) == 0 && len(takenPorts) == 0 {
			return a.finish(r), nil
		}
		if err == nil {
			err = a.requestedTaken(svc, spec, takenIPs, takenPorts)
		}
		a.mu.Lock()
		a.undoLocked(r)
		for _, o := range takenIPs {
			a.ips.used[o] = true
		}
		for _, o := range takenPorts {
			a.ports.used[o] = true
		}
		a.mu.Unlock()
		if err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return nil, err
			}
			return nil, apierrors.NewInternalError(fmt.Errorf("claim allocated values: %w", err))
		}
		if attempt == maxClaimAttempts {
			return nil, apierrors.NewInternalError(fmt.Errorf("claim allocated values: still claimed by other services after %d attempts", attempt))
		}
		svc.Spec = *spec.DeepCopy()
	}
}

// beginUpdate allocates what an update newly needs (a cluster IP when the
// type leaves ExternalName, node ports when it becomes NodePort or
// LoadBalancer or ports are added) and frees, once the write succeeded,
// what the Service no longer holds.
func (a *serviceAllocator) beginUpdate(ctx context.Context, obj, old runtime.Object) (FinishFunc, error) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	// An update that leaves the family fields out gets them back: on a
	// single-stack cluster they can only hold the one family.
	if err := a.initIPFamilies(svc); err != nil {
		return nil, err
	}
	return a.reserve(ctx, svc, oldSvc)
}

// requestedTaken returns the 422 of a value the client asked for (in
// spec, the Service's spec as sent) that another Service holds, worded as
// allocateLocked words one held here; nil when only allocated values are
// taken.
func (a *serviceAllocator) requestedTaken(svc *corev1.Service, spec *corev1.ServiceSpec, takenIPs, takenPorts []int) error {
	if len(takenIPs) > 0 && spec.ClusterIP != "" {
		return apierrors.NewInvalid(serviceGK, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"),
			svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", spec.ClusterIP, errIPAllocated))})
	}
	for _, o := range takenPorts {
		port := int32(a.portRange.Base + o)
		for i, p := range spec.Ports {
			if p.NodePort == port {
				return apierrors.NewInvalid(serviceGK, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), port, errPortAllocated.Error())})
			}
		}
		if spec.HealthCheckNodePort == port {
			return apierrors.NewInvalid(serviceGK, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "healthCheckNodePort"), port,
				fmt.Sprintf("failed to allocate requested HealthCheck NodePort %v: %v", port, errPortAllocated))})
		}
	}
	return nil
}

// minus returns the values of a that are not in b.
func minus(a, b []int) []int {
	var out []int
	for _, x := range a {
		found := false
		for _, y := range b {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

// initIPFamilies sets ipFamilyPolicy and ipFamilies for this single-stack
// cluster, as kube-apiserver's initIPFamilyFields does; families and
// requested IPs of another family are a 422.
func (a *serviceAllocator) initIPFamilies(svc *corev1.Service) error {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if errs := validateClusterIPsRelatedFields(svc); len(errs) > 0 {
		return apierrors.NewInvalid(serviceGK, svc.Name, errs)
	}
	clusterFamily := familyOf(a.prefix.Addr())
	var errs field.ErrorList
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		fam := familyOf(netip.MustParseAddr(ip))
		if i >= len(spec.IPFamilies) {
			if fam != clusterFamily {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), spec.ClusterIPs,
					fmt.Sprintf("%s is not configured on this cluster", fam)))
			} else {
				spec.IPFamilies = append(spec.IPFamilies, fam)
			}
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceGK, svc.Name, errs)
	}
	if spec.IPFamilyPolicy == nil {
		p := corev1.IPFamilyPolicySingleStack
		spec.IPFamilyPolicy = &p
	}
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), *spec.IPFamilyPolicy,
			"this cluster is not configured for dual-stack services"))
	}
	for i, fam := range spec.IPFamilies {
		if fam != clusterFamily {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), fam, "not configured on this cluster"))
		}
	}
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack && len(spec.IPFamilies) > 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies"), spec.IPFamilies, "when multiple IP families are specified, IP family policy must be RequireDualStack or PreferDualStack"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceGK, svc.Name, errs)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{clusterFamily}
	}
	return nil
}

var serviceGK = corev1.SchemeGroupVersion.WithKind("Service").GroupKind()

// allocateLocked reserves into r the cluster IP and node ports svc needs
// and old (nil on create) does not already hold.
func (a *serviceAllocator) allocateLocked(svc, old *corev1.Service, r *reservation) error {
	var oldIPs, oldPorts []int
	if old != nil {
		oldIPs, oldPorts = a.heldLocked(old)
	}
	has := func(list []int, o int) bool {
		for _, x := range list {
			if x == o {
				return true
			}
		}
		return false
	}
	if needsClusterIP(svc) {
		switch ip := svc.Spec.ClusterIP; ip {
		case "":
			o, ok := a.ips.next()
			if !ok {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %v", errRangeFull))
			}
			r.ips = append(r.ips, o)
			svc.Spec.ClusterIP = a.ipAt(o).String()
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		default:
			addr, err := netip.ParseAddr(ip)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to parse service IP %q", ip))
			}
			o := a.ipOffset(addr)
			if !has(oldIPs, o) {
				var cause error
				switch {
				case o < 0:
					cause = fmt.Errorf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, a.prefix)
				case a.ips.used[o] && a.claims == nil:
					// With Claims, the claim decides: the pool may
					// lag behind the other replicas.
					cause = errIPAllocated
				}
				if cause != nil {
					return apierrors.NewInvalid(serviceGK, svc.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"),
						svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", ip, cause))})
				}
				a.ips.used[o] = true
				r.ips = append(r.ips, o)
			}
		}
	}

	// takePort reserves a requested node port unless old holds it.
	takePort := func(port int32, p *field.Path, format string) error {
		o := int(port) - a.portRange.Base
		inRange := o >= 0 && o < a.portRange.Size
		if inRange && (has(oldPorts, o) || has(r.ports, o)) {
			return nil
		}
		var cause error
		switch {
		case !inRange:
			cause = fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", a.portRange)
		case a.ports.used[o] && a.claims == nil:
			cause = errPortAllocated
		default:
			a.ports.used[o] = true
			r.ports = append(r.ports, o)
			return nil
		}
		return apierrors.NewInvalid(serviceGK, svc.Name, field.ErrorList{field.Invalid(p, port, fmt.Sprintf(format, port, cause))})
	}
	nextPort := func() (int32, error) {
		o, ok := a.ports.next()
		if !ok {
			return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %v", errRangeFull))
		}
		r.ports = append(r.ports, o)
		return int32(a.portRange.Base + o), nil
	}

	if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		// Ports of one number share a node port across protocols.
		byPort := map[int32]int32{}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !needsNodePort(svc) {
				continue
			}
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			shared, ok := byPort[p.Port]
			switch {
			case ok && p.NodePort == 0:
				p.NodePort = shared
			case ok && p.NodePort == shared:
			case p.NodePort != 0:
				if err := takePort(p.NodePort, path, "%[2]v"); err != nil {
					return err
				}
				if !ok {
					byPort[p.Port] = p.NodePort
				}
			default:
				np, err := nextPort()
				if err != nil {
					return err
				}
				p.NodePort = np
				byPort[p.Port] = np
			}
		}
	}
	if needsHealthCheckNodePort(svc) {
		if svc.Spec.HealthCheckNodePort != 0 {
			if err := takePort(svc.Spec.HealthCheckNodePort, field.NewPath("spec", "healthCheckNodePort"),
				"failed to allocate requested HealthCheck NodePort %v: %v"); err != nil {
				return err
			}
		} else {
			np, err := nextPort()
			if err != nil {
				return err
			}
			svc.Spec.HealthCheckNodePort = np
		}
	}
	return nil
}
