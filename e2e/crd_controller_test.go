package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

// The CRD controllers: names, Established, and the cleanup finalizer.

// crdCondition returns the condition of type t in crd, or nil.
func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// wantCRDCondition checks one condition's status, reason and message.
func wantCRDCondition(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType, status apiextensionsv1.ConditionStatus, reason, message string) {
	t.Helper()
	c := crdCondition(crd, typ)
	if c == nil {
		t.Errorf("%s: no %s condition in %+v", crd.Name, typ, crd.Status.Conditions)
		return
	}
	if c.Status != status || c.Reason != reason || c.Message != message {
		t.Errorf("%s: %s = %s %s %q, want %s %s %q", crd.Name, typ, c.Status, c.Reason, c.Message, status, reason, message)
	}
	if c.LastTransitionTime.IsZero() {
		t.Errorf("%s: %s has no lastTransitionTime", crd.Name, typ)
	}
}

// waitCRD polls the CRD until ok accepts it.
func waitCRD(t *testing.T, d *Daemon, name string, ok func(*apiextensionsv1.CustomResourceDefinition) bool) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c := d.apiextensionsClient(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && ok(crd) {
			return crd
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s: not as wanted after 30 s (last %v, %+v)", name, err, crd)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	c := crdCondition(crd, apiextensionsv1.Established)
	return c != nil && c.Status == apiextensionsv1.ConditionTrue
}

// TestCRD_Established: kubectl waits for the Established condition, and
// the status holds the accepted names and kube-apiserver's conditions,
// written by the field manager kube-apiserver's controllers use.
func TestCRD_Established(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const name = "crontabs.stable.example.com"
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	wantOutput(t, waitEstablished(t, d, "30s", name),
		"customresourcedefinition.apiextensions.k8s.io/"+name+" condition met\n")

	crd := waitCRD(t, d, name, established)
	if got, want := crd.Status.AcceptedNames, crd.Spec.Names; got.Plural != want.Plural || got.Singular != want.Singular ||
		got.Kind != want.Kind || got.ListKind != "CronTabList" || strings.Join(got.ShortNames, ",") != "ct" {
		t.Errorf("acceptedNames = %+v, want the spec's %+v", got, want)
	}
	wantCRDCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
	wantCRDCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
	found := false
	for _, mf := range crd.ManagedFields {
		if mf.Manager == "kube-apiserver" && mf.Operation == metav1.ManagedFieldsOperationUpdate && mf.Subresource == "status" {
			found = true
		}
	}
	if !found {
		t.Errorf("no managedFields entry of kube-apiserver for status: %+v", crd.ManagedFields)
	}

	// A new short name is accepted too.
	changed := strings.Replace(cronTabCRDYAML, "shortNames: [ct]", "shortNames: [ct, cts]", 1)
	d.KubectlStdin(changed, "apply", "-f", "-")
	waitCRD(t, d, name, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return strings.Join(crd.Status.AcceptedNames.ShortNames, ",") == "ct,cts"
	})
}

// TestCRD_EstablishedServes: CRDs created at once each become
// Established with their names accepted, and a client that sees
// Established in a watch event finds the custom resources served at once
// (the kinds are registered before the status is written).
func TestCRD_EstablishedServes(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	c := d.apiextensionsClient(t).ApiextensionsV1().CustomResourceDefinitions()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Schemas of some size make building the kinds take a while, as
	// they do for real operators.
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := range 40 {
		props[fmt.Sprintf("field%02d", i)] = apiextensionsv1.JSONSchemaProps{Type: "object", Description: strings.Repeat("A nested block of settings. ", 5),
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"enabled": {Type: "boolean"}, "mode": {Type: "string", MaxLength: ptr[int64](8)}, "limit": {Type: "integer", Minimum: ptr(1.0)}}}
	}
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("things%d.burst.example.com", i)},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{
					Group: "burst.example.com", Scope: apiextensionsv1.NamespaceScoped,
					Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: fmt.Sprintf("things%d", i), Singular: fmt.Sprintf("thing%d", i), Kind: fmt.Sprintf("Thing%d", i)},
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
						Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema}}},
				},
			}
			_, err := c.Create(ctx, crd, metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	seen := map[string]bool{}
	for len(seen) < n {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-ctx.Done():
			t.Fatalf("%d of %d CRDs established", len(seen), n)
		}
		crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			t.Fatalf("watch event %s: %T", ev.Type, ev.Object)
		}
		if seen[crd.Name] || !established(crd) {
			continue
		}
		seen[crd.Name] = true
		// Served when the event arrives.
		if res := rawGet(t, d, "/apis/burst.example.com/v1/namespaces/default/"+crd.Spec.Names.Plural); res.Status != 200 {
			t.Errorf("%s Established, but its list answers %d: %s", crd.Name, res.Status, res.Body)
		}
		wantCRDCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
		wantCRDCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionTrue, "InitialNamesAccepted", "the initial names have been accepted")
		if got, want := crd.Status.AcceptedNames, crd.Spec.Names; got.Plural != want.Plural || got.Kind != want.Kind || got.ListKind != want.Kind+"List" {
			t.Errorf("%s: acceptedNames = %+v, want the spec's %+v", crd.Name, got, want)
		}
		if got := crd.Status.StoredVersions; len(got) != 1 || got[0] != "v1" {
			t.Errorf("%s: storedVersions = %v, want [v1]", crd.Name, got)
		}
	}
}

