package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
)

// A custom resource kind builds its schema's validators, structural
// schema, CEL rules and apply type converter on the first request that
// needs them (registry.CustomResourceKinds). These tests send the first
// requests of never-used kinds all at once and require the answers every
// later request gets.

// firstRequest is one request of TestCustomResource_FirstRequestsAtOnce.
type firstRequest struct {
	name        string
	method, url string
	contentType string
	body        string
}

// send makes the request without the test's helpers, which must not fail
// the test from another goroutine.
func (r firstRequest) send(base string) (httpResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, base+r.url, bytes.NewReader([]byte(r.body)))
	if err != nil {
		return httpResult{}, err
	}
	req.Header.Set("Content-Type", r.contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
}

// answer is what of a response must not depend on whether it was a kind's
// first: the status, warnings, and the body without what differs between
// objects (uid, times, resourceVersion, name).
func (r httpResult) answer(t *testing.T) string {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("answer %d %s: %v", r.Status, r.Body, err)
	}
	if md, ok := m["metadata"].(map[string]interface{}); ok {
		for _, k := range []string{"uid", "creationTimestamp", "resourceVersion", "name"} {
			delete(md, k)
		}
		if mf, ok := md["managedFields"].([]interface{}); ok {
			for _, e := range mf {
				delete(e.(map[string]interface{}), "time")
			}
		}
	}
	if d, ok := m["details"].(map[string]interface{}); ok {
		delete(d, "name")
		// The causes come in the order of a map walk in kube-openapi's
		// validator, as in kube-apiserver; the message lists them so.
		if causes, ok := d["causes"].([]interface{}); ok {
			sort.Slice(causes, func(i, j int) bool { return fmt.Sprint(causes[i]) < fmt.Sprint(causes[j]) })
			delete(m, "message")
		}
	}
	if msg, ok := m["message"].(string); ok {
		m["message"] = strings.Join(strings.Fields(msg)[2:], " ") // after `CronTab.stable.example.com "name"`
	}
	b, _ := json.Marshal(m)
	return fmt.Sprintf("%d %q %s", r.Status, r.Header.Values("Warning"), b)
}

// TestCustomResource_FirstRequestsAtOnce: the first requests to two
// never-used kinds, sent at once, are validated, defaulted, pruned,
// checked by CEL and applied exactly as the same requests sent later.
func TestCustomResource_FirstRequestsAtOnce(t *testing.T) {
	d := startCRDaemon(t)
	createNamespace(t, d.Clientset(), "cr-first")
	base := "/apis/stable.example.com/v1/namespaces/cr-first/crontabs"
	cronTab := func(spec string) string {
		return `{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"NAME"},"spec":` + spec + `}`
	}
	kinds := []firstRequest{
		{name: "valid, defaulted and pruned", method: "POST", url: base, contentType: "application/json",
			body: cronTab(`{"cronSpec":"* * * * *","image":"i","junk":1,"ports":[{"name":"a","port":1}]}`)},
		{name: "schema violations", method: "POST", url: base, contentType: "application/json",
			body: cronTab(`{"cronSpec":"never","image":"an-image-name-too-long","replicas":11}`)},
		{name: "CEL rule", method: "POST", url: base, contentType: "application/json",
			body: cronTab(`{"cronSpec":"* * * * *","replicas":2,"minReplicas":5}`)},
		{name: "strict unknown field", method: "POST", url: base + "?fieldValidation=Strict", contentType: "application/json",
			body: cronTab(`{"cronSpec":"* * * * *","junk":1}`)},
		{name: "server-side apply", method: "PATCH", url: base + "/NAME?fieldManager=first", contentType: "application/apply-patch+yaml",
			body: cronTab(`{"cronSpec":"* * * * *","ports":[{"name":"a","port":1},{"name":"b","port":2}],"tags":["x","y"]}`)},
		{name: "cluster-scoped kind", method: "POST", url: "/apis/things.example.org/v1alpha1/widgets", contentType: "application/json",
			body: `{"apiVersion":"things.example.org/v1alpha1","kind":"Widget","metadata":{"name":"NAME"},"spec":{"size":"big","junk":1}}`},
	}
	const copies = 4
	type sent struct {
		req  firstRequest
		res  httpResult
		err  error
		name string
	}
	var all []*sent
	for _, k := range kinds {
		for i := range copies {
			name := fmt.Sprintf("first-%d-%d", len(all), i)
			r := k
			r.url = strings.ReplaceAll(r.url, "NAME", name)
			r.body = strings.ReplaceAll(r.body, "NAME", name)
			all = append(all, &sent{req: r, name: name})
		}
	}
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.res, s.err = s.req.send(d.URL)
		}()
	}
	wg.Wait()

	// The same requests again, to kinds that have built everything.
	for _, s := range all {
		if s.err != nil {
			t.Fatalf("%s: %v", s.req.name, s.err)
		}
		again := s.req
		again.url = strings.ReplaceAll(again.url, s.name, s.name+"-again")
		again.body = strings.ReplaceAll(again.body, s.name, s.name+"-again")
		res, err := again.send(d.URL)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.res.answer(t), res.answer(t); got != want {
			t.Errorf("%s: first answer\n%s\nlater answer\n%s", s.req.name, got, want)
		}
	}

	// What the answers are, so that an answer wrong both times fails too.
	want := map[string][]string{
		"valid, defaulted and pruned": {`201 ["299 - \"unknown field \\\"spec.junk\\\"\""]`, `"mode":"Slow"`, `"replicas":1`, `"minReplicas":0`},
		"schema violations": {`422 `, `"field":"spec.image","message":"Too long: may not be more than 20 bytes"`,
			`"field":"spec.replicas","message":"Invalid value: 11: spec.replicas in body should be less than or equal to 10"`,
			`"field":"spec.cronSpec","message":"Invalid value: \"never\": spec.cronSpec in body should match`},
		"CEL rule":             {`422 `, `minReplicas (5) must not exceed replicas (2)`},
		"strict unknown field": {`400 `, `strict decoding error: unknown field \"spec.junk\"`},
		"server-side apply":    {`201 `, `"manager":"first","operation":"Apply"`, `"k:{\"name\":\"b\"}"`, `"v:\"y\""`},
		"cluster-scoped kind":  {`422 `, `"field":"spec.size","message":"Invalid value: \"string\": spec.size in body must be of type integer`},
	}
	for _, s := range all {
		got := s.res.answer(t)
		for _, w := range want[s.req.name] {
			if !strings.Contains(got, w) {
				t.Errorf("%s: answer %s, want it to contain %s", s.req.name, got, w)
			}
		}
		if strings.Contains(got, "junk") && s.res.Status == http.StatusCreated && strings.Contains(got, `"junk":1`) {
			t.Errorf("%s: unknown field kept: %s", s.req.name, got)
		}
	}

	// A second manager applying a field the first owns conflicts, on
	// the map list's element, as the CRD's list type says.
	res := doRaw(t, d, "PATCH", base+"/first-16-0?fieldManager=second", "application/apply-patch+yaml", "application/json",
		[]byte(strings.ReplaceAll(cronTab(`{"ports":[{"name":"b","port":3}]}`), "NAME", "first-16-0")))
	if res.Status != http.StatusConflict || !strings.Contains(string(res.Body), `.spec.ports[name=\"b\"].port`) {
		t.Errorf("conflicting apply: %d %s, want 409 on .spec.ports[name=\"b\"].port", res.Status, res.Body)
	}
}
