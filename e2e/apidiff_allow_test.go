package e2e

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// allowedDiff is a difference from kube-apiserver that edgeapi makes on
// purpose. Only differences in the named scenario and step, at a path that
// starts with Path ("" for any path in the step), are ignored, and then only
// if Accept (when set) agrees with edgeapi's response for that step.
//
// Keep this list minimal: every other difference is a server bug. Each entry
// must also be listed, with its reason, in the project README.
type allowedDiff struct {
	Scenario string // scenario file name without .json
	Step     string // step id
	Path     string // diff path prefix, e.g. "body.message"; "" = whole step
	Reason   string
	// Accept checks edgeapi's (normalized) response, so that the entry
	// allows edgeapi's intended answer and not any answer.
	Accept func(transcriptStep) error
	// AcceptBoth, when set, checks edgeapi's response against
	// kube-apiserver's for that step.
	AcceptBoth func(edgeapi, kube transcriptStep) error
}

// managedFieldsOrder: kube-apiserver (and edgeapi) sort managedFields by
// operation, then by the second of their time, then by manager. Two
// managers that apply within one second sort by name; a second boundary
// between their applies sorts them by time. The transcripts hide the
// times, so which order a run gets depends on the clock.
const managedFieldsOrder = "managedFields entries of one operation are sorted by the second of their time before their manager, so their order depends on whether the applies fell in one second"

