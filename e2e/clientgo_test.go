package e2e

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// createNamespace creates an Active namespace for a test.
func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// apiStatus returns the metav1.Status carried by a client-go error.
func apiStatus(t *testing.T, err error) metav1.Status {
	t.Helper()
	var s apierrors.APIStatus
	if !asAPIStatus(err, &s) {
		t.Fatalf("error %v (%T) carries no API Status", err, err)
	}
	return s.Status()
}

func asAPIStatus(err error, target *apierrors.APIStatus) bool {
	for err != nil {
		if s, ok := err.(apierrors.APIStatus); ok {
			*target = s
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// wantStatus checks an error's Status code, reason and message.
func wantStatus(t *testing.T, err error, code int32, reason metav1.StatusReason, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %d %s %q", code, reason, message)
	}
	s := apiStatus(t, err)
	if s.Code != code || s.Reason != reason || s.Message != message {
		t.Errorf("got %d %s %q, want %d %s %q", s.Code, s.Reason, s.Message, code, reason, message)
	}
}

func configMapNames(items []corev1.ConfigMap) []string {
	names := make([]string, 0, len(items))
	for _, cm := range items {
		names = append(names, cm.Name)
	}
	sort.Strings(names)
	return names
}

// TestClientset_CRUD creates, reads, updates, lists and deletes each kind
// edgeapi serves through the typed client-go clientset.
func TestClientset_CRUD(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "crud"
	createNamespace(t, cs, ns)

	t.Run("ConfigMap", func(t *testing.T) {
		c := cs.CoreV1().ConfigMaps(ns)
		created, err := c.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cm1", Labels: map[string]string{"app": "x"}},
			Data:       map[string]string{"a": "1"},
			BinaryData: map[string][]byte{"bin": {0, 1, 2}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Namespace != ns {
			t.Errorf("create: uid %q rv %q creationTimestamp %v namespace %q, want all set", created.UID, created.ResourceVersion, created.CreationTimestamp, created.Namespace)
		}
		got, err := c.Get(ctx, "cm1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if !reflect.DeepEqual(got.Data, created.Data) || !reflect.DeepEqual(got.BinaryData, map[string][]byte{"bin": {0, 1, 2}}) || got.ResourceVersion != created.ResourceVersion {
			t.Errorf("get = data %v binaryData %v rv %s, want data %v binaryData bin:[0 1 2] rv %s", got.Data, got.BinaryData, got.ResourceVersion, created.Data, created.ResourceVersion)
		}
		got.Data["a"] = "2"
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if updated.Data["a"] != "2" || updated.ResourceVersion == got.ResourceVersion || updated.UID != created.UID {
			t.Errorf("update = data %v rv %s uid %s, want a=2, a new rv, uid %s", updated.Data, updated.ResourceVersion, updated.UID, created.UID)
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if got, want := configMapNames(list.Items), []string{"cm1"}; !reflect.DeepEqual(got, want) {
			t.Errorf("list = %v, want %v", got, want)
		}
		if list.ResourceVersion == "" {
			t.Errorf("list resourceVersion is empty")
		}
		if err := c.Delete(ctx, "cm1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err = c.Get(ctx, "cm1", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `configmaps "cm1" not found`)
	})

	t.Run("Secret", func(t *testing.T) {
		c := cs.CoreV1().Secrets(ns)
		created, err := c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s1"},
			Data:       map[string][]byte{"user": []byte("admin")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if got, want := created.Type, corev1.SecretTypeOpaque; got != want {
			t.Errorf("create: type = %q, want %q (the default)", got, want)
		}
		got, err := c.Get(ctx, "s1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if string(got.Data["user"]) != "admin" {
			t.Errorf("get: data = %q, want user=admin", got.Data)
		}
		got.Data["pass"] = []byte("p@ss")
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if string(updated.Data["pass"]) != "p@ss" || updated.ResourceVersion == got.ResourceVersion {
			t.Errorf("update = data %q rv %s, want pass=p@ss and a new rv", updated.Data, updated.ResourceVersion)
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "s1" {
			t.Errorf("list = %d items, want s1 only", len(list.Items))
		}
		if err := c.Delete(ctx, "s1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err = c.Get(ctx, "s1", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `secrets "s1" not found`)
	})

	t.Run("Namespace", func(t *testing.T) {
		c := cs.CoreV1().Namespaces()
		created, err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crud-ns"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if got, want := created.Labels["kubernetes.io/metadata.name"], "crud-ns"; got != want {
			t.Errorf("create: label kubernetes.io/metadata.name = %q, want %q", got, want)
		}
		if got, want := created.Status.Phase, corev1.NamespaceActive; got != want {
			t.Errorf("create: phase = %q, want %q", got, want)
		}
		if got, want := created.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}; !reflect.DeepEqual(got, want) {
			t.Errorf("create: spec.finalizers = %v, want %v", got, want)
		}
		got, err := c.Get(ctx, "crud-ns", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		got.Labels["team"] = "edge"
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if updated.Labels["team"] != "edge" {
			t.Errorf("update: labels = %v, want team=edge", updated.Labels)
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		names := map[string]bool{}
		for _, n := range list.Items {
			names[n.Name] = true
		}
		for _, want := range []string{"crud-ns", ns, "default", "kube-system", "kube-public"} {
			if !names[want] {
				t.Errorf("list: namespace %s missing from %v", want, names)
			}
		}
		if err := c.Delete(ctx, "crud-ns", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		waitGone(t, "namespace crud-ns", func() error { _, err := c.Get(ctx, "crud-ns", metav1.GetOptions{}); return err })
	})

	t.Run("v1 Event", func(t *testing.T) {
		c := cs.CoreV1().Events(ns)
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		created, err := c.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "ev1"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm1", APIVersion: "v1"},
			Reason:         "Created",
			Message:        "created cm1",
			Type:           corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "e2e"},
			FirstTimestamp: now,
			LastTimestamp:  now,
			Count:          1,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := c.Get(ctx, "ev1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.Message != "created cm1" || got.InvolvedObject.Name != "cm1" || !got.LastTimestamp.Equal(&now) || got.ResourceVersion != created.ResourceVersion {
			t.Errorf("get = message %q involvedObject %q lastTimestamp %v, want %q cm1 %v", got.Message, got.InvolvedObject.Name, got.LastTimestamp, "created cm1", now)
		}
		got.Count = 2
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if updated.Count != 2 {
			t.Errorf("update: count = %d, want 2", updated.Count)
		}
		list, err := c.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=cm1"})
		if err != nil {
			t.Fatalf("list by involvedObject.name: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "ev1" {
			t.Errorf("list by involvedObject.name = %d items, want ev1", len(list.Items))
		}
		if err := c.Delete(ctx, "ev1", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err = c.Get(ctx, "ev1", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `events "ev1" not found`)
	})

	t.Run("events.k8s.io/v1 Event", func(t *testing.T) {
		c := cs.EventsV1().Events(ns)
		eventTime := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
		created, err := c.Create(ctx, &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "ev2"},
			EventTime:           eventTime,
			ReportingController: "example.com/e2e",
			ReportingInstance:   "e2e-1",
			Action:              "Create",
			Reason:              "Created",
			Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm2", APIVersion: "v1"},
			Note:                "created cm2",
			Type:                corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := c.Get(ctx, "ev2", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.Note != "created cm2" || got.Regarding.Name != "cm2" || !got.EventTime.Equal(&eventTime) || got.ResourceVersion != created.ResourceVersion {
			t.Errorf("get = note %q regarding %q eventTime %v, want %q cm2 %v", got.Note, got.Regarding.Name, got.EventTime, "created cm2", eventTime)
		}

		// Both Event APIs serve the same objects.
		core, err := cs.CoreV1().Events(ns).Get(ctx, "ev2", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get through v1: %v", err)
		}
		if core.Message != "created cm2" || core.InvolvedObject.Name != "cm2" || core.ReportingController != "example.com/e2e" || core.Action != "Create" {
			t.Errorf("v1 view = message %q involvedObject %q reportingComponent %q action %q, want created cm2, cm2, example.com/e2e, Create",
				core.Message, core.InvolvedObject.Name, core.ReportingController, core.Action)
		}

		// events.k8s.io/v1 Events are immutable except for their series.
		changed := got.DeepCopy()
		changed.Note = "updated"
		_, err = c.Update(ctx, changed, metav1.UpdateOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, `Event.events.k8s.io "ev2" is invalid: message: Invalid value: "updated": field is immutable`)
		observed := metav1.NewMicroTime(eventTime.Add(time.Second))
		got.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: observed}
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update series: %v", err)
		}
		if updated.Series == nil || updated.Series.Count != 2 || !updated.Series.LastObservedTime.Equal(&observed) {
			t.Errorf("update: series = %+v, want count 2 lastObservedTime %v", updated.Series, observed)
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "ev2" {
			t.Errorf("list = %d items, want ev2 only", len(list.Items))
		}
		if err := c.Delete(ctx, "ev2", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err = c.Get(ctx, "ev2", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `events.events.k8s.io "ev2" not found`)
	})

	t.Run("Lease", func(t *testing.T) {
		c := cs.CoordinationV1().Leases(ns)
		renew := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
		created, err := c.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "leader"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr("node-a"),
				LeaseDurationSeconds: ptr(int32(15)),
				AcquireTime:          &renew,
				RenewTime:            &renew,
				LeaseTransitions:     ptr(int32(0)),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := c.Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if deref(got.Spec.HolderIdentity) != "node-a" || deref(got.Spec.LeaseDurationSeconds) != 15 || got.Spec.RenewTime == nil || !got.Spec.RenewTime.Equal(&renew) {
			t.Errorf("get: spec = %+v, want holder node-a, 15s, renewTime %v (microseconds kept)", got.Spec, renew)
		}
		got.Spec.HolderIdentity = ptr("node-b")
		got.Spec.LeaseTransitions = ptr(int32(1))
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if deref(updated.Spec.HolderIdentity) != "node-b" || updated.ResourceVersion == created.ResourceVersion {
			t.Errorf("update: holder %q rv %s, want node-b and a new rv", deref(updated.Spec.HolderIdentity), updated.ResourceVersion)
		}
		// A takeover from a stale read loses.
		created.Spec.HolderIdentity = ptr("node-c")
		_, err = c.Update(ctx, created, metav1.UpdateOptions{})
		wantStatus(t, err, 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on leases.coordination.k8s.io "leader": the object has been modified; please apply your changes to the latest version and try again`)
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != "leader" {
			t.Errorf("list = %d items, want leader only", len(list.Items))
		}
		if err := c.Delete(ctx, "leader", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err = c.Get(ctx, "leader", metav1.GetOptions{})
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `leases.coordination.k8s.io "leader" not found`)
	})
}

func ptr[T any](v T) *T { return &v }

// waitGone polls get until it returns NotFound; any other error fails.
func waitGone(t *testing.T, what string, get func() error) {
	t.Helper()
	var last error
	deadline := time.Now().Add(eventually)
	for {
		last = get()
		if apierrors.IsNotFound(last) {
			return
		}
		if last != nil {
			t.Fatalf("waiting for %s to go away: get: %v", what, last)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after %v (last get: %v)", what, eventually, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClientset_Errors checks that client-go classifies edgeapi's errors
// the way it classifies kube-apiserver's, with the same messages and causes.
func TestClientset_Errors(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "errors"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	t.Run("stale update is a conflict", func(t *testing.T) {
		first, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		second := first.DeepCopy()
		second.Data["a"] = "2"
		if _, err := c.Update(ctx, second, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update: %v", err)
		}
		first.Data["a"] = "stale"
		_, err = c.Update(ctx, first, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("stale update: got %v, want a Conflict", err)
		}
		wantStatus(t, err, 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on configmaps "cm1": the object has been modified; please apply your changes to the latest version and try again`)
		if got := apiStatus(t, err).Details; got == nil || got.Name != "cm1" || got.Kind != "configmaps" {
			t.Errorf("details = %+v, want name cm1 kind configmaps", got)
		}
	})

	t.Run("already exists", func(t *testing.T) {
		_, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1"}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create again: got %v, want AlreadyExists", err)
		}
		wantStatus(t, err, 409, metav1.StatusReasonAlreadyExists, `configmaps "cm1" already exists`)
	})

	t.Run("not found", func(t *testing.T) {
		_, err := c.Get(ctx, "nope", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("get: got %v, want NotFound", err)
		}
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `configmaps "nope" not found`)
		_, err = c.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nope"}}, metav1.UpdateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("update of a missing object: got %v, want NotFound (no create on update)", err)
		}
		err = c.Delete(ctx, "nope", metav1.DeleteOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("delete of a missing object: got %v, want NotFound", err)
		}
	})

	t.Run("invalid name", func(t *testing.T) {
		_, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name!"}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create: got %v, want Invalid", err)
		}
		const detail = `Invalid value: "Bad_Name!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, `ConfigMap "Bad_Name!" is invalid: metadata.name: `+detail)
		s := apiStatus(t, err)
		if s.Details == nil {
			t.Fatalf("details missing")
		}
		if s.Details.Name != "Bad_Name!" || s.Details.Kind != "ConfigMap" {
			t.Errorf("details = name %q kind %q, want Bad_Name! ConfigMap", s.Details.Name, s.Details.Kind)
		}
		want := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: detail, Field: "metadata.name"}}
		if !reflect.DeepEqual(s.Details.Causes, want) {
			t.Errorf("causes = %+v, want %+v", s.Details.Causes, want)
		}
	})

	t.Run("missing name", func(t *testing.T) {
		_, err := c.Create(ctx, &corev1.ConfigMap{}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("create: got %v, want Invalid", err)
		}
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, `ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required`)
		if causes := apiStatus(t, err).Details.Causes; len(causes) != 1 || causes[0].Type != metav1.CauseTypeFieldValueRequired || causes[0].Field != "metadata.name" {
			t.Errorf("causes = %+v, want one FieldValueRequired on metadata.name", causes)
		}
	})

	t.Run("missing namespace", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps("x").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("create: got %v, want NotFound", err)
		}
		wantStatus(t, err, 404, metav1.StatusReasonNotFound, `namespaces "x" not found`)
		if got := apiStatus(t, err).Details; got == nil || got.Name != "x" || got.Kind != "namespaces" {
			t.Errorf("details = %+v, want name x kind namespaces", got)
		}
		// Listing in a missing namespace is not an error.
		list, err := cs.CoreV1().ConfigMaps("x").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Errorf("list in a missing namespace = %v items, %v; want an empty list", list, err)
		}
	})
}

// TestNamespace_CascadeDelete deletes a namespace with content and checks
// that the namespace and everything in it go away.
func TestNamespace_CascadeDelete(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns, other = "doomed", "bystander"
	createNamespace(t, cs, ns)
	createNamespace(t, cs, other)
	for _, n := range []string{ns, other} {
		for _, name := range []string{"a", "b", "c"} {
			if _, err := cs.CoreV1().ConfigMaps(n).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create configmap %s/%s: %v", n, name, err)
			}
			if _, err := cs.CoreV1().Secrets(n).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create secret %s/%s: %v", n, name, err)
			}
		}
		if _, err := cs.CoordinationV1().Leases(n).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create lease %s/l: %v", n, err)
		}
	}

	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	waitGone(t, "namespace "+ns, func() error { _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return err })

	t.Run("contents gone", func(t *testing.T) {
		cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(cms.Items) != 0 {
			t.Errorf("configmaps in %s after deletion: %v items, err %v; want none", ns, len(cms.Items), err)
		}
		secrets, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(secrets.Items) != 0 {
			t.Errorf("secrets in %s after deletion: %v items, err %v; want none", ns, len(secrets.Items), err)
		}
		leases, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(leases.Items) != 0 {
			t.Errorf("leases in %s after deletion: %v items, err %v; want none", ns, len(leases.Items), err)
		}
	})
	t.Run("other namespace untouched", func(t *testing.T) {
		cms, err := cs.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := configMapNames(cms.Items), []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
			t.Errorf("configmaps in %s = %v, want %v", other, got, want)
		}
	})
	t.Run("name reusable", func(t *testing.T) {
		createNamespace(t, cs, ns)
		cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(cms.Items) != 0 {
			t.Errorf("configmaps in recreated %s: %v items, err %v; want none", ns, len(cms.Items), err)
		}
	})
}

// TestNamespace_Terminating checks what a namespace being deleted looks
// like: phase Terminating, no new content, until it is gone.
func TestNamespace_Terminating(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "going"
	createNamespace(t, cs, ns)
	// A finalizer keeps the ConfigMap, and so the namespace, around.
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	got, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace while its content is held: %v", err)
	}
	if got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Errorf("namespace = phase %q deletionTimestamp %v, want Terminating with a deletionTimestamp", got.Status.Phase, got.DeletionTimestamp)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	wantStatus(t, err, 403, metav1.StatusReasonForbidden,
		`configmaps "late" is forbidden: unable to create new content in namespace going because it is being terminated`)
	if !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: IsForbidden = false for %v", err)
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	wantStatus(t, err, 409, metav1.StatusReasonAlreadyExists, `object is being deleted: namespaces "going" already exists`)

	// Releasing the finalizer lets the namespace finish. The namespace
	// controller marks the ConfigMap deleted meanwhile, so a read-modify-
	// write may meet a 409 and is retried, as clients do.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		held, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return err
		}
		held.Finalizers = nil
		_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("release finalizer: %v", err)
	}
	waitGone(t, "namespace "+ns, func() error { _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return err })
}

// TestSecret_StringData checks that stringData is merged into data, wins
// over data for the same key, and is never returned.
func TestSecret_StringData(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "secrets"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().Secrets(ns)

	want := map[string][]byte{"user": []byte("admin"), "pass": []byte("p@ss"), "keep": []byte("k")}
	created, err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Data:       map[string][]byte{"user": []byte("overridden"), "keep": []byte("k")},
		StringData: map[string]string{"user": "admin", "pass": "p@ss"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, tc := range []struct {
		name string
		get  func() (*corev1.Secret, error)
	}{
		{"create response", func() (*corev1.Secret, error) { return created, nil }},
		{"get", func() (*corev1.Secret, error) { return c.Get(ctx, "s1", metav1.GetOptions{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, want) {
				t.Errorf("data = %q, want %q", got.Data, want)
			}
			if got.StringData != nil {
				t.Errorf("stringData = %q, want it not returned", got.StringData)
			}
		})
	}

	t.Run("update", func(t *testing.T) {
		got, err := c.Get(ctx, "s1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.StringData = map[string]string{"pass": "new"}
		updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if string(updated.Data["pass"]) != "new" || string(updated.Data["user"]) != "admin" || updated.StringData != nil {
			t.Errorf("update = data %q stringData %q, want pass=new user=admin and no stringData", updated.Data, updated.StringData)
		}
	})
}

// TestConfigMap_Immutable checks that an immutable ConfigMap's data cannot
// change while its metadata can.
func TestConfigMap_Immutable(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "immutable"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	created, err := c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Data:       map[string]string{"k": "v"},
		Immutable:  ptr(true),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	t.Run("data change rejected", func(t *testing.T) {
		cm := created.DeepCopy()
		cm.Data["k"] = "changed"
		_, err := c.Update(ctx, cm, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("update: got %v, want Invalid", err)
		}
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set")
		want := []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Message: "Forbidden: field is immutable when `immutable` is set", Field: "data"}}
		if got := apiStatus(t, err).Details.Causes; !reflect.DeepEqual(got, want) {
			t.Errorf("causes = %+v, want %+v", got, want)
		}
	})
	t.Run("unfreezing rejected", func(t *testing.T) {
		cm := created.DeepCopy()
		cm.Immutable = ptr(false)
		_, err := c.Update(ctx, cm, metav1.UpdateOptions{})
		wantStatus(t, err, 422, metav1.StatusReasonInvalid, "ConfigMap \"frozen\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set")
	})
	t.Run("label change allowed", func(t *testing.T) {
		cm := created.DeepCopy()
		cm.Labels = map[string]string{"app": "x"}
		got, err := c.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update labels: %v", err)
		}
		if got.Labels["app"] != "x" || got.Data["k"] != "v" {
			t.Errorf("update = labels %v data %v, want app=x and k=v", got.Labels, got.Data)
		}
	})
	t.Run("delete allowed", func(t *testing.T) {
		if err := c.Delete(ctx, "frozen", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
}

// TestConfigMap_GenerateName checks server-generated names.
func TestConfigMap_GenerateName(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "gen"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)

	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		cm, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if !strings.HasPrefix(cm.Name, "gen-") || len(cm.Name) != len("gen-")+5 {
			t.Errorf("name = %q, want gen- plus 5 random characters", cm.Name)
		}
		if cm.GenerateName != "gen-" {
			t.Errorf("generateName = %q, want gen-", cm.GenerateName)
		}
		if seen[cm.Name] {
			t.Errorf("name %q generated twice", cm.Name)
		}
		seen[cm.Name] = true
		if _, err := c.Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("get %s: %v", cm.Name, err)
		}
	}

	t.Run("explicit name wins", func(t *testing.T) {
		cm, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fixed", GenerateName: "gen-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if cm.Name != "fixed" || cm.GenerateName != "gen-" {
			t.Errorf("name %q generateName %q, want fixed and gen-", cm.Name, cm.GenerateName)
		}
	})
	t.Run("long prefix cut to 58", func(t *testing.T) {
		prefix := strings.Repeat("p", 70)
		cm, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if !strings.HasPrefix(cm.Name, prefix[:58]) || len(cm.Name) != 63 {
			t.Errorf("name = %q (%d chars), want 58 p's plus 5 random characters", cm.Name, len(cm.Name))
		}
	})
}

// TestConfigMap_ListSelectors checks label and field selectors on list.
func TestConfigMap_ListSelectors(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "selectors"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	for name, labels := range map[string]map[string]string{
		"a": {"env": "prod", "tier": "web"},
		"b": {"env": "dev", "tier": "web"},
		"c": {"env": "prod"},
		"d": nil,
	} {
		if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}

	for _, tc := range []struct {
		name  string
		opts  metav1.ListOptions
		names []string
	}{
		{"label =", metav1.ListOptions{LabelSelector: "env=prod"}, []string{"a", "c"}},
		{"label ==", metav1.ListOptions{LabelSelector: "env==prod"}, []string{"a", "c"}},
		{"label != matches unlabelled", metav1.ListOptions{LabelSelector: "env!=prod"}, []string{"b", "d"}},
		{"label in", metav1.ListOptions{LabelSelector: "env in (prod,dev)"}, []string{"a", "b", "c"}},
		{"label notin", metav1.ListOptions{LabelSelector: "env notin (prod)"}, []string{"b", "d"}},
		{"label exists", metav1.ListOptions{LabelSelector: "tier"}, []string{"a", "b"}},
		{"label not exists", metav1.ListOptions{LabelSelector: "!tier"}, []string{"c", "d"}},
		{"label and", metav1.ListOptions{LabelSelector: "env=prod,tier=web"}, []string{"a"}},
		{"label none", metav1.ListOptions{LabelSelector: "env=qa"}, []string{}},
		{"field metadata.name", metav1.ListOptions{FieldSelector: "metadata.name=b"}, []string{"b"}},
		{"field metadata.name !=", metav1.ListOptions{FieldSelector: "metadata.name!=b"}, []string{"a", "c", "d"}},
		{"field metadata.namespace", metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns}, []string{"a", "b", "c", "d"}},
		{"field and label", metav1.ListOptions{FieldSelector: "metadata.name!=a", LabelSelector: "env=prod"}, []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := c.List(ctx, tc.opts)
			if err != nil {
				t.Fatalf("list %+v: %v", tc.opts, err)
			}
			if got := configMapNames(list.Items); !reflect.DeepEqual(got, tc.names) {
				t.Errorf("list %+v = %v, want %v", tc.opts, got, tc.names)
			}
		})
	}

	for _, tc := range []struct {
		name    string
		opts    metav1.ListOptions
		message string
	}{
		{"bad label syntax", metav1.ListOptions{LabelSelector: "env===prod"}, "unable to parse requirement: found '=', expected: identifier"},
		{"bad label key", metav1.ListOptions{LabelSelector: "!!!"}, "unable to parse requirement: found '!', expected: identifier"},
		{"unsupported field", metav1.ListOptions{FieldSelector: "data.k=v"}, `"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"bad field syntax", metav1.ListOptions{FieldSelector: "metadata.name"}, "invalid selector: 'metadata.name'; can't understand 'metadata.name'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.List(ctx, tc.opts)
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("list %+v: got %v, want BadRequest", tc.opts, err)
			}
			wantStatus(t, err, 400, metav1.StatusReasonBadRequest, tc.message)
		})
	}
}

// TestSecret_FieldSelectorType checks the Secret-specific field selector.
func TestSecret_FieldSelectorType(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "secret-types"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().Secrets(ns)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "custom"}, Type: "example.com/custom"},
		{ObjectMeta: metav1.ObjectMeta{Name: "basic"}, Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "u", "password": "p"}},
	} {
		if _, err := c.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", s.Name, err)
		}
	}
	for _, tc := range []struct {
		selector string
		names    []string
	}{
		{"type=Opaque", []string{"opaque"}},
		{"type=example.com/custom", []string{"custom"}},
		{"type!=Opaque", []string{"basic", "custom"}},
		{"type=kubernetes.io/basic-auth,metadata.name=basic", []string{"basic"}},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			list, err := c.List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			got := []string{}
			for _, s := range list.Items {
				got = append(got, s.Name)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.names) {
				t.Errorf("list fieldSelector=%s = %v, want %v", tc.selector, got, tc.names)
			}
		})
	}
}

