package registry

import (
	"context"
	"net/netip"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// decodedService is a Service as a client sends it, after v1 defaulting.
func decodedService(name string, mutate func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
	if mutate != nil {
		mutate(svc)
	}
	Scheme.Default(svc)
	return svc
}

func TestDefaultService(t *testing.T) {
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		check  func(*corev1.ServiceSpec) bool
	}{
		{"clusterip", nil, func(s *corev1.ServiceSpec) bool {
			return s.Type == corev1.ServiceTypeClusterIP && s.SessionAffinity == corev1.ServiceAffinityNone &&
				reflect.DeepEqual(s.InternalTrafficPolicy, &cluster) && s.ExternalTrafficPolicy == "" &&
				s.Ports[0].Protocol == corev1.ProtocolTCP && s.Ports[0].TargetPort == intstr.FromInt32(80) &&
				s.IPFamilyPolicy == nil && s.IPFamilies == nil
		}},
		{"named target port kept", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }, func(s *corev1.ServiceSpec) bool {
			return s.Ports[0].TargetPort == intstr.FromString("http")
		}},
		{"nodeport", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, func(s *corev1.ServiceSpec) bool {
			return s.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster && s.AllocateLoadBalancerNodePorts == nil
		}},
		{"loadbalancer", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }, func(s *corev1.ServiceSpec) bool {
			return s.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster && s.AllocateLoadBalancerNodePorts != nil && *s.AllocateLoadBalancerNodePorts
		}},
		{"externalname", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }, func(s *corev1.ServiceSpec) bool {
			return s.InternalTrafficPolicy == nil && s.ExternalTrafficPolicy == ""
		}},
		{"clientip affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, func(s *corev1.ServiceSpec) bool {
			return s.SessionAffinityConfig != nil && *s.SessionAffinityConfig.ClientIP.TimeoutSeconds == 10800
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodedService("web", tt.mutate)
			if !tt.check(&got.Spec) {
				t.Errorf("defaulted spec = %+v", got.Spec)
			}
		})
	}
}

