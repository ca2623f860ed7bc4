package registry

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func errStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestEventStrategy_Validate(t *testing.T) {
	eventTime := metav1.NewMicroTime(time.Unix(1700000000, 0))
	tests := []struct {
		name   string
		strict bool
		event  *corev1.Event
		want   []string
	}{
		{"core: legacy event", false, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "pod.17a", Namespace: "ns1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p"},
		}, nil},
		{"core: names need only be path segments", false, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "Pod_Name:With.Odd~Chars", Namespace: "default"},
		}, nil},
		{"core: name with a slash", false, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "default"},
		}, []string{`metadata.name: Invalid value: "a/b": may not contain '/'`}},
		{"core: involvedObject namespace must match", false, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns2", Name: "p"},
		}, []string{`involvedObject.namespace: Invalid value: "ns2": does not match event.namespace`}},
		{"core: cluster-scoped object outside default", false, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n"},
		}, []string{`involvedObject.namespace: Invalid value: "": does not match event.namespace`}},
		{"core: new-style event needs reporting fields", false, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p"},
			EventTime:      eventTime,
		}, []string{
			// kube-apiserver also runs the qualified-name check on the
			// empty value.
			"reportingController: Required value",
			`reportingController: Invalid value: "": name part must be non-empty`,
			`reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			"reportingInstance: Required value",
			"action: Required value",
			"reason: Required value",
		}},
		{"strict: new-style event", true, &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns1"},
			InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p"},
			EventTime:           eventTime,
			ReportingController: "example.com/ctl",
			ReportingInstance:   "ctl-1",
			Action:              "Sync",
			Reason:              "Synced",
			Type:                corev1.EventTypeNormal,
		}, nil},
		{"strict: old-style fields are rejected", true, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "E", Namespace: "ns1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p"},
			FirstTimestamp: metav1.Unix(1700000000, 0),
			Count:          3,
			Source:         corev1.EventSource{Component: "kubelet"},
			Type:           "Info",
			Series:         &corev1.EventSeries{Count: 1},
		}, []string{
			`metadata.name: Invalid value: "E": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`series.count: Invalid value: "": should be at least 2`,
			"series.lastObservedTime: Required value",
			"eventTime: Required value",
			`type: Invalid value: "": has invalid value: Info`,
			`firstTimestamp: Invalid value: "": needs to be unset`,
			`count: Invalid value: "": needs to be unset`,
			`source: Invalid value: "": needs to be unset`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := eventStrategy{strict: tt.strict}
			var errs field.ErrorList
			if tt.strict {
				errs = s.Validate(coreToEventsV1(tt.event))
			} else {
				errs = s.Validate(tt.event)
			}
			if got := errStrings(errs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n %q\nwant\n %q", got, tt.want)
			}
		})
	}
}

func TestEventStrategy_ValidateUpdate(t *testing.T) {
	old := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns1", UID: "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b", ResourceVersion: "3", CreationTimestamp: metav1.Unix(1700000000, 0)},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p"},
		EventTime:           metav1.NewMicroTime(time.Unix(1700000000, 0)),
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-1",
		Action:              "Sync",
		Reason:              "Synced",
		Type:                corev1.EventTypeNormal,
		Message:             "hello",
	}
	changed := old.DeepCopy()
	changed.Message = "changed"
	changed.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Unix(1700000060, 0))}

	// Through core/v1 anything legacy-valid goes.
	assertNoErrors(t, eventStrategy{}.ValidateUpdate(changed, old))
	// Through events.k8s.io/v1 only series and metadata may change.
	got := errStrings(eventStrategy{strict: true}.ValidateUpdate(coreToEventsV1(changed), coreToEventsV1(old)))
	want := []string{`message: Invalid value: "changed": field is immutable`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEventsV1Kind_Conversion(t *testing.T) {
	related := &corev1.ObjectReference{Kind: "Node", Name: "n1"}
	v1ev := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:               metav1.ObjectMeta{Name: "e", Namespace: "ns1", Labels: map[string]string{"a": "b"}},
		EventTime:                metav1.NewMicroTime(time.Unix(1700000000, 123000)),
		Series:                   &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(time.Unix(1700000300, 0))},
		ReportingController:      "example.com/ctl",
		ReportingInstance:        "ctl-1",
		Action:                   "Sync",
		Reason:                   "Synced",
		Regarding:                corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p", UID: "u1", APIVersion: "v1", ResourceVersion: "9", FieldPath: "spec.containers{c}"},
		Related:                  related,
		Note:                     "note text",
		Type:                     corev1.EventTypeWarning,
		DeprecatedSource:         corev1.EventSource{Component: "old", Host: "h"},
		DeprecatedFirstTimestamp: metav1.Unix(1699999000, 0),
		DeprecatedLastTimestamp:  metav1.Unix(1699999500, 0),
		DeprecatedCount:          7,
	}
	k := eventsV1EventKind()
	stored, err := k.ToStorage(v1ev)
	if err != nil {
		t.Fatal(err)
	}
	core := stored.(*corev1.Event)
	want := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          v1ev.ObjectMeta,
		InvolvedObject:      v1ev.Regarding,
		Reason:              "Synced",
		Message:             "note text",
		Source:              corev1.EventSource{Component: "old", Host: "h"},
		FirstTimestamp:      v1ev.DeprecatedFirstTimestamp,
		LastTimestamp:       v1ev.DeprecatedLastTimestamp,
		Count:               7,
		Type:                corev1.EventTypeWarning,
		EventTime:           v1ev.EventTime,
		Series:              &corev1.EventSeries{Count: 4, LastObservedTime: v1ev.Series.LastObservedTime},
		Action:              "Sync",
		Related:             related,
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-1",
	}
	if !reflect.DeepEqual(core, want) {
		t.Errorf("ToStorage:\n got  %+v\n want %+v", core, want)
	}
	core.Related.Name = "mutated"
	if v1ev.Related.Name != "n1" {
		t.Errorf("ToStorage shares memory with its input")
	}
	core.Related.Name = "n1"

	back, err := k.FromStorage(core)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v1ev) {
		t.Errorf("FromStorage(ToStorage(x)) != x:\n got  %+v\n want %+v", back, v1ev)
	}
}