// TestConfigMap_DeleteCollection deletes by label selector.
func TestConfigMap_DeleteCollection(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "deletecollection"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	for name, app := range map[string]string{"purge-0": "purge", "purge-1": "purge", "purge-2": "purge", "keep-0": "keep", "keep-1": "keep"} {
		if _, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	if err := c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=purge"}); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if got, want := configMapNames(list.Items), []string{"keep-0", "keep-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after deletecollection app=purge: %v, want %v", got, want)
	}

	t.Run("bad selector", func(t *testing.T) {
		err := c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "!!!"})
		wantStatus(t, err, 400, metav1.StatusReasonBadRequest, "unable to parse requirement: found '!', expected: identifier")
	})
	t.Run("namespaces not allowed", func(t *testing.T) {
		// The typed client has no Namespaces().DeleteCollection.
		err := cs.CoreV1().RESTClient().Delete().Resource("namespaces").Param("labelSelector", "nothing=here").Do(ctx).Error()
		if !apierrors.IsMethodNotSupported(err) {
			t.Fatalf("deletecollection on namespaces: got %v, want MethodNotAllowed", err)
		}
		wantStatus(t, err, 405, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource")
	})
}

// TestConfigMap_DeletePreconditions checks DELETE with uid and
// resourceVersion preconditions.
func TestConfigMap_DeletePreconditions(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns = "preconditions"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	cm, err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}

	// kube-apiserver checks preconditions before deleting (rest.BeforeDelete)
	// and names the kind, not the resource, in the message.
	t.Run("wrong uid", func(t *testing.T) {
		wrong := types.UID("00000000-0000-0000-0000-000000000001")
		err := c.Delete(ctx, "cm", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
		if !apierrors.IsConflict(err) {
			t.Fatalf("delete: got %v, want Conflict", err)
		}
		wantStatus(t, err, 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on ConfigMap "cm": the UID in the precondition (`+string(wrong)+`) does not match the UID in record (`+string(cm.UID)+`). The object might have been deleted and then recreated`)
		if got := apiStatus(t, err).Details; got == nil || got.Name != "cm" || got.Kind != "ConfigMap" {
			t.Errorf("details = %+v, want name cm kind ConfigMap", got)
		}
	})
	t.Run("wrong resourceVersion", func(t *testing.T) {
		stale := "1"
		err := c.Delete(ctx, "cm", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}})
		if !apierrors.IsConflict(err) {
			t.Fatalf("delete: got %v, want Conflict", err)
		}
		wantStatus(t, err, 409, metav1.StatusReasonConflict,
			`Operation cannot be fulfilled on ConfigMap "cm": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (`+cm.ResourceVersion+`). The object might have been modified`)
		if got := apiStatus(t, err).Details; got == nil || got.Name != "cm" || got.Kind != "ConfigMap" {
			t.Errorf("details = %+v, want name cm kind ConfigMap", got)
		}
	})
	t.Run("still there", func(t *testing.T) {
		if _, err := c.Get(ctx, "cm", metav1.GetOptions{}); err != nil {
			t.Errorf("get after failed deletes: %v", err)
		}
	})
	t.Run("matching uid and resourceVersion", func(t *testing.T) {
		err := c.Delete(ctx, "cm", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}})
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := c.Get(ctx, "cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: got %v, want NotFound", err)
		}
	})
}

// TestDynamic_CRUD drives a Lease and a ConfigMap through the dynamic
// client, as controllers built on unstructured objects do.
func TestDynamic_CRUD(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	dc := d.Dynamic()
	ctx := context.Background()
	const ns = "dynamic"
	createNamespace(t, cs, ns)

	leases := dc.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "coordination.k8s.io/v1",
		"kind":       "Lease",
		"metadata":   map[string]interface{}{"name": "dyn"},
		"spec":       map[string]interface{}{"holderIdentity": "a", "leaseDurationSeconds": int64(10)},
	}}
	created, err := leases.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetKind() != "Lease" || created.GetAPIVersion() != "coordination.k8s.io/v1" || created.GetUID() == "" {
		t.Errorf("create = kind %q apiVersion %q uid %q", created.GetKind(), created.GetAPIVersion(), created.GetUID())
	}
	if err := unstructured.SetNestedField(created.Object, "b", "spec", "holderIdentity"); err != nil {
		t.Fatal(err)
	}
	updated, err := leases.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if h, _, _ := unstructured.NestedString(updated.Object, "spec", "holderIdentity"); h != "b" {
		t.Errorf("update: holderIdentity = %q, want b", h)
	}
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if list.GetKind() != "LeaseList" || len(list.Items) != 1 {
		t.Errorf("list = kind %q with %d items, want LeaseList with 1", list.GetKind(), len(list.Items))
	}
	patched, err := leases.Patch(ctx, "dyn", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"c"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	if h, _, _ := unstructured.NestedString(patched.Object, "spec", "holderIdentity"); h != "c" {
		t.Errorf("merge patch: holderIdentity = %q, want c", h)
	}
	if err := leases.Delete(ctx, "dyn", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := leases.Get(ctx, "dyn", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: got %v, want NotFound", err)
	}
}

// TestInformer_ConfigMaps runs a client-go shared informer (list, then
// watch) and checks that it syncs and then sees adds, updates and deletes in
// order.
func TestInformer_ConfigMaps(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cfg := d.RESTConfig()
	cfg.Timeout = 0 // watches are long-running requests
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "informer"
	createNamespace(t, cs, ns)
	c := cs.CoreV1().ConfigMaps(ns)
	bg := context.Background()
	if _, err := c.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	var (
		mu   sync.Mutex // guards seen
		seen []string
	)
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}
	snapshot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	cms := factory.Core().V1().ConfigMaps()
	if _, err := cms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { record("ADD " + obj.(*corev1.ConfigMap).Name) },
		UpdateFunc: func(_, obj interface{}) {
			cm := obj.(*corev1.ConfigMap)
			record("UPDATE " + cm.Name + " k=" + cm.Data["k"])
		},
		DeleteFunc: func(obj interface{}) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			record("DELETE " + obj.(*corev1.ConfigMap).Name)
		},
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, eventually)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), cms.Informer().HasSynced) {
		t.Fatalf("informer did not sync within %v", eventually)
	}
	if got, want := snapshot(), []string{"ADD before"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after sync: events = %q, want %q", got, want)
	}

	cm, err := c.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	cm.Data["k"] = "2"
	if _, err := c.Update(bg, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := c.Delete(bg, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	want := []string{"ADD before", "ADD a", "UPDATE a k=2", "DELETE a"}
	deadline := time.Now().Add(eventually)
	for len(snapshot()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if _, err := cms.Lister().ConfigMaps(ns).Get("before"); err != nil {
		t.Errorf("lister get before: %v", err)
	}
	if _, err := cms.Lister().ConfigMaps(ns).Get("a"); !apierrors.IsNotFound(err) {
		t.Errorf("lister get a: got %v, want NotFound", err)
	}
}