func TestServiceStrategy_Validate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"valid", nil, nil},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, []string{"spec.ports: Required value"}},
		{"headless without ports", func(s *corev1.Service) {
			s.Spec.Ports, s.Spec.ClusterIP, s.Spec.Selector = nil, corev1.ClusterIPNone, nil
		}, nil},
		{"externalname without ports", func(s *corev1.Service) {
			s.Spec.Ports, s.Spec.Type, s.Spec.ExternalName = nil, corev1.ServiceTypeExternalName, "db.example.com."
		}, nil},
		{"externalname missing", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }, []string{"spec.externalName: Required value"}},
		{"externalname invalid", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "Not_A_Name"
		}, []string{`spec.externalName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"two ports need names", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Port: 80}, {Port: 443}}
		}, []string{"spec.ports[0].name: Required value", "spec.ports[1].name: Required value"}},
		{"duplicate port names", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "http", Port: 443}}
		}, []string{`spec.ports[1].name: Duplicate value: "http"`}},
		{"port name not a DNS label", func(s *corev1.Service) { s.Spec.Ports[0].Name = "Web_Port" }, []string{
			`spec.ports[0].name: Invalid value: "Web_Port": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{"port out of range", func(s *corev1.Service) {
			s.Spec.Ports[0].Port, s.Spec.Ports[0].TargetPort = 70000, intstr.FromInt32(80)
		}, []string{
			"spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"target port out of range", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) }, []string{
			"spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"bad protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }, []string{
			`spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`}},
		{"duplicate port", func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 80}}
		}, []string{`spec.ports[1]: Duplicate value: {"protocol":"TCP","port":80,"targetPort":0}`}},
		{"bad type", func(s *corev1.Service) { s.Spec.Type = "Ingress" }, []string{
			`spec.type: Unsupported value: "Ingress": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`}},
		{"nodePort on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 }, []string{
			"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"}},
		{"bad selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "not valid"} }, []string{
			`spec.selector: Invalid value: "not valid": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{"clusterIPs mismatch", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.0.0.5", []string{"10.0.0.6"}
		}, []string{`spec.clusterIPs: Invalid value: ["10.0.0.6"]: first value must match ` + "`clusterIP`"}},
		{"name not DNS-1035", func(s *corev1.Service) { s.Name = "1web" }, []string{
			`metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := decodedService("web", tt.mutate)
			s := serviceStrategy{}
			s.PrepareForCreate(svc)
			got := errStrings(s.Validate(svc))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// allocated runs the Service kind's create steps on svc as the HTTP layer
// does and commits.
func allocated(t *testing.T, k *Kind, svc *corev1.Service) *corev1.Service {
	t.Helper()
	k.Strategy.PrepareForCreate(svc)
	finish, err := k.BeginCreate(context.Background(), svc)
	if err != nil {
		t.Fatalf("begin create %s: %v", svc.Name, err)
	}
	if errs := k.Strategy.Validate(svc); len(errs) > 0 {
		t.Fatalf("validate %s: %v", svc.Name, errs)
	}
	finish(context.Background(), true)
	return svc
}

func TestServiceStrategy_ValidateUpdate(t *testing.T) {
	k := Builtin().Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	old := allocated(t, k, decodedService("web", nil))
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"clusterIP left out keeps the allocated one", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil }, nil},
		{"clusterIP changed", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.0.0.9", nil }, []string{
			`spec.clusterIPs[0]: Invalid value: ["10.0.0.9"]: may not change once set`}},
		{"to ExternalName drops the IP", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := old.DeepCopy()
			svc.ResourceVersion = "1"
			tt.mutate(svc)
			k.Strategy.PrepareForUpdate(svc, old)
			got := errStrings(k.Strategy.ValidateUpdate(svc, old))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestServiceAllocator_BeginCreate(t *testing.T) {
	k := Builtin(BuiltinOptions{ServiceClusterIPRange: "10.96.0.0/29", ServiceNodePortRange: "30000-30002"}).
		Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	ctx := context.Background()

	kube := allocated(t, k, decodedService("kubernetes", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.1" }))
	if kube.Spec.ClusterIP != "10.96.0.1" || !reflect.DeepEqual(kube.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) ||
		*kube.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Errorf("kubernetes: clusterIP %s families %v policy %v", kube.Spec.ClusterIP, kube.Spec.IPFamilies, *kube.Spec.IPFamilyPolicy)
	}

	// A dry run (finish false) gives its IP back.
	dry := decodedService("dry", nil)
	finish, err := k.BeginCreate(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	finish(ctx, false)

	// The range holds 10.96.0.1-6: five more, all different, then full.
	seen := map[string]bool{"10.96.0.1": true}
	for i := 0; i < 5; i++ {
		svc := allocated(t, k, decodedService("s", nil))
		if seen[svc.Spec.ClusterIP] || !netip.MustParsePrefix("10.96.0.0/29").Contains(netip.MustParseAddr(svc.Spec.ClusterIP)) {
			t.Errorf("service %d got %s", i, svc.Spec.ClusterIP)
		}
		seen[svc.Spec.ClusterIP] = true
	}
	if _, err := k.BeginCreate(ctx, decodedService("full", nil)); !apierrors.IsInternalError(err) {
		t.Errorf("full range: err = %v, want 500", err)
	}

}

func TestServiceAllocator_LoadAndDelete(t *testing.T) {
	k := Builtin(BuiltinOptions{ServiceClusterIPRange: "10.96.0.0/29"}).Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	ctx := context.Background()
	var stored []runtime.Object
	for i := 1; i <= 6; i++ {
		svc := decodedService("s", func(s *corev1.Service) { s.Spec.ClusterIP = netip.AddrFrom4([4]byte{10, 96, 0, byte(i)}).String() })
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		stored = append(stored, svc)
	}
	if err := k.LoadState(stored); err != nil {
		t.Fatal(err)
	}
	taken := decodedService("taken", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.3" })
	k.Strategy.PrepareForCreate(taken)
	_, err := k.BeginCreate(ctx, taken)
	want := `Service "taken" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.3"]: failed to allocate IP 10.96.0.3: provided IP is already allocated`
	if err == nil || err.Error() != want {
		t.Errorf("after load: err = %v, want %q", err, want)
	}
	k.AfterDelete(ctx, stored[2])
	got := allocated(t, k, decodedService("next", nil))
	if got.Spec.ClusterIP != "10.96.0.3" {
		t.Errorf("after deleting 10.96.0.3's Service, got %s", got.Spec.ClusterIP)
	}
}

func TestServiceAllocator_NodePorts(t *testing.T) {
	k := Builtin(BuiltinOptions{ServiceNodePortRange: "30000-30004"}).Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	ctx := context.Background()
	svc := allocated(t, k, decodedService("dns", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports = []corev1.ServicePort{{Name: "tcp", Port: 53}, {Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "web", Port: 80}}
	}))
	p := svc.Spec.Ports
	if p[0].NodePort != p[1].NodePort || p[0].NodePort == p[2].NodePort || p[0].NodePort < 30000 || p[2].NodePort > 30004 {
		t.Errorf("node ports %d %d %d: want the first two equal, the third different, all in 30000-30004", p[0].NodePort, p[1].NodePort, p[2].NodePort)
	}

	// NodePort to ClusterIP frees the node ports once the update commits.
	svc.ResourceVersion = "1"
	upd := svc.DeepCopy()
	upd.Spec.Type = corev1.ServiceTypeClusterIP
	upd.Spec.ExternalTrafficPolicy = ""
	k.Strategy.PrepareForUpdate(upd, svc)
	finish, err := k.BeginUpdate(ctx, upd, svc)
	if err != nil {
		t.Fatal(err)
	}
	if errs := k.Strategy.ValidateUpdate(upd, svc); len(errs) > 0 {
		t.Fatalf("validate update: %v", errs)
	}
	finish(ctx, true)
	for _, port := range upd.Spec.Ports {
		if port.NodePort != 0 {
			t.Errorf("after the change to ClusterIP, port %s keeps nodePort %d", port.Name, port.NodePort)
		}
	}
	// All five node ports are free again.
	for i := 0; i < 5; i++ {
		allocated(t, k, decodedService("n", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }))
	}
}

func TestServiceKind_TableRow(t *testing.T) {
	k := Builtin().Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	now = func() time.Time { return time.Unix(1700000300, 0) }
	defer func() { now = time.Now }()
	tests := []struct {
		name string
		svc  *corev1.Service
		want []interface{}
	}{
		{"nodeport", &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "np", CreationTimestamp: metav1.Unix(1700000000, 0)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"},
				Selector: map[string]string{"app": "np"},
				Ports:    []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}},
		}, []interface{}{"np", "NodePort", "10.0.0.7", "<none>", "80:30080/TCP,53/UDP", "5m", "app=np"}},
		{"loadbalancer pending", &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "lb"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		}, []interface{}{"lb", "LoadBalancer", "<none>", "<pending>", "<none>", "<unknown>", "<none>"}},
		{"externalname", &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "ext"},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"},
		}, []interface{}{"ext", "ExternalName", "<none>", "example.com", "<none>", "<unknown>", "<none>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.TableRow(tt.svc)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q (%v), want %q", got, err, tt.want)
			}
		})
	}
}
