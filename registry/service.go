package registry

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// serviceKind is core/v1 Services: stored data with allocated cluster IPs
// and node ports (alloc is shared by its hooks); nothing proxies them.
func serviceKind(alloc *serviceAllocator) *Kind {
	return &Kind{
		GVK:               corev1.SchemeGroupVersion.WithKind("Service"),
		Resource:          "services",
		Singular:          "service",
		ListKind:          "ServiceList",
		InternalPackage:   "core",
		Namespaced:        true,
		ShortNames:        []string{"svc"},
		Categories:        []string{"all"},
		Verbs:             verbsAll,
		StatusSubresource: true,
		StorageResource:   "services",
		StorageGVK:        corev1.SchemeGroupVersion.WithKind("Service"),
		New:               func() runtime.Object { return &corev1.Service{} },
		NewList:           func() runtime.Object { return &corev1.ServiceList{} },
		Strategy:          serviceStrategy{},
		BeginCreate:       alloc.beginCreate,
		BeginUpdate:       alloc.beginUpdate,
		AfterDelete:       alloc.afterDelete,
		LoadState:         alloc.load,
		TableColumns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Type", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["type"]},
			{Name: "Cluster-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]},
			{Name: "External-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]},
			{Name: "Port(s)", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["ports"]},
			ageColumn(),
			{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ServiceSpec{}.SwaggerDoc()["selector"]},
		},
		TableRow: func(obj runtime.Object) ([]interface{}, error) {
			svc, ok := obj.(*corev1.Service)
			if !ok {
				return nil, fmt.Errorf("services table: unexpected object %T", obj)
			}
			return serviceRow(svc), nil
		},
		FieldSet: func(obj runtime.Object) fields.Set {
			svc, ok := obj.(*corev1.Service)
			if !ok {
				return nil
			}
			set := objectMetaFieldSet(&svc.ObjectMeta, true)
			set["spec.clusterIP"] = svc.Spec.ClusterIP
			set["spec.type"] = string(svc.Spec.Type)
			return set
		},
		FieldSelectorKeys: []string{"metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"},
		UnknownFieldLabel: fieldLabelNotSupported,
	}
}

// serviceRow is kube-apiserver's printService in its wide form.
func serviceRow(svc *corev1.Service) []interface{} {
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	portCell := strings.Join(ports, ",")
	if portCell == "" {
		portCell = "<none>"
	}
	return []interface{}{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc), portCell,
		translateTimestampSince(svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector)}
}

// serviceExternalIP is the External-IP cell: external IPs, load-balancer
// ingress (<pending> until some), or the external name.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(svc.Spec.ExternalIPs) > 0 {
			return strings.Join(svc.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		ingress := sets.New[string]()
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ingress.Insert(in.IP)
			} else if in.Hostname != "" {
				ingress.Insert(in.Hostname)
			}
		}
		all := sets.List(ingress)
		all = append(all, svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// defaultService is kube-apiserver's SetDefaults_Service (v1 defaulting,
// applied at decode). ipFamilies and ipFamilyPolicy are not defaults: the
// allocator sets them.
func defaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityNone {
		spec.SessionAffinityConfig = nil
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			timeout := corev1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil {
		switch spec.Type {
		case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP:
			p := corev1.ServiceInternalTrafficPolicyCluster
			spec.InternalTrafficPolicy = &p
		}
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		t := true
		spec.AllocateLoadBalancerNodePorts = &t
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		vip := corev1.LoadBalancerIPModeVIP
		for i, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" && in.IPMode == nil {
				svc.Status.LoadBalancer.Ingress[i].IPMode = &vip
			}
		}
	}
}

// serviceStrategy is kube-apiserver's pkg/registry/core/service strategy
// and status strategy.
type serviceStrategy struct{}

func (serviceStrategy) AllowUnconditionalUpdate() bool             { return true }
func (serviceStrategy) NameValidator() func(string, bool) []string { return serviceName }

// serviceName: Service names are DNS-1035 labels (they become DNS names
// and environment variables).
var serviceName = withPathSegment(apimachineryvalidation.NameIsDNS1035Label)

// PrepareForCreate clears status, which only the status subresource sets.
func (serviceStrategy) PrepareForCreate(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	svc.Status = corev1.ServiceStatus{}
	normalizeClusterIPs(svc, nil)
}

// PrepareForUpdate keeps status and drops fields the new type does not use
// when the client left them as they were (kube-apiserver's
// dropTypeDependentFields).
func (serviceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	svc.Status = oldSvc.Status
	patchAllocatedValues(svc, oldSvc)
	normalizeClusterIPs(svc, oldSvc)
	dropTypeDependentFields(svc, oldSvc)
}