// TestCRD_NamesConflict: a CRD of the same group asking for a kind
// another CRD holds is not accepted (NamesAccepted False, KindConflict)
// and not established; once the holder is deleted, it gets the names.
func TestCRD_NamesConflict(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	waitCRD(t, d, "crontabs.stable.example.com", established)

	second := strings.NewReplacer(
		"name: crontabs.stable.example.com", "name: crontabz.stable.example.com",
		"plural: crontabs", "plural: crontabz",
		"singular: crontab", "singular: crontabz",
		"shortNames: [ct]", "shortNames: [ctz]",
	).Replace(cronTabCRDYAML)
	d.KubectlStdin(second, "apply", "-f", "-")
	crd := waitCRD(t, d, "crontabz.stable.example.com", func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return crdCondition(crd, apiextensionsv1.NamesAccepted) != nil
	})
	// Kind and ListKind both conflict; the last check wins, as in
	// kube-apiserver.
	wantCRDCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionFalse, "ListKindConflict", `"CronTabList" is already in use`)
	wantCRDCondition(t, crd, apiextensionsv1.Established, apiextensionsv1.ConditionFalse, "NotAccepted", "not all names are accepted")
	if n := crd.Status.AcceptedNames; n.Plural != "crontabz" || n.Kind != "" || n.ListKind != "" {
		t.Errorf("acceptedNames = %+v, want the plural only", n)
	}

	d.MustKubectl("delete", "crd", "crontabs.stable.example.com")
	crd = waitCRD(t, d, "crontabz.stable.example.com", established)
	wantCRDCondition(t, crd, apiextensionsv1.NamesAccepted, apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found")
	if crd.Status.AcceptedNames.Kind != "CronTab" {
		t.Errorf("acceptedNames.kind = %q after the holder went, want CronTab", crd.Status.AcceptedNames.Kind)
	}
}

// TestCRD_DeleteFinalizer: a DELETE marks the CRD with the cleanup
// finalizer and the Terminating condition (kube-apiserver's answer is the
// marked object), and the controller then removes it; a watch sees both.
func TestCRD_DeleteFinalizer(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const name = "crontabs.stable.example.com"
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	crd := waitCRD(t, d, name, established)
	c := d.apiextensionsClient(t).ApiextensionsV1().CustomResourceDefinitions()
	w, err := c.Watch(context.Background(), metav1.ListOptions{ResourceVersion: crd.ResourceVersion, FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	res := doRaw(t, d, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name, "", "", nil)
	var marked apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(res.Body, &marked); res.Status != 200 || err != nil {
		t.Fatalf("DELETE: %d (%v) %s", res.Status, err, res.Body)
	}
	if marked.DeletionTimestamp == nil || strings.Join(marked.Finalizers, ",") != "customresourcecleanup.apiextensions.k8s.io" {
		t.Errorf("DELETE answered deletionTimestamp %v, finalizers %v; want set and the cleanup finalizer", marked.DeletionTimestamp, marked.Finalizers)
	}
	wantCRDCondition(t, &marked, apiextensionsv1.Terminating, apiextensionsv1.ConditionTrue, "InstanceDeletionPending",
		"CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")

	var reasons []string
	timeout := time.After(30 * time.Second)
	for deleted := false; !deleted; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended before the CRD was deleted")
			}
			crd, _ := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
			if crd == nil {
				t.Fatalf("watch event %s: %T", ev.Type, ev.Object)
			}
			if c := crdCondition(crd, apiextensionsv1.Terminating); c != nil && (len(reasons) == 0 || reasons[len(reasons)-1] != c.Reason) {
				reasons = append(reasons, c.Reason)
			}
			deleted = ev.Type == watch.Deleted
		case <-timeout:
			t.Fatalf("CRD not deleted after 30 s; Terminating reasons seen: %v", reasons)
		}
	}
	// The write that completes the cleanup empties the finalizers, which
	// deletes the CRD instead: as in kube-apiserver, the DELETED event
	// carries the last stored state.
	if got, want := strings.Join(reasons, ","), "InstanceDeletionPending,InstanceDeletionInProgress"; got != want {
		t.Errorf("Terminating reasons seen = %s, want %s", got, want)
	}
}

