package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// A controller-runtime manager (the library most operators are built
// with) runs against edgeapi: leader election on a Lease, a reconciler for
// a custom kind that writes status through the status subresource, keeps a
// finalizer, and server-side applies an owned ConfigMap.

// widgetCRDYAML defines the custom kind the reconciler manages: a
// namespaced Widget with spec.size and a status subresource.
const widgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.demo.example.com
spec:
  group: demo.example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size:
                type: integer
                minimum: 0
          status:
            type: object
            properties:
              observedSize:
                type: integer
              observedGeneration:
                type: integer
              configMap:
                type: string
`

var (
	widgetGVK = schema.GroupVersionKind{Group: "demo.example.com", Version: "v1", Kind: "Widget"}
	widgetGVR = schema.GroupVersionResource{Group: "demo.example.com", Version: "v1", Resource: "widgets"}
)

const (
	// widgetFinalizer is the finalizer the reconciler keeps on every Widget.
	widgetFinalizer = "demo.example.com/cleanup"
	// widgetManager is the reconciler's field manager.
	widgetManager = "widget-controller"
)

// forwarder is a TCP proxy on a fixed loopback address that forwards each
// connection to the current target. A client configured with its address
// keeps one server address across a daemon restart, which comes back on
// another port; the restart closes its connections as a real one would.
type forwarder struct {
	l net.Listener

	mu     sync.Mutex
	target string
	conns  map[net.Conn]bool
	closed bool
}

// newForwarder listens on a free loopback port and forwards to target
// until the test ends.
func newForwarder(t *testing.T, target string) *forwarder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	f := &forwarder{l: l, target: target, conns: map[net.Conn]bool{}}
	go f.serve()
	t.Cleanup(f.close)
	return f
}

// URL is the forwarder's address as a server URL.
func (f *forwarder) URL() string { return "http://" + f.l.Addr().String() }

// SetTarget sends new connections to target.
func (f *forwarder) SetTarget(target string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.target = target
}

func (f *forwarder) serve() {
	for {
		c, err := f.l.Accept()
		if err != nil {
			return
		}
		go f.forward(c)
	}
}

func (f *forwarder) forward(c net.Conn) {
	f.mu.Lock()
	target := f.target
	f.mu.Unlock()
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	f.conns[c], f.conns[up] = true, true
	f.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done // either side closing ends both
	c.Close()
	up.Close()
	<-done
	f.mu.Lock()
	delete(f.conns, c)
	delete(f.conns, up)
	f.mu.Unlock()
}

func (f *forwarder) close() {
	f.l.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
}

// widgetReconciler reconciles Widgets: it keeps widgetFinalizer on them,
// server-side applies a ConfigMap widget-NAME that the Widget controls,
// writes status through the status subresource and records an
// events.k8s.io Event; its controller watches the ConfigMaps' metadata
// only. When a Widget is deleted, it records whether the ConfigMap was
// still there (it must be: the garbage collector waits for the owner to
// go) and then removes the finalizer.
type widgetReconciler struct {
	client   client.Client
	recorder events.EventRecorder

	mu sync.Mutex
	// finalized maps a Widget name to whether its ConfigMap existed when
	// the finalizer ran.
	finalized map[string]bool
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cmName := "widget-" + w.GetName()

	if w.GetDeletionTimestamp() != nil {
		if !controllerutil.ContainsFinalizer(w, widgetFinalizer) {
			return ctrl.Result{}, nil
		}
		err := r.client.Get(ctx, types.NamespacedName{Namespace: w.GetNamespace(), Name: cmName}, &corev1.ConfigMap{})
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get configmap: %w", err)
		}
		r.mu.Lock()
		r.finalized[w.GetName()] = err == nil
		r.mu.Unlock()
		controllerutil.RemoveFinalizer(w, widgetFinalizer)
		if err := r.client.Update(ctx, w, client.FieldOwner(widgetManager)); err != nil {
			return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
		}
		return ctrl.Result{}, nil
	}

	if controllerutil.AddFinalizer(w, widgetFinalizer) {
		// The update's event brings the Widget back here.
		if err := r.client.Update(ctx, w, client.FieldOwner(widgetManager)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
		return ctrl.Result{}, nil
	}

	size, found, err := unstructured.NestedInt64(w.Object, "spec", "size")
	if err != nil || !found {
		return ctrl.Result{}, fmt.Errorf("spec.size: found %v, %v", found, err)
	}
	cm := corev1ac.ConfigMap(cmName, w.GetNamespace()).
		WithData(map[string]string{"size": strconv.FormatInt(size, 10)}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(widgetGVK.GroupVersion().String()).
			WithKind(widgetGVK.Kind).
			WithName(w.GetName()).
			WithUID(w.GetUID()).
			WithController(true).
			WithBlockOwnerDeletion(true))
	if err := r.client.Apply(ctx, cm, client.FieldOwner(widgetManager), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply configmap: %w", err)
	}

	status := map[string]interface{}{
		"observedSize":       size,
		"observedGeneration": w.GetGeneration(),
		"configMap":          cmName,
	}
	if old, _, _ := unstructured.NestedMap(w.Object, "status"); fmt.Sprint(old) == fmt.Sprint(status) {
		return ctrl.Result{}, nil
	}
	if err := unstructured.SetNestedMap(w.Object, status, "status"); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.client.Status().Update(ctx, w, client.FieldOwner(widgetManager)); err != nil {
		return ctrl.Result{}, fmt.Errorf("update status: %w", err)
	}
	r.recorder.Eventf(w, nil, corev1.EventTypeNormal, "Resized", "Reconcile", "size is %d", size)
	return ctrl.Result{}, nil
}

// finalizedWith reports whether the finalizer ran for name, and whether
// the ConfigMap existed then.
func (r *widgetReconciler) finalizedWith(name string) (ran, cmExisted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmExisted, ran = r.finalized[name]
	return ran, cmExisted
}

// logSink collects controller-runtime's log lines for the test log.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lines = append(s.lines, time.Now().UTC().Format("15:04:05.000 ")+prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

var setCtrlLoggerOnce sync.Once

// waitUntil polls cond until it returns nil, and fails with its last error
// after eventually.
func waitUntil(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %v", what, eventually, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getWidget reads a Widget with the dynamic client.
func getWidget(d *Daemon, ns, name string) (*unstructured.Unstructured, error) {
	return d.Dynamic().Resource(widgetGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// widgetConverged checks that the reconciler has caught up with the
// Widget's spec: the finalizer is set, the status names the observed size
// and generation, and the ConfigMap holds the size and is controlled by the
// Widget.
func widgetConverged(d *Daemon, ns, name string) error {
	w, err := getWidget(d, ns, name)
	if err != nil {
		return err
	}
	if !controllerutil.ContainsFinalizer(w, widgetFinalizer) {
		return fmt.Errorf("finalizers %v, want %s", w.GetFinalizers(), widgetFinalizer)
	}
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	observed, _, _ := unstructured.NestedInt64(w.Object, "status", "observedSize")
	gen, _, _ := unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	cmName, _, _ := unstructured.NestedString(w.Object, "status", "configMap")
	if observed != size || gen != w.GetGeneration() || cmName != "widget-"+name {
		return fmt.Errorf("status %v, want observedSize %d, observedGeneration %d, configMap widget-%s", w.Object["status"], size, w.GetGeneration(), name)
	}
	cm, err := d.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), cmName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("configmap: %w", err)
	}
	if got, want := cm.Data["size"], strconv.FormatInt(size, 10); got != want {
		return fmt.Errorf("configmap data.size = %q, want %q", got, want)
	}
	ref := metav1.GetControllerOf(cm)
	if ref == nil || ref.UID != w.GetUID() || ref.Kind != "Widget" || ref.APIVersion != "demo.example.com/v1" ||
		ref.Name != name || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		return fmt.Errorf("configmap controller reference %+v, want the Widget %s (uid %s) with blockOwnerDeletion", ref, name, w.GetUID())
	}
	return nil
}

// wantWidgetEvent checks for an events.k8s.io/v1 Event of the widget
// controller regarding the Widget name with the note.
func wantWidgetEvent(d *Daemon, ns, name, note string) error {
	l, err := d.Clientset().EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	var seen []string
	for _, e := range l.Items {
		r := e.Regarding
		if r.Kind == "Widget" && r.APIVersion == "demo.example.com/v1" && r.Name == name && r.Namespace == ns &&
			e.Reason == "Resized" && e.Action == "Reconcile" && e.Note == note && e.ReportingController == widgetManager && e.Type == corev1.EventTypeNormal {
			return nil
		}
		seen = append(seen, fmt.Sprintf("%s/%s %s %q", r.Kind, r.Name, e.Reason, e.Note))
	}
	return fmt.Errorf("no Resized event %q for Widget %s among %v", note, name, seen)
}

// managedBy returns "operation/subresource" for each managedFields entry
// of manager.
func managedBy(mf []metav1.ManagedFieldsEntry, manager string) []string {
	var out []string
	for _, e := range mf {
		if e.Manager == manager {
			out = append(out, string(e.Operation)+"/"+e.Subresource)
		}
	}
	return out
}

// TestControllerRuntime_Manager runs a controller-runtime manager with
// leader election against edgeapi and checks that its Widget reconciler
// converges, that it keeps working across a kill -9 and restart of
// edgeapi, and that deleting a Widget runs the finalizer and then garbage
// collects the owned ConfigMap.
func TestControllerRuntime_Manager(t *testing.T) {
	d := StartDaemon(t)
	dataDir := d.DataDir
	if res := d.KubectlStdin(widgetCRDYAML, "apply", "-f", "-"); res.ExitCode != 0 {
		t.Fatalf("%s", res)
	}
	waitEstablished(t, d, "60s", "widgets.demo.example.com")
	const ns = "widgets"
	createNamespace(t, d.Clientset(), ns)

	// The manager reaches edgeapi through a forwarder, so that it keeps
	// its server address when edgeapi restarts on another port.
	fwd := newForwarder(t, d.Addr)
	cfg := d.RESTConfig()
	cfg.Host = fwd.URL()
	cfg.UserAgent = "widget-manager"

	setCtrlLoggerOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	logs := &logSink{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller-runtime log:\n%s", logs)
		}
	})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The manager must keep its lease across the restart: renewals fail
	// while edgeapi is down, and a leader that cannot renew within
	// renewDeadline stops. A restart takes about a second, but allow for
	// a loaded machine.
	leaseDuration, renewDeadline, retryPeriod := 60*time.Second, 40*time.Second, 2*time.Second
	skipNameValidation := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  logs.logger(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionID:        "widget-controller",
		LeaderElectionNamespace: ns,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		Controller:              ctrlconfig.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	rec := &widgetReconciler{client: mgr.GetClient(), recorder: mgr.GetEventRecorder(widgetManager), finalized: map[string]bool{}}
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(widgetGVK)
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("widget").
		For(widget).
		Owns(&corev1.ConfigMap{}, builder.OnlyMetadata).
		Complete(rec); err != nil {
		t.Fatalf("build controller: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	mgrErr := make(chan error, 1)
	go func() { mgrErr <- mgr.Start(ctx) }()
	stopped := false
	stopManager := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-mgrErr:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(eventually):
			t.Errorf("manager did not stop within %v", eventually)
		}
	}
	t.Cleanup(stopManager)
	// managerRunning fails the test if the manager has stopped by itself
	// (it does when it loses the leader election).
	managerRunning := func(when string) {
		t.Helper()
		select {
		case err := <-mgrErr:
			stopped = true
			t.Fatalf("%s: manager stopped: %v", when, err)
		default:
		}
	}

	select {
	case <-mgr.Elected():
	case err := <-mgrErr:
		stopped = true
		t.Fatalf("manager stopped before it was elected: %v", err)
	case <-time.After(eventually):
		t.Fatalf("manager not elected within %v", eventually)
	}
	lease, err := d.Clientset().CoordinationV1().Leases(ns).Get(context.Background(), "widget-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	wantLeaseHeld(t, lease, leaseDuration)

	// Converge: a new Widget gets the finalizer, the ConfigMap and its
	// status.
	dyn := d.Dynamic()
	w := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "demo.example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": "gizmo"},
		"spec":       map[string]interface{}{"size": int64(3)},
	}}
	if _, err := dyn.Resource(widgetGVR).Namespace(ns).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	waitUntil(t, "widget gizmo converged", func() error { return widgetConverged(d, ns, "gizmo") })
	got, err := getWidget(d, ns, "gizmo")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(managedBy(got.GetManagedFields(), widgetManager), ","), "Update/,Update/status"; got != want {
		t.Errorf("widget managedFields of %s = %s, want %s (finalizer by update, status by the subresource)", widgetManager, got, want)
	}
	cm, err := d.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-gizmo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(managedBy(cm.ManagedFields, widgetManager), ","), "Apply/"; got != want {
		t.Errorf("configmap managedFields of %s = %s, want %s", widgetManager, got, want)
	}

	// The reconciler's Event names the Widget.
	waitUntil(t, "event for widget gizmo", func() error { return wantWidgetEvent(d, ns, "gizmo", "size is 3") })
	// A ConfigMap deleted behind the controller's back comes back: the
	// metadata-only watch on owned ConfigMaps triggers the owner's reconcile.
	if err := d.Clientset().CoreV1().ConfigMaps(ns).Delete(context.Background(), "widget-gizmo", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	waitUntil(t, "configmap widget-gizmo recreated", func() error {
		got, err := d.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-gizmo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.UID == cm.UID {
			return fmt.Errorf("still the deleted configmap (uid %s)", cm.UID)
		}
		return nil
	})

	// Restart: kill -9 edgeapi and start it again on the same data; the
	// manager reconnects through the forwarder, keeps its lease, and
	// reconciles a spec change made after the restart.
	d.Kill()
	d = StartDaemon(t, DaemonOptions{DataDir: dataDir})
	fwd.SetTarget(d.Addr)
	managerRunning("after the restart")
	dyn = d.Dynamic()
	patch := []byte(`{"spec":{"size":7}}`)
	if _, err := dyn.Resource(widgetGVR).Namespace(ns).Patch(context.Background(), "gizmo", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch widget: %v", err)
	}
	waitUntil(t, "widget gizmo converged on size 7 after the restart", func() error { return widgetConverged(d, ns, "gizmo") })
	waitUntil(t, "event for widget gizmo after the restart", func() error { return wantWidgetEvent(d, ns, "gizmo", "size is 7") })
	// A Widget created after the restart is reconciled too.
	w.SetName("sprocket")
	if _, err := dyn.Resource(widgetGVR).Namespace(ns).Create(context.Background(), w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	waitUntil(t, "widget sprocket converged after the restart", func() error { return widgetConverged(d, ns, "sprocket") })
	managerRunning("after reconciling")
	// The lease is still held, by the same manager, and renewed since.
	waitUntil(t, "lease renewed after the restart", func() error {
		after, err := d.Clientset().CoordinationV1().Leases(ns).Get(context.Background(), "widget-controller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if *after.Spec.HolderIdentity != *lease.Spec.HolderIdentity {
			return fmt.Errorf("holder %s, want %s", *after.Spec.HolderIdentity, *lease.Spec.HolderIdentity)
		}
		if !after.Spec.RenewTime.After(lease.Spec.RenewTime.Time) {
			return fmt.Errorf("renewTime %v, not after %v", after.Spec.RenewTime, lease.Spec.RenewTime)
		}
		return nil
	})

	// Delete: the finalizer runs while the ConfigMap still exists, then
	// the Widget goes and the garbage collector deletes the ConfigMap.
	if err := dyn.Resource(widgetGVR).Namespace(ns).Delete(context.Background(), "gizmo", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete widget: %v", err)
	}
	waitGone(t, "widget gizmo", func() error { _, err := getWidget(d, ns, "gizmo"); return err })
	ran, cmExisted := rec.finalizedWith("gizmo")
	if !ran || !cmExisted {
		t.Errorf("finalizer ran %v, with the configmap there %v; want both", ran, cmExisted)
	}
	cs := d.Clientset()
	waitGone(t, "configmap widget-gizmo", func() error {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "widget-gizmo", metav1.GetOptions{})
		return err
	})
	// The other Widget and its ConfigMap are untouched.
	if err := widgetConverged(d, ns, "sprocket"); err != nil {
		t.Errorf("widget sprocket after gizmo was deleted: %v", err)
	}
	managerRunning("at the end")
	stopManager()
}

// wantLeaseHeld checks that lease names a holder with the manager's lease
// duration and an acquire and renew time.
func wantLeaseHeld(t *testing.T, lease *coordinationv1.Lease, duration time.Duration) {
	t.Helper()
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" {
		t.Fatalf("lease has no holder: %+v", s)
	}
	if s.LeaseDurationSeconds == nil || *s.LeaseDurationSeconds != int32(duration/time.Second) {
		t.Errorf("leaseDurationSeconds = %v, want %d", s.LeaseDurationSeconds, int32(duration/time.Second))
	}
	if s.AcquireTime == nil || s.RenewTime == nil {
		t.Errorf("lease acquireTime %v, renewTime %v: want both", s.AcquireTime, s.RenewTime)
	}
}