func (serviceStrategy) Validate(obj runtime.Object) field.ErrorList {
	return withGenericCreate(validateService(obj.(*corev1.Service)), obj, true)
}

func (serviceStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateServiceUpdate(obj.(*corev1.Service), old.(*corev1.Service))
}

// PrepareForStatusUpdate keeps spec from old.
func (serviceStrategy) PrepareForStatusUpdate(obj, old runtime.Object) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	svc.Spec = oldSvc.Spec
}

// ValidateStatusUpdate is kube-apiserver's ValidateServiceStatusUpdate:
// load-balancer ingress entries hold valid IPs or DNS names.
func (serviceStrategy) ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	errs := validateCoreObjectMetaUpdate(&svc.ObjectMeta, &oldSvc.ObjectMeta)
	ingressPath := field.NewPath("status", "loadBalancer", "ingress")
	for i, in := range svc.Status.LoadBalancer.Ingress {
		p := ingressPath.Index(i)
		if in.IP != "" {
			if _, err := netip.ParseAddr(in.IP); err != nil {
				errs = append(errs, field.Invalid(p.Child("ip"), in.IP, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
			}
		}
		if in.IPMode != nil && in.IP == "" {
			errs = append(errs, field.Forbidden(p.Child("ipMode"), "may not be specified when `ip` is not set"))
		} else if in.IPMode != nil && *in.IPMode != corev1.LoadBalancerIPModeVIP && *in.IPMode != corev1.LoadBalancerIPModeProxy {
			errs = append(errs, field.NotSupported(p.Child("ipMode"), *in.IPMode, []string{string(corev1.LoadBalancerIPModeProxy), string(corev1.LoadBalancerIPModeVIP)}))
		} else if in.IPMode == nil && in.IP != "" {
			errs = append(errs, field.Required(p.Child("ipMode"), "must be specified when `ip` is set"))
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, msg))
			}
			if _, err := netip.ParseAddr(in.Hostname); err == nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

// needsClusterIP reports whether svc gets a cluster IP allocated: every
// type but ExternalName, unless headless.
func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// needsNodePort reports whether svc gets node ports allocated.
func needsNodePort(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// needsHealthCheckNodePort reports whether svc gets a health-check node
// port: LoadBalancer Services with externalTrafficPolicy Local.
func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// normalizeClusterIPs keeps clusterIP and clusterIPs in step for clients
// that set only the singular field (kube-apiserver's NormalizeClusterIPs;
// old is nil on create).
func normalizeClusterIPs(svc, old *corev1.Service) {
	spec := &svc.Spec
	if old == nil {
		if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
		return
	}
	// An update: a cleared singular clears the plural when the plural was
	// left as it was; a changed singular replaces the plural's first value.
	if spec.ClusterIP == "" {
		if slices.Equal(spec.ClusterIPs, old.Spec.ClusterIPs) {
			spec.ClusterIPs = nil
		}
		return
	}
	if spec.ClusterIP != old.Spec.ClusterIP && slices.Equal(spec.ClusterIPs, old.Spec.ClusterIPs) {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
	if len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
}

// patchAllocatedValues fills allocated values an update omits (a PUT of a
// manifest without clusterIP or nodePort) from old, so that the update is
// idempotent, as kube-apiserver's patchAllocatedValues does. Node ports are
// matched by port name.
func patchAllocatedValues(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if needsNodePort(old) && needsNodePort(svc) {
		used := func(s *corev1.Service) sets.Set[int32] {
			out := sets.New[int32]()
			for _, p := range s.Spec.Ports {
				if p.NodePort != 0 {
					out.Insert(p.NodePort)
				}
			}
			return out
		}
		taken := used(old).Intersection(used(svc))
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !taken.Has(byName[p.Name]) {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// dropTypeDependentFields clears what the new type does not use, when the
// client kept the old value (kube-apiserver's dropTypeDependentFields).
func dropTypeDependentFields(svc, old *corev1.Service) {
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.ClusterIP = ""
			svc.Spec.ClusterIPs = nil
		}
		if slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if svc.Spec.IPFamilyPolicy != nil && old.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == *old.Spec.IPFamilyPolicy {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) {
		oldPorts := map[int32]bool{}
		for _, p := range old.Spec.Ports {
			oldPorts[p.NodePort] = true
		}
		for i := range svc.Spec.Ports {
			if oldPorts[svc.Spec.Ports[i].NodePort] {
				svc.Spec.Ports[i].NodePort = 0
			}
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer && old.Spec.Type == corev1.ServiceTypeLoadBalancer {
		if equalBoolPtr(svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts) {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if equalStringPtr(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	externallyAccessible := func(s *corev1.Service) bool {
		return s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort ||
			(s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
	}
	if !externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
}

func equalBoolPtr(a, b *bool) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
func equalStringPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// Supported values, as kube-apiserver lists them in NotSupported errors
// (sorted).
var (
	serviceTypes          = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}
	sessionAffinityTypes  = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}
	portProtocols         = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}
	ipFamilies            = []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}
	ipFamilyPolicies      = []string{string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack), string(corev1.IPFamilyPolicySingleStack)}
	externalTrafficPolicy = []string{string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}
	internalTrafficPolicy = []string{string(corev1.ServiceInternalTrafficPolicyCluster), string(corev1.ServiceInternalTrafficPolicyLocal)}
)

// validateService is kube-apiserver's ValidateService, for the fields
// edgeapi stores (the load-balancer source ranges annotation and topology
// hints are not checked).
func validateService(svc *corev1.Service) field.ErrorList {
	errs := validateCoreObjectMeta(&svc.ObjectMeta, true, apimachineryvalidation.NameIsDNS1035Label)
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	portsPath := specPath.Child("ports")
	headless := spec.ClusterIP == corev1.ClusterIPNone

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(portsPath, ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless && len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// A trailing dot marks a fully qualified name.
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	names := sets.New[string]()
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, portsPath.Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}

	switch {
	case spec.SessionAffinity == "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	case !contains(sessionAffinityTypes, string(spec.SessionAffinity)):
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinityTypes))
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		errs = append(errs, validateClientIPAffinity(spec.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), "must not be set when session affinity is None"))
		}
	}

	errs = append(errs, validateClusterIPsRelatedFields(svc)...)

	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			errs = append(errs, field.Invalid(p, ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
			continue
		}
		errs = append(errs, validateNonSpecialIP(addr, ip, p)...)
	}

	switch {
	case spec.Type == "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case !contains(serviceTypes, string(spec.Type)):
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, serviceTypes))
	}
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i := range spec.Ports {
			if spec.Ports[i].NodePort != 0 {
				errs = append(errs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}

	// Node ports and ports are unique per protocol.
	type protoPort struct {
		proto corev1.Protocol
		port  int32
	}
	nodePorts := map[protoPort]bool{}
	for i, p := range spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		key := protoPort{p.Protocol, p.NodePort}
		if nodePorts[key] {
			errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
		}
		nodePorts[key] = true
	}
	ports := map[protoPort]bool{}
	for i, p := range spec.Ports {
		key := protoPort{p.Protocol, p.Port}
		if ports[key] {
			errs = append(errs, field.Duplicate(portsPath.Index(i), corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		}
		ports[key] = true
	}

	errs = append(errs, validateServiceTrafficPolicies(svc)...)
	return errs
}

// validateServicePort is kube-apiserver's validateServicePort.
func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && sp.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if sp.Name != "" {
		for _, msg := range validation.IsDNS1123Label(sp.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), sp.Name, msg))
		}
		if names.Has(sp.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(p.Child("port"), sp.Port, msg))
	}
	switch {
	case sp.Protocol == "":
		errs = append(errs, field.Required(p.Child("protocol"), ""))
	case !contains(portProtocols, string(sp.Protocol)):
		errs = append(errs, field.NotSupported(p.Child("protocol"), sp.Protocol, portProtocols))
	}
	errs = append(errs, validatePortNumOrName(sp.TargetPort, p.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*sp.AppProtocol) {
			errs = append(errs, field.Invalid(p.Child("appProtocol"), *sp.AppProtocol, msg))
		}
	}
	return errs
}

