package registry

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Events are served twice over one storage, as in kube-apiserver: core/v1
// events (legacy validation) and events.k8s.io/v1 events (strict
// validation for new-style events), both stored as core/v1 Events under the
// storage resource "events". Validation, tables and field selectors work on
// the core/v1 form, so errors name core/v1 fields (involvedObject,
// message, reportingController) whichever version was written.

// Length limits of new-style events (kube-apiserver's core validation).
const (
	eventReportingInstanceLengthLimit = 128
	eventActionLengthLimit            = 128
	eventReasonLengthLimit            = 128
	eventNoteLengthLimit              = 1024
)

var coreEventGVK = corev1.SchemeGroupVersion.WithKind("Event")

func coreEventKind() *Kind {
	return &Kind{
		GVK:                 coreEventGVK,
		Resource:            "events",
		Singular:            "event",
		ListKind:            "EventList",
		InternalPackage:     "core",
		Namespaced:          true,
		ShortNames:          []string{"ev"},
		Verbs:               verbsAll,
		StorageResource:     "events",
		StorageGVK:          coreEventGVK,
		New:                 func() runtime.Object { return &corev1.Event{} },
		NewList:             func() runtime.Object { return &corev1.EventList{} },
		Strategy:            eventStrategy{strict: false},
		AllowCreateOnUpdate: true,
		NoGarbageCollection: true,
		TableColumns:        eventColumns(),
		TableRow:            eventRow,
		FieldSet: func(obj runtime.Object) fields.Set {
			ev := asCoreEvent(obj)
			if ev == nil {
				return nil
			}
			return coreEventFieldSet(ev)
		},
		FieldSelectorKeys: []string{
			"metadata.name", "metadata.namespace",
			"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
			"reason", "reportingComponent", "source", "type",
		},
		UnknownFieldLabel: fieldLabelNotSupported,
	}
}

func eventsV1EventKind() *Kind {
	return &Kind{
		GVK:                 eventsv1.SchemeGroupVersion.WithKind("Event"),
		Resource:            "events",
		Singular:            "event",
		ListKind:            "EventList",
		InternalPackage:     "core",
		Namespaced:          true,
		ShortNames:          []string{"ev"},
		Verbs:               verbsAll,
		StorageResource:     "events",
		StorageGVK:          coreEventGVK,
		ToStorage:           eventsV1ToStorage,
		FromStorage:         eventsV1FromStorage,
		New:                 func() runtime.Object { return &eventsv1.Event{} },
		NewList:             func() runtime.Object { return &eventsv1.EventList{} },
		Strategy:            eventStrategy{strict: true},
		AllowCreateOnUpdate: true,
		NoGarbageCollection: true,
		// kube-apiserver prints events.k8s.io Events with the core printer
		// (it converts to its internal version first).
		TableColumns: eventColumns(),
		TableRow:     eventRow,
		// The events.k8s.io field-label conversion maps its names onto the
		// core field set: regarding.* is involvedObject.*, and
		// reportingController is reportingComponent.
		FieldSet: func(obj runtime.Object) fields.Set {
			ev := asCoreEvent(obj)
			if ev == nil {
				return nil
			}
			core := coreEventFieldSet(ev)
			set := fields.Set{
				"metadata.name":       core["metadata.name"],
				"metadata.namespace":  core["metadata.namespace"],
				"reason":              core["reason"],
				"source":              core["source"],
				"type":                core["type"],
				"reportingController": core["reportingComponent"],
			}
			for _, f := range []string{"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"} {
				set["regarding."+f] = core["involvedObject."+f]
			}
			return set
		},
		FieldSelectorKeys: []string{
			"metadata.name", "metadata.namespace",
			"regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
			"regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
			"reason", "reportingController", "source", "type",
		},
		UnknownFieldLabel: fieldLabelNotSupported,
	}
}

// coreEventFieldSet is kube-apiserver's event ToSelectableFields.
func coreEventFieldSet(ev *corev1.Event) fields.Set {
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	set := objectMetaFieldSet(&ev.ObjectMeta, true)
	set["involvedObject.kind"] = ev.InvolvedObject.Kind
	set["involvedObject.namespace"] = ev.InvolvedObject.Namespace
	set["involvedObject.name"] = ev.InvolvedObject.Name
	set["involvedObject.uid"] = string(ev.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = ev.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = ev.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = ev.InvolvedObject.FieldPath
	set["reason"] = ev.Reason
	set["reportingComponent"] = ev.ReportingController
	set["source"] = source
	set["type"] = ev.Type
	return set
}

// asCoreEvent returns obj as a core/v1 Event, converting an events.k8s.io/v1
// Event; nil for other objects.
func asCoreEvent(obj runtime.Object) *corev1.Event {
	switch ev := obj.(type) {
	case *corev1.Event:
		return ev
	case *eventsv1.Event:
		return eventsV1ToCore(ev)
	}
	return nil
}

// eventsV1ToStorage converts an events.k8s.io/v1 Event to the core/v1 Event
// it is stored as.
func eventsV1ToStorage(obj runtime.Object) (runtime.Object, error) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, fmt.Errorf("convert to core/v1 Event: unexpected object %T", obj)
	}
	return eventsV1ToCore(ev), nil
}

