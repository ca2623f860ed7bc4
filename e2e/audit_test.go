package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
)

// These tests cover --audit-log-path: kube-apiserver's audit.k8s.io/v1
// events, at the Metadata level, for every write and every 401 and 403, and
// the log's rotation.

// auditTokens is a --token-auth-file with an admin (system:masters) and a
// user that no binding names.
const auditTokens = "audit-admin-token,audit-admin,1001,system:masters\naudit-nobody-token,audit-nobody,1002\n"

// startAuditDaemon starts a TLS daemon with auditTokens and the audit log
// at dir/audit.log, with the extra flags args.
func startAuditDaemon(t *testing.T, dir string, args ...string) *Daemon {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(auditTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	return StartDaemon(t, DaemonOptions{TLS: true, Args: append([]string{
		"--token-auth-file", tokens, "--audit-log-path", filepath.Join(dir, "audit.log"),
	}, args...)})
}

// tokenClient returns a client for d that trusts its CA and sends token,
// without the kubeconfig's client certificate.
func tokenClient(t *testing.T, d *Daemon, token string) *http.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(d.RESTConfig())
	cfg.BearerToken = token
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// auditCall is one request a test sends and what the audit log must say
// about it.
type auditCall struct {
	client       *http.Client
	method, path string
	body         string
	header       map[string]string
	wantCode     int
	// Not logged when wantVerb is empty.
	wantVerb, wantUser, wantImpersonated string
	wantRef                              auditv1.ObjectReference
	wantStage                            auditv1.Stage
	wantDecision                         string // authorization.k8s.io/decision, "" for none
	// auditID is the response's Audit-ID header.
	auditID string
}

// do sends c's request and records its Audit-ID.
func (c *auditCall) do(t *testing.T, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, d.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	switch c.method {
	case http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case http.MethodPost, http.MethodPut:
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != c.wantCode {
		t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, resp.StatusCode, c.wantCode, body)
	}
	c.auditID = resp.Header.Get("Audit-ID")
	if c.auditID == "" {
		t.Fatalf("%s %s: no Audit-ID header", c.method, c.path)
	}
}

// readAuditLog decodes every line of the audit log files in paths, each
// strictly into kube-apiserver's Event type.
func readAuditLog(t *testing.T, paths ...string) []auditv1.Event {
	t.Helper()
	var events []auditv1.Event
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			dec := json.NewDecoder(strings.NewReader(sc.Text()))
			dec.DisallowUnknownFields()
			var ev auditv1.Event
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("%s: line %q is not an audit.k8s.io/v1 Event: %v", path, sc.Text(), err)
			}
			events = append(events, ev)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return events
}