// validatePortNumOrName is kube-apiserver's ValidatePortNumOrName.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(p, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(p, port.StrVal, msg))
		}
	}
	return errs
}

// validateClientIPAffinity is kube-apiserver's validateClientIPAffinityConfig.
func validateClientIPAffinity(c *corev1.SessionAffinityConfig, p *field.Path) field.ErrorList {
	switch {
	case c == nil:
		return field.ErrorList{field.Required(p, "when session affinity type is ClientIP")}
	case c.ClientIP == nil:
		return field.ErrorList{field.Required(p.Child("clientIP"), "when session affinity type is ClientIP")}
	case c.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(p.Child("clientIP").Child("timeoutSeconds"), "when session affinity type is ClientIP")}
	}
	if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPServiceAffinitySeconds {
		return field.ErrorList{field.Invalid(p.Child("clientIP").Child("timeoutSeconds"), t,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds))}
	}
	return nil
}

// validateNonSpecialIP is kube-apiserver's ValidateNonSpecialIP.
func validateNonSpecialIP(addr netip.Addr, ip string, p *field.Path) field.ErrorList {
	switch {
	case addr.IsUnspecified():
		return field.ErrorList{field.Invalid(p, ip, "may not be unspecified (0.0.0.0)")}
	case addr.IsLoopback():
		return field.ErrorList{field.Invalid(p, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case addr.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(p, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case addr.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(p, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}

// validateClusterIPsRelatedFields is kube-apiserver's
// ValidateServiceClusterIPsRelatedFields: clusterIP and clusterIPs agree,
// families and policy hold supported values, IPs are valid.
func validateClusterIPsRelatedFields(svc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	ipsPath := specPath.Child("clusterIPs")
	familiesPath := specPath.Child("ipFamilies")

	if spec.ClusterIP != "" {
		if len(spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(ipsPath, ""))
		} else if spec.ClusterIPs[0] != spec.ClusterIP {
			errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}

	seen := sets.New[corev1.IPFamily]()
	for i, f := range spec.IPFamilies {
		if !contains(ipFamilies, string(f)) {
			errs = append(errs, field.NotSupported(familiesPath.Index(i), f, ipFamilies))
		}
		if seen.Has(f) {
			errs = append(errs, field.Duplicate(familiesPath.Index(i), f))
		}
		seen.Insert(f)
	}
	if spec.IPFamilyPolicy != nil && !contains(ipFamilyPolicies, string(*spec.IPFamilyPolicy)) {
		errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *spec.IPFamilyPolicy, ipFamilyPolicies))
	}

	invalidIPs := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				invalidIPs = true
				errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			invalidIPs = true
			errs = append(errs, field.Invalid(ipsPath.Index(i), ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if len(spec.IPFamilies) > 2 {
		errs = append(errs, field.Invalid(familiesPath, spec.IPFamilies, "may only hold up to 2 values"))
	}
	if !invalidIPs && len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != corev1.ClusterIPNone {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			if fam := familyOf(netip.MustParseAddr(ip)); fam != spec.IPFamilies[i] {
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip,
					fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", spec.IPFamilies[i], i)))
			}
		}
	}
	return errs
}

// validateServiceTrafficPolicies checks externalTrafficPolicy and
// internalTrafficPolicy values and where they may be set, as
// kube-apiserver's validateServiceExternalTrafficPolicy and
// validateServiceInternalTrafficFieldsValue do.
func validateServiceTrafficPolicies(svc *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible {
		if spec.ExternalTrafficPolicy == "" {
			errs = append(errs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
		} else if !contains(externalTrafficPolicy, string(spec.ExternalTrafficPolicy)) {
			errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, externalTrafficPolicy))
		}
	} else if spec.ExternalTrafficPolicy != "" {
		errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy,
			"may only be set for externally-accessible services"))
	}
	if !needsHealthCheckNodePort(svc) && spec.HealthCheckNodePort != 0 {
		errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if spec.HealthCheckNodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort, msg))
		}
	}
	if spec.InternalTrafficPolicy == nil {
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeClusterIP {
			errs = append(errs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else if !contains(internalTrafficPolicy, string(*spec.InternalTrafficPolicy)) {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *spec.InternalTrafficPolicy, internalTrafficPolicy))
	}
	return errs
}

