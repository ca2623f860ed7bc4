package e2e

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// clusterIPService is a ClusterIP Service with one TCP port, asking for ip
// when not empty.
func clusterIPService(name, ip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP: ip,
			Selector:  map[string]string{"app": name},
			Ports:     []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func createService(t *testing.T, cs kubernetes.Interface, ns string, svc *corev1.Service, opts metav1.CreateOptions) (*corev1.Service, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return cs.CoreV1().Services(ns).Create(ctx, svc, opts)
}

func mustCreateService(t *testing.T, cs kubernetes.Interface, ns string, svc *corev1.Service) *corev1.Service {
	t.Helper()
	got, err := createService(t, cs, ns, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", svc.Name, err)
	}
	return got
}

// TestService_KubectlClusterInfo: kubectl cluster-info lists Services and
// prints the control plane's address.
func TestService_KubectlClusterInfo(t *testing.T) {
	d := StartDaemon(t)
	res := d.MustKubectl("cluster-info")
	if want := "Kubernetes control plane is running at " + d.URL; !strings.Contains(res.Stdout, want) {
		t.Errorf("kubectl cluster-info: stdout = %q, want it to contain %q", res.Stdout, want)
	}
}

// TestService_KubectlCreate: kubectl create service allocates a cluster
// IP from the default range, and kubectl get prints kube-apiserver's
// columns for it and for the default/kubernetes Service.
func TestService_KubectlCreate(t *testing.T) {
	// TLS: the kubernetes Service targets the HTTPS port, which is Addr
	// only with TLS.
	d := StartDaemon(t, DaemonOptions{TLS: true})
	d.MustKubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
	svc, err := d.Clientset().CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !netip.MustParsePrefix("10.0.0.0/24").Contains(ip) || ip == netip.MustParseAddr("10.0.0.1") {
		t.Errorf("clusterIP = %q, want an address of 10.0.0.0/24 other than 10.0.0.1", svc.Spec.ClusterIP)
	}
	if got, want := svc.Spec.ClusterIPs, []string{svc.Spec.ClusterIP}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("clusterIPs = %q, want %q", got, want)
	}
	if got := svc.Spec.Ports[0]; got.Protocol != corev1.ProtocolTCP || got.TargetPort != intstr.FromInt32(8080) || got.NodePort != 0 {
		t.Errorf("port = %+v, want TCP to 8080 without nodePort", got)
	}
	if got := svc.Spec.IPFamilies; len(got) != 1 || got[0] != corev1.IPv4Protocol {
		t.Errorf("ipFamilies = %q, want [IPv4]", got)
	}
	if p := svc.Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicySingleStack {
		t.Errorf("ipFamilyPolicy = %v, want SingleStack", p)
	}
	yaml := d.MustKubectl("get", "svc", "web", "-o", "yaml").Stdout
	if want := "clusterIP: " + svc.Spec.ClusterIP; !strings.Contains(yaml, want) {
		t.Errorf("kubectl get svc web -o yaml lacks %q:\n%s", want, yaml)
	}

	wantTable(t, d.Kubectl("get", "svc", "-A"),
		[]string{"NAMESPACE", "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"},
		[]string{"default", "kubernetes", "ClusterIP", "10.0.0.1", "<none>", "443/TCP"},
		[]string{"default", "web", "ClusterIP", svc.Spec.ClusterIP, "<none>", "80/TCP"})
	wantTable(t, d.Kubectl("get", "svc", "web", "-o", "wide"),
		[]string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"},
		[]string{"web", "ClusterIP", svc.Spec.ClusterIP, "<none>", "80/TCP", "app=web"})

	kube, err := d.Clientset().CoreV1().Services("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := d.Addr[strings.LastIndex(d.Addr, ":")+1:]
	if got := kube.Spec.Ports; len(got) != 1 || got[0].Name != "https" || got[0].Port != 443 || got[0].TargetPort.String() != port {
		t.Errorf("kubernetes Service ports = %+v, want https 443 -> %s", got, port)
	}
}

// TestService_NodePort: NodePort Services get node ports from the default
// range; a taken one asked for again is kube-apiserver's 422.
func TestService_NodePort(t *testing.T) {
	d := StartDaemon(t)
	d.MustKubectl("create", "service", "nodeport", "np", "--tcp=80:8080")
	cs := d.Clientset()
	svc, err := cs.CoreV1().Services("default").Get(context.Background(), "np", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np := svc.Spec.Ports[0].NodePort
	if np < 30000 || np > 32767 {
		t.Errorf("nodePort = %d, want 30000-32767", np)
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Errorf("externalTrafficPolicy = %q, want Cluster", svc.Spec.ExternalTrafficPolicy)
	}
	again := clusterIPService("np2", "")
	again.Spec.Type = corev1.ServiceTypeNodePort
	again.Spec.Ports[0].NodePort = np
	_, err = createService(t, cs, "default", again, metav1.CreateOptions{})
	want := `Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: ` + itoa(np) + `: provided port is already allocated`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("create with a taken nodePort: err = %v, want 422 %q", err, want)
	}
	again.Spec.Ports[0].NodePort = 80
	_, err = createService(t, cs, "default", again, metav1.CreateOptions{})
	want = `Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("create with nodePort 80: err = %v, want 422 %q", err, want)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// TestService_ClusterIPConflicts: a cluster IP that is taken or outside
// the range is kube-apiserver's 422, word for word.
func TestService_ClusterIPConflicts(t *testing.T) {
	d := StartDaemon(t)
	cs := d.Clientset()
	for _, tc := range []struct{ ip, want string }{
		{"10.0.0.1", `Service "dup" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: provided IP is already allocated`},
		{"10.1.0.1", `Service "dup" is invalid: spec.clusterIPs: Invalid value: ["10.1.0.1"]: failed to allocate IP 10.1.0.1: the provided IP (10.1.0.1) is not in the valid range. The range of valid IPs is 10.0.0.0/24`},
	} {
		_, err := createService(t, cs, "default", clusterIPService("dup", tc.ip), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || err.Error() != tc.want {
			t.Errorf("create with clusterIP %s: err = %v, want 422 %q", tc.ip, err, tc.want)
		}
	}
	// A headless Service and an ExternalName Service hold no IP.
	headless := mustCreateService(t, cs, "default", clusterIPService("headless", corev1.ClusterIPNone))
	if headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless clusterIP = %q, want None", headless.Spec.ClusterIP)
	}
	ext := mustCreateService(t, cs, "default", &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"},
	})
	if ext.Spec.ClusterIP != "" || len(ext.Spec.IPFamilies) != 0 {
		t.Errorf("ExternalName clusterIP = %q, ipFamilies = %q; want none", ext.Spec.ClusterIP, ext.Spec.IPFamilies)
	}
}

// smallRange leaves five dynamic cluster IPs (10.96.0.2-6; .1 is the
// kubernetes Service's).
var smallRange = []string{"--service-cluster-ip-range=10.96.0.0/29"}

// fillRange creates Services until the range is full and returns their IPs.
func fillRange(t *testing.T, cs kubernetes.Interface, prefix string, n int) map[string]string {
	t.Helper()
	return fillRangeIn(t, cs, "default", prefix, n)
}

// fillRangeIn is fillRange in namespace ns.
func fillRangeIn(t *testing.T, cs kubernetes.Interface, ns, prefix string, n int) map[string]string {
	t.Helper()
	ips := map[string]string{}
	for i := 0; i < n; i++ {
		name := prefix + itoa(int32(i))
		svc := mustCreateService(t, cs, ns, clusterIPService(name, ""))
		for other, ip := range ips {
			if ip == svc.Spec.ClusterIP {
				t.Fatalf("%s and %s both got %s", other, name, ip)
			}
		}
		ips[name] = svc.Spec.ClusterIP
	}
	return ips
}

// wantRangeFull checks that one more Service gets kube-apiserver's 500.
func wantRangeFull(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := createService(t, cs, "default", clusterIPService(name, ""), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to allocate a serviceIP: range is full") {
		t.Errorf("create in a full range: err = %v, want 500 failed to allocate a serviceIP: range is full", err)
	}
}

// TestService_AllocationLifecycle: a dry run does not keep its IP, a
// delete frees the IP for reuse, and after a crash the allocations are
// rebuilt from the store, so nothing is handed out twice.
func TestService_AllocationLifecycle(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{Args: smallRange})
	cs := d.Clientset()
	ips := fillRange(t, cs, "s", 4)

	// One address is left: a dry run gets it, and so does the real create
	// after it.
	dry, err := createService(t, cs, "default", clusterIPService("last", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if dry.Spec.ClusterIP == "" {
		t.Fatalf("dry-run create returned no clusterIP")
	}
	last := mustCreateService(t, cs, "default", clusterIPService("last", ""))
	if last.Spec.ClusterIP != dry.Spec.ClusterIP {
		t.Errorf("create after dry run got %s, want the dry run's %s (the only free one)", last.Spec.ClusterIP, dry.Spec.ClusterIP)
	}
	ips["last"] = last.Spec.ClusterIP
	wantRangeFull(t, cs, "extra")

	// A crash, then a restart: the range is still full.
	dataDir := d.DataDir
	d.Kill()
	d = StartDaemon(t, DaemonOptions{DataDir: dataDir, Args: smallRange})
	cs = d.Clientset()
	wantRangeFull(t, cs, "extra")
	_, err = createService(t, cs, "default", clusterIPService("thief", ips["s0"]), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Errorf("after restart, create with s0's IP %s: err = %v, want 422 provided IP is already allocated", ips["s0"], err)
	}

	// Deleting frees the IP: the next Service gets it.
	ctx := context.Background()
	if err := cs.CoreV1().Services("default").Delete(ctx, "s1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reused := mustCreateService(t, cs, "default", clusterIPService("reused", ""))
	if reused.Spec.ClusterIP != ips["s1"] {
		t.Errorf("after deleting s1 (%s), a new Service got %s, want s1's", ips["s1"], reused.Spec.ClusterIP)
	}
	wantRangeFull(t, cs, "extra")
}

// TestService_ClientGo: typed create, get, update, list, watch and delete.
func TestService_ClientGo(t *testing.T) {
	d := StartDaemon(t)
	cs := d.Clientset()
	createNamespace(t, cs, "svc")
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	svcs := cs.CoreV1().Services("svc")
	w, err := svcs.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created := mustCreateService(t, cs, "svc", clusterIPService("api", ""))
	got, err := svcs.Get(ctx, "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ClusterIP != created.Spec.ClusterIP || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("get = %s@%s, want create's %s@%s", got.Spec.ClusterIP, got.ResourceVersion, created.Spec.ClusterIP, created.ResourceVersion)
	}

	// An update that leaves clusterIP out keeps the allocated one.
	got.Spec.ClusterIP, got.Spec.ClusterIPs = "", nil
	got.Spec.Selector = map[string]string{"app": "api2"}
	updated, err := svcs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.ClusterIP != created.Spec.ClusterIP || updated.Spec.Selector["app"] != "api2" {
		t.Errorf("update: clusterIP %s selector %v, want %s and app=api2", updated.Spec.ClusterIP, updated.Spec.Selector, created.Spec.ClusterIP)
	}
	// Changing the cluster IP is kube-apiserver's 422.
	other := "10.0.0.250"
	if other == created.Spec.ClusterIP {
		other = "10.0.0.251"
	}
	updated.Spec.ClusterIP, updated.Spec.ClusterIPs = other, []string{other}
	_, err = svcs.Update(ctx, updated, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterIPs[0]: Invalid value: [\""+other+"\"]: may not change once set") {
		t.Errorf("update changing clusterIP: err = %v, want 422 may not change once set", err)
	}

	list, err := svcs.List(ctx, metav1.ListOptions{FieldSelector: "spec.clusterIP=" + created.Spec.ClusterIP})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "api" {
		t.Errorf("list by spec.clusterIP: %d items, want api", len(list.Items))
	}
	// kube-apiserver's field-label conversion for Services.
	_, err = svcs.List(ctx, metav1.ListOptions{FieldSelector: "spec.ports=80"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: spec.ports") {
		t.Errorf("list by spec.ports: err = %v, want 400 field label not supported: spec.ports", err)
	}
	if err := svcs.Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var types []watch.EventType
	timeout := time.After(eventually)
	for len(types) < 3 {
		select {
		case ev := <-w.ResultChan():
			types = append(types, ev.Type)
		case <-timeout:
			t.Fatalf("watch: got %v, want ADDED MODIFIED DELETED", types)
		}
	}
	if want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}; types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Errorf("watch events = %v, want %v", types, want)
	}
}

// TestService_NamespaceDeletionFreesIPs: the Services the namespace
// controller deletes with their namespace give their IPs back.
func TestService_NamespaceDeletionFreesIPs(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{Args: smallRange})
	cs := d.Clientset()
	createNamespace(t, cs, "doomed")
	fillRangeIn(t, cs, "doomed", "s", 5)
	wantRangeFull(t, cs, "extra")
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(eventually)
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace doomed still there after %v (err %v)", eventually, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fillRange(t, cs, "again", 5)
	wantRangeFull(t, cs, "extra")
}

// TestService_ConcurrentCreates: Services created at the same time never
// share a cluster IP or a node port.
func TestService_ConcurrentCreates(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{Args: []string{"--service-cluster-ip-range=10.96.0.0/26", "--service-node-port-range=30000-30059"}})
	cs := d.Clientset()
	const n = 40
	type result struct {
		svc *corev1.Service
		err error
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			svc := clusterIPService("c"+itoa(int32(i)), "")
			svc.Spec.Type = corev1.ServiceTypeNodePort
			got, err := createService(t, cs, "default", svc, metav1.CreateOptions{})
			results <- result{got, err}
		}()
	}
	ips, ports := map[string]string{"10.96.0.1": "kubernetes"}, map[int32]string{}
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil {
			t.Errorf("create: %v", r.err)
			continue
		}
		ip, port := r.svc.Spec.ClusterIP, r.svc.Spec.Ports[0].NodePort
		if other, dup := ips[ip]; dup {
			t.Errorf("%s and %s both got cluster IP %s", other, r.svc.Name, ip)
		}
		if other, dup := ports[port]; dup {
			t.Errorf("%s and %s both got node port %d", other, r.svc.Name, port)
		}
		ips[ip], ports[port] = r.svc.Name, r.svc.Name
	}
}