// eventsV1FromStorage converts a stored core/v1 Event to events.k8s.io/v1.
func eventsV1FromStorage(obj runtime.Object) (runtime.Object, error) {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return nil, fmt.Errorf("convert to events.k8s.io/v1 Event: unexpected object %T", obj)
	}
	return coreToEventsV1(ev), nil
}

// eventsV1ToCore is kube-apiserver's Convert_v1_Event_To_core_Event
// followed by the internal-to-core/v1 conversion: note is message,
// regarding is involvedObject, deprecatedSource/FirstTimestamp/
// LastTimestamp/Count are source/firstTimestamp/lastTimestamp/count, the
// other fields keep their names. The result shares no memory with ev.
func eventsV1ToCore(ev *eventsv1.Event) *corev1.Event {
	ev = ev.DeepCopy()
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: coreEventGVK.GroupVersion().String(), Kind: coreEventGVK.Kind},
		ObjectMeta:          ev.ObjectMeta,
		InvolvedObject:      ev.Regarding,
		Reason:              ev.Reason,
		Message:             ev.Note,
		Source:              ev.DeprecatedSource,
		FirstTimestamp:      ev.DeprecatedFirstTimestamp,
		LastTimestamp:       ev.DeprecatedLastTimestamp,
		Count:               ev.DeprecatedCount,
		Type:                ev.Type,
		EventTime:           ev.EventTime,
		Action:              ev.Action,
		Related:             ev.Related,
		ReportingController: ev.ReportingController,
		ReportingInstance:   ev.ReportingInstance,
	}
	if ev.Series != nil {
		out.Series = &corev1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
	}
	return out
}

// coreToEventsV1 is the inverse of eventsV1ToCore (kube-apiserver's
// Convert_core_Event_To_v1_Event).
func coreToEventsV1(ev *corev1.Event) *eventsv1.Event {
	ev = ev.DeepCopy()
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:               ev.ObjectMeta,
		EventTime:                ev.EventTime,
		ReportingController:      ev.ReportingController,
		ReportingInstance:        ev.ReportingInstance,
		Action:                   ev.Action,
		Reason:                   ev.Reason,
		Regarding:                ev.InvolvedObject,
		Related:                  ev.Related,
		Note:                     ev.Message,
		Type:                     ev.Type,
		DeprecatedSource:         ev.Source,
		DeprecatedFirstTimestamp: ev.FirstTimestamp,
		DeprecatedLastTimestamp:  ev.LastTimestamp,
		DeprecatedCount:          ev.Count,
	}
	if ev.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
	}
	return out
}

// eventStrategy is kube-apiserver's pkg/registry/core/event strategy. Its
// validation depends on the API version of the request: strict for
// events.k8s.io/v1, legacy for core/v1.
type eventStrategy struct {
	strict bool
}

func (eventStrategy) PrepareForCreate(obj runtime.Object)      {}
func (eventStrategy) PrepareForUpdate(obj, old runtime.Object) {}
func (eventStrategy) AllowUnconditionalUpdate() bool           { return true }

// NameValidator: core/v1 Events only need names usable in a URL (kube-
// apiserver checks no more); events.k8s.io/v1 Events need DNS subdomains.
func (s eventStrategy) NameValidator() func(string, bool) []string {
	if s.strict {
		return eventsV1Name
	}
	return coreEventName
}

var (
	coreEventName = withPathSegment(nil)
	eventsV1Name  = withPathSegment(apimachineryvalidation.NameIsDNSSubdomain)
)

// Validate is kube-apiserver's ValidateEventCreate.
func (s eventStrategy) Validate(obj runtime.Object) field.ErrorList {
	ev := asCoreEvent(obj)
	errs := legacyValidateEvent(ev)
	if s.strict {
		errs = append(errs, validateCoreObjectMeta(&ev.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)...)
		errs = append(errs, validateEventSeries(ev)...)
		if ev.EventTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
		}
		if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
			errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", ev.Type)))
		}
		if !ev.FirstTimestamp.IsZero() {
			errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
		}
		if !ev.LastTimestamp.IsZero() {
			errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
		}
		if ev.Count != 0 {
			errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
		}
		if ev.Source.Component != "" || ev.Source.Host != "" {
			errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
		}
	}
	return withGenericCreate(errs, obj, true)
}