// sameManagedFieldsEntries accepts a step whose managedFields hold the
// same entries as kube-apiserver's, in another order.
func sameManagedFieldsEntries(edge, kube transcriptStep) error {
	entries := func(s transcriptStep) ([]string, error) {
		var body struct {
			Metadata struct {
				ManagedFields []json.RawMessage `json:"managedFields"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(s.Response.Body, &body); err != nil {
			return nil, err
		}
		var out []string
		for _, e := range body.Metadata.ManagedFields {
			var v any
			if err := json.Unmarshal(e, &v); err != nil {
				return nil, err
			}
			b, _ := json.Marshal(v) // map keys sorted
			out = append(out, string(b))
		}
		sort.Strings(out)
		return out, nil
	}
	a, err := entries(kube)
	if err != nil {
		return fmt.Errorf("kube-apiserver's managedFields: %w", err)
	}
	b, err := entries(edge)
	if err != nil {
		return fmt.Errorf("edgeapi's managedFields: %w", err)
	}
	if !reflect.DeepEqual(a, b) || edge.Response.Status != kube.Response.Status {
		return fmt.Errorf("the managedFields entries differ, not only their order")
	}
	return nil
}

// The recording kube-apiserver ran without kube-controller-manager, so a
// deleted namespace stays Terminating forever. edgeapi finalizes namespaces
// itself: it deletes their contents and then the namespace. How far it has
// got when the steps after delete-ns run depends on timing, so each of those
// steps may see kube-apiserver's answer (still Terminating) or the answer
// for a namespace that is gone.
const nsGone = "the namespace goes away once emptied (kube-apiserver without kube-controller-manager leaves it Terminating forever)"

// kube-apiserver answers some bad input with a 500; edgeapi answers a 4xx
// Status.
const badInput4xx = "kube-apiserver answers this bad input with a 500; edgeapi answers a 4xx Status"

var apidiffAllowed = []allowedDiff{
	{Scenario: "s02-errors", Step: "rv-on-create", Reason: badInput4xx + " (create with metadata.resourceVersion set)", Accept: clientErrorStatus},
	{Scenario: "s06-get-rv", Step: "get-rv-invalid", Reason: badInput4xx + " (GET with resourceVersion=abc)", Accept: clientErrorStatus},
	{Scenario: "s07-watch-from-rv", Step: "watch-bad-rv", Reason: badInput4xx + " (watch with resourceVersion=abc)", Accept: clientErrorStatus},
	{Scenario: "s18-strategic-merge-patch", Step: "bad-directive", Reason: badInput4xx + " (unknown $patch directive)", Accept: clientErrorStatus},
	{Scenario: "s19-ssa-basics", Step: "apply-unknown-field-strict", Reason: badInput4xx + " (unknown field in an apply body)", Accept: clientErrorStatus},
	{Scenario: "s19-ssa-basics", Step: "apply-unknown-field-default", Reason: badInput4xx + " (unknown field in an apply body)", Accept: clientErrorStatus},

	// edgeapi runs the garbage collector, which orphans the dependents and
	// removes the orphan finalizer, so the object is gone when the client
	// tries to remove the finalizer itself.
	{Scenario: "s20-ssa-conflicts", Step: "alpha-applies-label", Path: "body.metadata.managedFields", Reason: managedFieldsOrder, AcceptBoth: sameManagedFieldsEntries},
	{Scenario: "s20-ssa-conflicts", Step: "beta-applies-same-label", Path: "body.metadata.managedFields", Reason: managedFieldsOrder, AcceptBoth: sameManagedFieldsEntries},

	{Scenario: "s23-finalizers", Step: "release-o", Reason: "the garbage collector removed the orphan finalizer and the object (kube-apiserver without kube-controller-manager keeps it)", Accept: statusIn(404)},

	{Scenario: "s30-namespace-lifecycle", Step: "get-terminating", Reason: nsGone, Accept: statusIn(404)},
	{Scenario: "s30-namespace-lifecycle", Step: "create-in-terminating", Reason: nsGone, Accept: statusIn(404)},
	{Scenario: "s30-namespace-lifecycle", Step: "update-in-terminating", Reason: nsGone, Accept: statusIn(404)},
	{Scenario: "s30-namespace-lifecycle", Step: "list-in-terminating", Reason: nsGone, Accept: emptyList},
	{Scenario: "s30-namespace-lifecycle", Step: "delete-ns-again", Reason: nsGone, Accept: statusIn(404)},
	{Scenario: "s30-namespace-lifecycle", Step: "recreate-terminating", Reason: nsGone + "; so recreating it succeeds", Accept: statusIn(201)},
	{Scenario: "s30-namespace-lifecycle", Step: "delete-cm", Reason: nsGone + "; its ConfigMap went with it", Accept: statusIn(404)},
}

// findAllowed returns the entry that allows a difference, if any.
func findAllowed(scenario, step, path string) (allowedDiff, bool) {
	for _, a := range apidiffAllowed {
		if a.Scenario == scenario && a.Step == step && strings.HasPrefix(path, a.Path) {
			return a, true
		}
	}
	return allowedDiff{}, false
}

func statusIn(codes ...int) func(transcriptStep) error {
	return func(s transcriptStep) error {
		for _, c := range codes {
			if s.Response.Status == c {
				return nil
			}
		}
		return fmt.Errorf("edgeapi answered %d, want one of %v", s.Response.Status, codes)
	}
}

// clientErrorStatus accepts a 4xx answer whose body is a metav1.Status with
// the same code.
func clientErrorStatus(s transcriptStep) error {
	if s.Response.Status < 400 || s.Response.Status > 499 {
		return fmt.Errorf("edgeapi answered %d, want a 4xx", s.Response.Status)
	}
	var st struct {
		Kind   string `json:"kind"`
		Status string `json:"status"`
		Reason string `json:"reason"`
		Code   int    `json:"code"`
	}
	if err := json.Unmarshal(s.Response.Body, &st); err != nil {
		return fmt.Errorf("body is not a JSON Status: %v", err)
	}
	if st.Kind != "Status" || st.Status != "Failure" || st.Reason == "" || st.Code != s.Response.Status {
		return fmt.Errorf("body is %s, want a Status with status Failure, a reason and code %d", s.Response.Body, s.Response.Status)
	}
	return nil
}

// emptyList accepts a 200 list without items.
func emptyList(s transcriptStep) error {
	if s.Response.Status != 200 {
		return fmt.Errorf("edgeapi answered %d, want 200", s.Response.Status)
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(s.Response.Body, &l); err != nil {
		return fmt.Errorf("body is not a JSON list: %v", err)
	}
	if len(l.Items) != 0 {
		return fmt.Errorf("list has %d items, want none", len(l.Items))
	}
	return nil
}