// TestCRD_StatusSurvivesRestart: after kill -9 and a restart the CRD is
// still established with its names.
func TestCRD_StatusSurvivesRestart(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	waitCRD(t, d, "crontabs.stable.example.com", established)
	d.Kill()
	d = StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	crd := waitCRD(t, d, "crontabs.stable.example.com", established)
	if crd.Status.AcceptedNames.Kind != "CronTab" {
		t.Errorf("acceptedNames after restart = %+v", crd.Status.AcceptedNames)
	}
}

// TestCRD_DeleteRemovesInstances: deleting a CRD deletes its custom
// resources in every namespace, waits for those that finalizers hold,
// and only then goes; its resource is no longer served.
func TestCRD_DeleteRemovesInstances(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const name = "crontabs.stable.example.com"
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	waitEstablished(t, d, "30s", name)
	for _, ns := range []string{"a", "b"} {
		createNamespace(t, d.Clientset(), ns)
	}
	for _, c := range []struct{ ns, name, finalizers string }{{"a", "one", ""}, {"b", "two", ""}, {"b", "held", `,"finalizers":["example.com/hold"]`}} {
		body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"` + c.name + `"` + c.finalizers + `},"spec":{"cronSpec":"* * * * */5"}}`
		if res := doRaw(t, d, "POST", "/apis/stable.example.com/v1/namespaces/"+c.ns+"/crontabs", "application/json", "", []byte(body)); res.Status != 201 {
			t.Fatalf("create %s/%s: %d %s", c.ns, c.name, res.Status, res.Body)
		}
	}
	d.MustKubectl("delete", "crd", name, "--wait=false")

	// The held instance stays, marked; the others go; the CRD waits.
	crd := waitCRD(t, d, name, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		c := crdCondition(crd, apiextensionsv1.Terminating)
		return c != nil && c.Reason == "InstanceDeletionInProgress"
	})
	if crd.DeletionTimestamp == nil {
		t.Error("CRD not marked for deletion")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		one, two := rawGetNoFatal(d, "/apis/stable.example.com/v1/namespaces/a/crontabs/one"), rawGetNoFatal(d, "/apis/stable.example.com/v1/namespaces/b/crontabs/two")
		held := rawGetNoFatal(d, "/apis/stable.example.com/v1/namespaces/b/crontabs/held")
		if one.Status == 404 && two.Status == 404 && held.Status == 200 && strings.Contains(string(held.Body), `"deletionTimestamp"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: one %d, two %d, held %d %s", one.Status, two.Status, held.Status, held.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := rawGetNoFatal(d, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name); res.Status != 200 {
		t.Fatalf("CRD gone while an instance is held: %d", res.Status)
	}

	// Releasing the last instance lets the CRD go, and its resource with it.
	if res := doRaw(t, d, "PATCH", "/apis/stable.example.com/v1/namespaces/b/crontabs/held", "application/merge-patch+json", "", []byte(`{"metadata":{"finalizers":null}}`)); res.Status != 200 {
		t.Fatalf("remove the finalizer: %d %s", res.Status, res.Body)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		crdRes := rawGetNoFatal(d, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name)
		list := rawGetNoFatal(d, "/apis/stable.example.com/v1/crontabs")
		if crdRes.Status == 404 && list.Status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: CRD %d, crontabs list %d %s", crdRes.Status, list.Status, list.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCRD_KillDuringCleanup: custom resources acknowledged before a
// kill -9 are there after the restart, served as soon as /readyz passes;
// and a CRD whose cleanup was under way when the daemon
// died finishes it after the restart.
func TestCRD_KillDuringCleanup(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const name = "crontabs.stable.example.com"
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	waitEstablished(t, d, "30s", name)
	createNamespace(t, d.Clientset(), "k")
	base := "/apis/stable.example.com/v1/namespaces/k/crontabs"
	var acked []string
	for i := range 50 {
		fin := ""
		if i == 0 {
			fin = `,"finalizers":["example.com/hold"]`
		}
		n := fmt.Sprintf("c%d", i)
		body := `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"` + n + `"` + fin + `},"spec":{"cronSpec":"* * * * */5"}}`
		if res := doRaw(t, d, "POST", base, "application/json", "", []byte(body)); res.Status == 201 {
			acked = append(acked, n)
		}
	}
	d.Kill()
	// /readyz waits until the CRDs' custom resources are served, as
	// kube-apiserver's crd-informer-synced check does: the first requests
	// after StartDaemon find every acknowledged instance.
	d = StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	for _, n := range acked {
		if res := rawGetNoFatal(d, base+"/"+n); res.Status != 200 {
			t.Fatalf("acknowledged %s right after the restart: %d %s", n, res.Status, res.Body)
		}
	}
	d.MustKubectl("wait", "--for", "condition=established", "--timeout=30s", "crd/"+name)

	// Delete the CRD: c0's finalizer holds the cleanup; die in the middle.
	d.MustKubectl("delete", "crd", name, "--wait=false")
	waitCRD(t, d, name, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		c := crdCondition(crd, apiextensionsv1.Terminating)
		return c != nil && c.Reason == "InstanceDeletionInProgress" && rawGetNoFatal(d, base+"/c1").Status == 404
	})
	d.Kill()
	d = StartDaemon(t, DaemonOptions{DataDir: d.DataDir})
	// After the restart the held instance is still served, so its
	// finalizer can be removed, and then the cleanup completes.
	if res := doRaw(t, d, "PATCH", base+"/c0", "application/merge-patch+json", "", []byte(`{"metadata":{"finalizers":null}}`)); res.Status != 200 {
		t.Fatalf("remove c0's finalizer right after the restart: %d %s", res.Status, res.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res := rawGetNoFatal(d, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+name); res.Status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CRD was not removed after the restart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := rawGetNoFatal(d, base); res.Status != 404 {
		t.Errorf("crontabs after the CRD went: %d, want 404", res.Status)
	}
}

// TestCRD_KubectlExplain: once a CRD is established, OpenAPI publishes its
// schema, and kubectl explain reads it.
func TestCRD_KubectlExplain(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	d.KubectlStdin(cronTabCRDYAML, "apply", "-f", "-")
	waitEstablished(t, d, "30s", "crontabs.stable.example.com")
	var res KubectlResult
	deadline := time.Now().Add(30 * time.Second)
	for {
		res = d.Kubectl("explain", "crontabs.spec")
		if res.ExitCode == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"GROUP:      stable.example.com", "KIND:       CronTab", "VERSION:    v1", "FIELD: spec <Object>", "cronSpec\t<string>", "replicas\t<integer>"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("kubectl explain crontabs.spec lacks %q:\n%s", want, res)
		}
	}
	// The resource goes from OpenAPI with its CRD.
	d.MustKubectl("delete", "crd", "crontabs.stable.example.com")
	deadline = time.Now().Add(30 * time.Second)
	for {
		res = d.Kubectl("explain", "crontabs")
		if res.ExitCode != 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res.ExitCode == 0 {
		t.Errorf("kubectl explain crontabs after the CRD was deleted succeeded:\n%s", res)
	}
}

// TestCRD_InvalidCABundle: a CRD whose conversion webhook has a caBundle
// without a usable certificate is accepted (names, served storage
// version) but not Established: Established is False with kube-apiserver's
// reason InvalidCABundle, until an update fixes the caBundle.
func TestCRD_InvalidCABundle(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	const name = "hooks.ca.example.org"
	crd := func(caBundle string) []byte {
		return []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},
"spec":{"group":"ca.example.org","scope":"Namespaced","names":{"plural":"hooks","kind":"Hook"},
"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://conv.example.org/convert"` + caBundle + `}}},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`)
	}
	res := doRaw(t, d, http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", "", crd(`,"caBundle":"bm90IGEgY2VydA=="`))
	if res.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.Status, res.Body)
	}
	got := waitCRD(t, d, name, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		e := crdCondition(c, apiextensionsv1.Established)
		return e != nil && e.Reason == "InvalidCABundle"
	})
	e := crdCondition(got, apiextensionsv1.Established)
	if e.Status != apiextensionsv1.ConditionFalse || e.Message != "The conversion webhook CABundle is invalid" {
		t.Errorf("Established = %+v, want False InvalidCABundle \"The conversion webhook CABundle is invalid\"", *e)
	}
	if c := crdCondition(got, apiextensionsv1.NamesAccepted); c == nil || c.Status != apiextensionsv1.ConditionTrue {
		t.Errorf("NamesAccepted = %+v, want True", c)
	}

	// Without the caBundle the CRD is established.
	replaceCRDSpec(t, d, name, crd(""))
	waitCRD(t, d, name, established)
}

// replaceCRDSpec PUTs the stored CRD name with the spec of body (a whole
// CRD in JSON), keeping its metadata and resourceVersion.
func replaceCRDSpec(t *testing.T, d *Daemon, name string, body []byte) {
	t.Helper()
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name
	var stored, next map[string]any
	if err := json.Unmarshal(rawGet(t, d, path).Body, &stored); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &next); err != nil {
		t.Fatal(err)
	}
	stored["spec"] = next["spec"]
	b, _ := json.Marshal(stored)
	if res := doRaw(t, d, http.MethodPut, path, "application/json", "", b); res.Status != http.StatusOK {
		t.Fatalf("update CRD %s: %d %s", name, res.Status, res.Body)
	}
}