// ValidateUpdate is kube-apiserver's ValidateEventUpdate: new-style events
// written through events.k8s.io/v1 are immutable but for series and
// metadata.
func (s eventStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	ev, oldEv := asCoreEvent(obj), asCoreEvent(old)
	errs := legacyValidateEvent(ev)
	if s.strict {
		errs = append(errs, validateCoreObjectMetaUpdate(&ev.ObjectMeta, &oldEv.ObjectMeta)...)
		if !reflect.DeepEqual(ev.Series, oldEv.Series) {
			errs = append(errs, validateEventSeries(ev)...)
		}
		immutable := func(newVal, oldVal interface{}, name string) {
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(newVal, oldVal, field.NewPath(name))...)
		}
		immutable(ev.InvolvedObject, oldEv.InvolvedObject, "involvedObject")
		immutable(ev.Reason, oldEv.Reason, "reason")
		immutable(ev.Message, oldEv.Message, "message")
		immutable(ev.Source, oldEv.Source, "source")
		immutable(ev.FirstTimestamp, oldEv.FirstTimestamp, "firstTimestamp")
		immutable(ev.LastTimestamp, oldEv.LastTimestamp, "lastTimestamp")
		immutable(ev.Count, oldEv.Count, "count")
		// kube-apiserver checks reason twice.
		immutable(ev.Reason, oldEv.Reason, "reason")
		immutable(ev.Type, oldEv.Type, "type")
		immutable(ev.EventTime, oldEv.EventTime, "eventTime")
		immutable(ev.Action, oldEv.Action, "action")
		immutable(ev.Related, oldEv.Related, "related")
		immutable(ev.ReportingController, oldEv.ReportingController, "reportingController")
		immutable(ev.ReportingInstance, oldEv.ReportingInstance, "reportingInstance")
	}
	return errs
}

// validateEventSeries is kube-apiserver's validateV1EventSeries.
func validateEventSeries(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.Series != nil {
		if ev.Series.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if ev.Series.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	return errs
}

// legacyValidateEvent is kube-apiserver's check that every event passes,
// whichever API version wrote it: the namespaces agree, and new-style
// events (eventTime set) carry reportingController, reportingInstance,
// action and reason within their limits.
func legacyValidateEvent(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	involvedNS := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.IsZero() {
		if ev.InvolvedObject.Namespace == "" {
			// Old clients may put events about cluster-scoped objects
			// into "default".
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(involvedNS, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(involvedNS, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(involvedNS, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if ev.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath("reportingController"), ev.ReportingController, msg))
		}
		if ev.ReportingInstance == "" {
			errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
		}
		if len(ev.ReportingInstance) > eventReportingInstanceLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", fmt.Sprintf("can have at most %v characters", eventReportingInstanceLengthLimit)))
		}
		if ev.Action == "" {
			errs = append(errs, field.Required(field.NewPath("action"), ""))
		}
		if len(ev.Action) > eventActionLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("action"), "", fmt.Sprintf("can have at most %v characters", eventActionLengthLimit)))
		}
		if ev.Reason == "" {
			errs = append(errs, field.Required(field.NewPath("reason"), ""))
		}
		if len(ev.Reason) > eventReasonLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("reason"), "", fmt.Sprintf("can have at most %v characters", eventReasonLengthLimit)))
		}
		if len(ev.Message) > eventNoteLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", eventNoteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(ev.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return errs
}

// eventColumns are kube-apiserver's event printer columns; the priority-1
// ones are shown by `kubectl get -o wide`.
func eventColumns() []metav1.TableColumnDefinition {
	ev := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: ev["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: ev["type"]},
		{Name: "Reason", Type: "string", Description: ev["reason"]},
		{Name: "Object", Type: "string", Description: ev["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: ev["source"]},
		{Name: "Message", Type: "string", Description: ev["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: ev["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: ev["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	}
}

// eventRow is kube-apiserver's printEvent in its wide form.
func eventRow(obj runtime.Object) ([]interface{}, error) {
	ev := asCoreEvent(obj)
	if ev == nil {
		return nil, fmt.Errorf("events table: unexpected object %T", obj)
	}
	firstSeen := translateTimestampSince(ev.FirstTimestamp)
	if ev.FirstTimestamp.IsZero() {
		firstSeen = translateMicroTimestampSince(ev.EventTime)
	}
	lastSeen := translateTimestampSince(ev.LastTimestamp)
	if ev.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := ev.Count
	if ev.Series != nil {
		lastSeen = translateMicroTimestampSince(ev.Series.LastObservedTime)
		count = ev.Series.Count
	} else if count == 0 {
		// Singleton new-style events have no count.
		count = 1
	}
	target := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		target += "/" + ev.InvolvedObject.Name
	}
	return []interface{}{
		lastSeen,
		ev.Type,
		ev.Reason,
		target,
		ev.InvolvedObject.FieldPath,
		formatEventSource(ev.Source, ev.ReportingController, ev.ReportingInstance),
		strings.TrimSpace(ev.Message),
		firstSeen,
		int64(count),
		ev.Name,
	}, nil
}

// formatEventSource is "component, host", falling back to
// reportingController and reportingInstance, without ", " when there is no
// host.
func formatEventSource(src corev1.EventSource, reportingController, reportingInstance string) string {
	component, host := src.Component, src.Host
	if component == "" {
		component = reportingController
	}
	if host == "" {
		host = reportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}
