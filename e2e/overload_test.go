package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// burstUser is the user the overload tests impersonate: bound to
// cluster-admin but not in system:masters, whose members are served past
// the in-flight limits.
const burstUser = "burst"

// bindBurstUser makes burstUser a cluster admin.
func bindBurstUser(t *testing.T, d *Daemon) {
	t.Helper()
	_, err := d.Clientset().RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: burstUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: burstUser}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cluster role binding: %v", err)
	}
	// The RBAC index follows the store's watch, as kube-apiserver's
	// follows its informers: wait until it authorizes the user.
	deadline := time.Now().Add(eventually)
	for {
		code, _, body := burstRequest(t, d, http.MethodGet, "/api/v1/namespaces/default/configmaps?limit=1", "", true)
		if code != http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("user %s still forbidden after its binding: %s", burstUser, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slowCreate is a configmap create, as burstUser, whose body has not all
// arrived: it holds a mutating in-flight slot until finish.
type slowCreate struct {
	conn net.Conn
	rest string
}

func startSlowCreate(t *testing.T, d *Daemon, name string) *slowCreate {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}}`, name)
	c, err := net.Dial("tcp", d.Addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	head := "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: " + d.Addr +
		"\r\nImpersonate-User: " + burstUser + "\r\nContent-Type: application/json\r\nAccept: application/json\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	if _, err := io.WriteString(c, head+body[:10]); err != nil {
		t.Fatalf("write request head: %v", err)
	}
	return &slowCreate{conn: c, rest: body[10:]}
}

// finish sends the rest of the body and returns the response's status code.
func (s *slowCreate) finish(t *testing.T) int {
	t.Helper()
	if _, err := io.WriteString(s.conn, s.rest); err != nil {
		t.Fatalf("write request body: %v", err)
	}
	s.conn.SetReadDeadline(time.Now().Add(requestTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(s.conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// burstRequest sends one request as burstUser (or as system:masters when
// impersonate is false) and returns its status, headers and body.
func burstRequest(t *testing.T, d *Daemon, method, path, body string, impersonate bool) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if impersonate {
		req.Header.Set("Impersonate-User", burstUser)
	}
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// count429 is a RoundTripper that counts 429 answers and closes first429
// at the first.
type count429 struct {
	next     http.RoundTripper
	mu       sync.Mutex
	n        int
	first429 chan struct{}
}

func (c *count429) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		c.mu.Lock()
		c.n++
		if c.n == 1 {
			close(c.first429)
		}
		c.mu.Unlock()
	}
	return resp, err
}

// TestMaxInflight_TooManyRequests: with --max-mutating-requests-inflight 1
// and that slot held by a create whose body is slow, another create gets
// kube-apiserver's 429 (plain text, Retry-After: 1) while a member of
// system:masters is still served; a typed client-go create that meets the
// 429 retries by itself and succeeds once the slot is free.
func TestMaxInflight_TooManyRequests(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{Args: []string{"--max-requests-inflight", "2", "--max-mutating-requests-inflight", "1"}})
	bindBurstUser(t, d)

	// The slow create takes the slot once its head is read; a probe that
	// is served at that moment makes the slow create itself get the 429,
	// and then a new slow create is started.
	probe := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe-%d"}}`, i)
	}
	var (
		slow   *slowCreate
		code   int
		header http.Header
		body   string
		n      int
	)
	for attempt := 0; code != http.StatusTooManyRequests; attempt++ {
		if attempt == 20 {
			t.Fatalf("no 429 while the only mutating slot is held; last: %d %s", code, body)
		}
		if slow != nil {
			slow.conn.Close()
		}
		slow = startSlowCreate(t, d, fmt.Sprintf("slow-%d", attempt))
		for range 100 {
			n++
			code, header, body = burstRequest(t, d, http.MethodPost, "/api/v1/namespaces/default/configmaps", probe(n), true)
			if code == http.StatusTooManyRequests {
				break
			}
			if code != http.StatusCreated {
				t.Fatalf("probe create: %d %s, want 201 or 429", code, body)
			}
		}
	}
	if got, want := body, "Too many requests, please try again later.\n"; got != want {
		t.Errorf("429 body = %q, want %q", got, want)
	}
	if got := header.Get("Retry-After"); got != "1" {
		t.Errorf("429 Retry-After = %q, want 1", got)
	}
	if got := header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
		t.Errorf("429 Content-Type = %q, want text/plain; charset=utf-8", got)
	}
	// Reads have a limit of their own.
	if code, _, body := burstRequest(t, d, http.MethodGet, "/api/v1/namespaces/default/configmaps", "", true); code != http.StatusOK {
		t.Errorf("list while the mutating slot is held: %d %s, want 200", code, body)
	}
	// system:masters is served past the limit, as in kube-apiserver.
	if code, _, body := burstRequest(t, d, http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"masters"}}`, false); code != http.StatusCreated {
		t.Errorf("create as system:masters while the slot is held: %d %s, want 201", code, body)
	}

	cfg := d.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: burstUser}
	counter := &count429{first429: make(chan struct{})}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
		_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "typed"}}, metav1.CreateOptions{})
		created <- err
	}()
	select {
	case <-counter.first429:
	case err := <-created:
		t.Fatalf("typed create returned %v before it met a 429", err)
	}
	if got := slow.finish(t); got != http.StatusCreated {
		t.Errorf("slow create: %d, want 201", got)
	}
	if err := <-created; err != nil {
		t.Fatalf("typed create after a 429: %v, want success by client-go's retry", err)
	}
	counter.mu.Lock()
	t.Logf("typed create met %d 429s before it succeeded", counter.n)
	counter.mu.Unlock()
}

// TestMaxInflight_Burst: many concurrent clients against small in-flight
// limits each get an answer, 2xx or 429, never a 5xx or a dropped
// connection.
func TestMaxInflight_Burst(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{Args: []string{"--max-requests-inflight", "2", "--max-mutating-requests-inflight", "1"}})
	bindBurstUser(t, d)
	const clients, perClient = 24, 20
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				var code int
				var body string
				if i%2 == 0 {
					code, _, body = burstRequest(t, d, http.MethodPost, "/api/v1/namespaces/default/configmaps",
						fmt.Sprintf(`{"metadata":{"name":"c%d-%d"},"data":{"k":%q}}`, c, i, strings.Repeat("v", 4096)), true)
				} else {
					code, _, body = burstRequest(t, d, http.MethodGet, "/api/v1/namespaces/default/configmaps", "", true)
				}
				if code != http.StatusTooManyRequests && (code < 200 || code > 299) {
					t.Errorf("client %d request %d: %d %s, want 2xx or 429", c, i, code, body)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("answers by status code: %v", codes)
}

// openWatch starts a watch of configmaps as user ("" for system:masters)
// and returns its response once the headers have arrived; the test's end
// closes it.
func openWatch(t *testing.T, d *Daemon, user string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if user != "" {
		req.Header.Set("Impersonate-User", user)
	}
	resp, err := d.HTTPClient().Do(req)
	if err != nil {
		cancel()
		t.Fatalf("watch as %q: %v", user, err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp
}

// TestMaxWatches_TooManyRequests: --max-watches-per-user and --max-watches
// answer a watch past them with a 429 TooManyRequests Status naming the
// bound; system:masters counts toward the total; a closed watch frees its
// place.
func TestMaxWatches_TooManyRequests(t *testing.T) {
	d := StartDaemon(t, DaemonOptions{Args: []string{"--max-watches", "3", "--max-watches-per-user", "2"}})
	cs := d.Clientset()
	bindBurstUser(t, d)
	check := func(resp *http.Response, wantMessage string) {
		t.Helper()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("watch: %d, want 429", resp.StatusCode)
		}
		if got := resp.Header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q, want 1", got)
		}
		var st metav1.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("decode status: %v", err)
		}
		if st.Reason != metav1.StatusReasonTooManyRequests || st.Code != 429 || st.Message != wantMessage ||
			st.Details == nil || st.Details.RetryAfterSeconds != 1 {
			t.Errorf("status = %+v, details %+v; want TooManyRequests 429 %q, retryAfterSeconds 1", st, st.Details, wantMessage)
		}
	}
	first := openWatch(t, d, burstUser)
	for _, r := range []*http.Response{first, openWatch(t, d, burstUser)} {
		if r.StatusCode != http.StatusOK {
			t.Fatalf("watch within the bounds: %d, want 200", r.StatusCode)
		}
	}
	check(openWatch(t, d, burstUser), `Too many watches of user "burst": at most 2 at once, please try again later.`)
	if r := openWatch(t, d, ""); r.StatusCode != http.StatusOK {
		t.Fatalf("system:masters' first watch: %d, want 200", r.StatusCode)
	}
	check(openWatch(t, d, ""), "Too many watches: the server serves at most 3 at once, please try again later.")
	// Lists are not watches.
	if _, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list at the watch bound: %v", err)
	}

	// The server notices the closed watch by its peer check.
	first.Body.Close()
	deadline := time.Now().Add(eventually)
	for {
		r := openWatch(t, d, "")
		if r.StatusCode == http.StatusOK {
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a watch is still refused %v after one of the bound's closed: %d", eventually, r.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