// TestAudit_Log: writes (create, update, patch, delete, deletecollection,
// and a refused create) are logged with the user, the verb, the object and
// the code; so are a 401 (a forged token), 403s (a user without bindings,
// and one impersonated); reads that succeed (get, list, watch) are not.
// Each event's auditID is its response's Audit-ID header, and the log is
// 0600 and holds neither bodies nor tokens.
func TestAudit_Log(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := startAuditDaemon(t, dir)
	admin := tokenClient(t, d, "audit-admin-token")
	nobody := tokenClient(t, d, "audit-nobody-token")
	forged := tokenClient(t, d, "forged-token")
	const cms = "/api/v1/namespaces/default/configmaps"
	ref := func(name string) auditv1.ObjectReference {
		return auditv1.ObjectReference{Resource: "configmaps", Namespace: "default", Name: name, APIVersion: "v1"}
	}
	calls := []*auditCall{
		{client: admin, method: "POST", path: cms, body: `{"metadata":{"name":"audited"},"data":{"k":"body-value-1"}}`, wantCode: 201,
			wantVerb: "create", wantUser: "audit-admin", wantRef: ref("audited"), wantDecision: "allow"},
		{client: admin, method: "POST", path: cms, body: `{"metadata":{"name":"audited"}}`, wantCode: 409,
			wantVerb: "create", wantUser: "audit-admin", wantRef: ref("audited"), wantDecision: "allow"},
		{client: admin, method: "PUT", path: cms + "/audited", body: `{"metadata":{"name":"audited"},"data":{"k":"body-value-2"}}`, wantCode: 200,
			wantVerb: "update", wantUser: "audit-admin", wantRef: ref("audited"), wantDecision: "allow"},
		{client: admin, method: "PATCH", path: cms + "/audited", body: `{"data":{"k":"body-value-3"}}`, wantCode: 200,
			wantVerb: "patch", wantUser: "audit-admin", wantRef: ref("audited"), wantDecision: "allow"},
		{client: admin, method: "GET", path: cms + "/audited", wantCode: 200},
		{client: admin, method: "GET", path: cms, wantCode: 200},
		{client: admin, method: "GET", path: cms + "?watch=1&timeoutSeconds=1", wantCode: 200},
		{client: admin, method: "GET", path: "/api/v1/namespaces/default/configmaps/missing", wantCode: 404},
		{client: admin, method: "DELETE", path: cms + "/audited", wantCode: 200,
			wantVerb: "delete", wantUser: "audit-admin", wantRef: ref("audited"), wantDecision: "allow"},
		{client: admin, method: "DELETE", path: cms, wantCode: 200,
			wantVerb: "deletecollection", wantUser: "audit-admin", wantRef: ref(""), wantDecision: "allow"},
		{client: nobody, method: "POST", path: cms, body: `{"metadata":{"name":"denied"}}`, wantCode: 403,
			wantVerb: "create", wantUser: "audit-nobody", wantRef: ref(""), wantDecision: "forbid"},
		{client: nobody, method: "GET", path: "/api/v1/namespaces/default/secrets", wantCode: 403,
			wantVerb: "list", wantUser: "audit-nobody", wantRef: auditv1.ObjectReference{Resource: "secrets", Namespace: "default", APIVersion: "v1"}, wantDecision: "forbid"},
		{client: admin, method: "DELETE", path: "/api/v1/namespaces/default", header: map[string]string{"Impersonate-User": "audit-nobody"}, wantCode: 403,
			wantVerb: "delete", wantUser: "audit-admin", wantImpersonated: "audit-nobody",
			wantRef: auditv1.ObjectReference{Resource: "namespaces", Namespace: "default", Name: "default", APIVersion: "v1"}, wantDecision: "forbid"},
		{client: forged, method: "GET", path: "/api/v1/namespaces", wantCode: 401,
			wantVerb: "list", wantStage: auditv1.StageResponseStarted, wantRef: auditv1.ObjectReference{Resource: "namespaces", APIVersion: "v1"}},
	}
	for _, c := range calls {
		c.do(t, d)
	}

	path := filepath.Join(dir, "audit.log")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("%s mode %v, want 0600", path, got)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"body-value", "audit-admin-token", "audit-nobody-token", "forged-token"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the audit log holds %q", secret)
		}
	}
	byID := map[string][]auditv1.Event{}
	for _, ev := range readAuditLog(t, path) {
		byID[string(ev.AuditID)] = append(byID[string(ev.AuditID)], ev)
	}
	for _, c := range calls {
		evs := byID[c.auditID]
		name := fmt.Sprintf("%s %s (%d)", c.method, c.path, c.wantCode)
		if c.wantVerb == "" {
			if len(evs) != 0 {
				t.Errorf("%s: logged %d events, want none", name, len(evs))
			}
			continue
		}
		if len(evs) != 1 {
			t.Errorf("%s: logged %d events with auditID %s, want 1", name, len(evs), c.auditID)
			continue
		}
		ev := evs[0]
		wantStage := c.wantStage
		if wantStage == "" {
			wantStage = auditv1.StageResponseComplete
		}
		impersonated := ""
		if ev.ImpersonatedUser != nil {
			impersonated = ev.ImpersonatedUser.Username
		}
		var gotRef auditv1.ObjectReference
		if ev.ObjectRef != nil {
			gotRef = *ev.ObjectRef
			gotRef.UID, gotRef.ResourceVersion = "", ""
		}
		code := int32(0)
		if ev.ResponseStatus != nil {
			code = ev.ResponseStatus.Code
		}
		got := fmt.Sprintf("%s %s %s user=%q impersonated=%q ref=%+v code=%d decision=%q", ev.Kind, ev.APIVersion, ev.Level, ev.User.Username, impersonated, gotRef, code, ev.Annotations["authorization.k8s.io/decision"])
		want := fmt.Sprintf("Event audit.k8s.io/v1 Metadata user=%q impersonated=%q ref=%+v code=%d decision=%q", c.wantUser, c.wantImpersonated, c.wantRef, c.wantCode, c.wantDecision)
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		if ev.Verb != c.wantVerb || ev.Stage != wantStage || ev.RequestURI != c.path {
			t.Errorf("%s: verb %q, stage %s, requestURI %q; want %q, %s, %q", name, ev.Verb, ev.Stage, ev.RequestURI, c.wantVerb, wantStage, c.path)
		}
		if len(ev.SourceIPs) == 0 || ev.SourceIPs[len(ev.SourceIPs)-1] != "127.0.0.1" {
			t.Errorf("%s: sourceIPs %v, want the client's 127.0.0.1 last", name, ev.SourceIPs)
		}
		if ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) {
			t.Errorf("%s: stageTimestamp %v before requestReceivedTimestamp %v", name, ev.StageTimestamp, ev.RequestReceivedTimestamp)
		}
		if c.wantCode >= 400 && (ev.ResponseStatus.Status != "Failure" || ev.ResponseStatus.Message == "") {
			t.Errorf("%s: responseStatus %+v, want the Failure Status answered", name, ev.ResponseStatus)
		}
	}
	if t.Failed() {
		t.Logf("audit log:\n%s", raw)
	}
}