// validateServiceUpdate is kube-apiserver's ValidateServiceUpdate: the
// primary cluster IP may not change (except to or from ExternalName),
// then ValidateService.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	errs := validateCoreObjectMetaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateClusterIPsUpdate(svc, old)...)
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		!equalStringPtr(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "loadBalancerClass"), svc.Spec.LoadBalancerClass, "may not change once set"))
	}
	return append(errs, validateService(svc)...)
}

// validateClusterIPsUpdate is kube-apiserver's
// validateUpgradeDowngradeClusterIPs for single-stack clusters.
func validateClusterIPsUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone && old.Spec.ClusterIP == corev1.ClusterIPNone {
		return nil
	}
	ipsPath := field.NewPath("spec", "clusterIPs")
	newIPs, oldIPs := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
	var errs field.ErrorList
	switch {
	case len(oldIPs) == len(newIPs):
		for i, ip := range oldIPs {
			if ip != newIPs[i] {
				errs = append(errs, field.Invalid(ipsPath.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			errs = append(errs, field.Invalid(ipsPath.Index(0), newIPs, "primary clusterIP can not be unset"))
		} else if newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(ipsPath.Index(0), newIPs, "may not change once set"))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(ipsPath.Index(0), newIPs, "may not change once set"))
		}
	}
	return errs
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}

// familyOf is the IP family of addr.
func familyOf(addr netip.Addr) corev1.IPFamily {
	if addr.Is4() || addr.Is4In6() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// maxClientIPServiceAffinitySeconds is kube-apiserver's
// core.MaxClientIPServiceAffinitySeconds (one day).
const maxClientIPServiceAffinitySeconds = 86400