func TestEventKinds_FieldSet(t *testing.T) {
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns1"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: "ns1", Name: "p", UID: "u1", APIVersion: "v1", ResourceVersion: "9", FieldPath: "spec"},
		Reason:              "Synced",
		ReportingController: "example.com/ctl",
		Type:                "Normal",
	}
	core := coreEventKind()
	got := core.FieldSet(ev)
	want := fields.Set{
		"metadata.name": "e", "metadata.namespace": "ns1",
		"involvedObject.kind": "Pod", "involvedObject.namespace": "ns1", "involvedObject.name": "p", "involvedObject.uid": "u1",
		"involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "9", "involvedObject.fieldPath": "spec",
		"reason": "Synced", "reportingComponent": "example.com/ctl", "source": "example.com/ctl", "type": "Normal",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("core:\n got  %v\n want %v", got, want)
	}

	v1 := eventsV1EventKind()
	for _, obj := range []runtime.Object{ev, coreToEventsV1(ev)} {
		set := v1.FieldSet(obj)
		if set["regarding.name"] != "p" || set["reportingController"] != "example.com/ctl" || set["source"] != "example.com/ctl" {
			t.Errorf("events.k8s.io from %T: got %v", obj, set)
		}
		if len(set) != len(v1.FieldSelectorKeys) {
			t.Errorf("events.k8s.io: %d fields for %d keys", len(set), len(v1.FieldSelectorKeys))
		}
	}
	for _, k := range []*Kind{core, v1} {
		set := k.FieldSet(ev)
		for _, key := range k.FieldSelectorKeys {
			if _, ok := set[key]; !ok {
				t.Errorf("%s: key %q not in field set", k.GVK, key)
			}
		}
	}
}

func TestEventKinds_TableRow(t *testing.T) {
	defer func(f func() time.Time) { now = f }(now)
	base := time.Unix(1700000000, 0)
	now = func() time.Time { return base }

	tests := []struct {
		name string
		ev   *corev1.Event
		want []interface{}
	}{
		{"legacy", &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "p.1"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{c}"},
			Reason:         "Pulled", Message: " pulled image \n", Type: "Normal",
			Source:         corev1.EventSource{Component: "kubelet", Host: "node1"},
			FirstTimestamp: metav1.NewTime(base.Add(-10 * time.Minute)),
			LastTimestamp:  metav1.NewTime(base.Add(-2 * time.Minute)),
			Count:          3,
		}, []interface{}{"2m", "Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, node1", "pulled image", "10m", int64(3), "p.1"}},
		{"new-style singleton", &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "n.2"},
			InvolvedObject:      corev1.ObjectReference{Kind: "Node"},
			EventTime:           metav1.NewMicroTime(base.Add(-90 * time.Second)),
			ReportingController: "ctl", ReportingInstance: "i1", Type: "Warning", Reason: "R",
		}, []interface{}{"90s", "Warning", "R", "node", "", "ctl, i1", "", "90s", int64(1), "n.2"}},
		{"series", &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			EventTime:  metav1.NewMicroTime(base.Add(-time.Hour)),
			Series:     &corev1.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(base.Add(-5 * time.Second))},
		}, []interface{}{"5s", "", "", "", "", "", "", "60m", int64(5), "s"}},
	}
	cols := eventColumns()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []*Kind{coreEventKind(), eventsV1EventKind()} {
				var obj runtime.Object = tt.ev
				if k.GVK.Group != "" {
					obj = coreToEventsV1(tt.ev)
				}
				got, err := k.TableRow(obj)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s:\n got  %#v\n want %#v", k.GVK, got, tt.want)
				}
				if len(got) != len(cols) {
					t.Errorf("%d cells for %d columns", len(got), len(cols))
				}
			}
		})
	}

	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Last Seen,Type,Reason,Object,Subobject,Source,Message,First Seen,Count,Name" {
		t.Errorf("columns %s", got)
	}
}