// TestAudit_Rotation: with --audit-log-maxsize 1 and --audit-log-maxbackup
// 2, large events rotate the log: at most two backups stay, every file is
// 0600 and at most 1 MiB, and the files left hold the newest events, none
// missing between them.
func TestAudit_Rotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := startAuditDaemon(t, dir, "--audit-log-maxsize", "1", "--audit-log-maxbackup", "2")
	forged := tokenClient(t, d, "forged-token")
	// Each 401 logs its 200 KB URI twice (requestURI and objectRef.name):
	// about 400 KB, two to a file.
	const requests = 12
	var ids []string
	for i := range requests {
		c := &auditCall{client: forged, method: "GET", path: fmt.Sprintf("/api/v1/namespaces/default/configmaps/n%02d%s", i, strings.Repeat("x", 200<<10)), wantCode: 401}
		c.do(t, d)
		ids = append(ids, c.auditID)
	}
	files, err := filepath.Glob(filepath.Join(dir, "audit*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files) // backups by time, then audit.log
	if len(files) != 3 {
		t.Fatalf("files %v, want audit.log and 2 backups", files)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1<<20 || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v; want at most 1 MiB, 0600", filepath.Base(f), st.Size(), st.Mode().Perm())
		}
	}
	var logged []string
	for _, ev := range readAuditLog(t, files...) {
		logged = append(logged, string(ev.AuditID))
	}
	if len(logged) < 4 || len(logged) > 6 {
		t.Fatalf("%d events left in 3 files of two 400 KB events at most, want 4 to 6", len(logged))
	}
	if got, want := strings.Join(logged, " "), strings.Join(ids[requests-len(logged):], " "); got != want {
		t.Errorf("events left, oldest first:\n%s\nwant the newest %d sent:\n%s", got, len(logged), want)
	}
}

// TestAudit_Stdout: --audit-log-path - writes the events to standard
// output.
func TestAudit_Stdout(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t, DaemonOptions{Args: []string{"--audit-log-path", "-"}})
	c := &auditCall{client: d.HTTPClient(), method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"audit-stdout"}}`, wantCode: 201}
	c.do(t, d)
	// The daemon writes the event before it answers; the harness copies
	// its output from a pipe a moment later.
	want := `"auditID":"` + c.auditID + `"`
	waitFor(t, "the event in the daemon's output", func() bool { return strings.Contains(d.output.String(), want) })
}

// TestAudit_Off: without --audit-log-path nothing is audited, and
// responses carry no Audit-ID.
func TestAudit_Off(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	if r := rawGet(t, d, "/api/v1/namespaces"); r.Status != http.StatusOK || r.Header.Get("Audit-ID") != "" {
		t.Errorf("status %d, Audit-ID %q; want 200 and none", r.Status, r.Header.Get("Audit-ID"))
	}
}

// TestAudit_Watch: behind the audit filter, watches still stream, over
// plain HTTP/1.1 (where the watch takes the connection over) and over
// TLS (HTTP/2), and writes during them are logged.
func TestAudit_Watch(t *testing.T) {
	t.Parallel()
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			d := StartDaemon(t, DaemonOptions{TLS: tls, Args: []string{"--audit-log-path", filepath.Join(dir, "audit.log")}})
			cs := d.Clientset()
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			const n = 3
			for i := range n {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("watched-%d", i)}}
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatalf("watch ended after %d events, want %d", i, n)
					}
					if cm, isCM := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || !isCM || cm.Name != fmt.Sprintf("watched-%d", i) {
						t.Fatalf("event %d: %s %T, want ADDED watched-%d", i, ev.Type, ev.Object, i)
					}
				case <-ctx.Done():
					t.Fatalf("watch: %d of %d events before the timeout", i, n)
				}
			}
			var creates int
			for _, ev := range readAuditLog(t, filepath.Join(dir, "audit.log")) {
				if ev.Verb == "create" && ev.ObjectRef != nil && strings.HasPrefix(ev.ObjectRef.Name, "watched-") {
					creates++
				}
				if ev.Verb == "watch" {
					t.Errorf("the watch was logged: %+v", ev)
				}
			}
			if creates != n {
				t.Errorf("%d creates logged, want %d", creates, n)
			}
		})
	}
}
