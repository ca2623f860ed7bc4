package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// envInformerVariant, when set, makes an informer test run one variant in
// this process: "watchlist" or "list". client-go reads its feature gates
// (KUBE_FEATURE_WatchListClient) once per process, so each variant runs in
// a child process of its own.
const envInformerVariant = "EDGEAPI_E2E_INFORMER_VARIANT"

// runInformerVariants runs body with client-go's WatchListClient feature
// on and off, each in a re-executed test process.
func runInformerVariants(t *testing.T, body func(t *testing.T, watchList bool)) {
	if v := os.Getenv(envInformerVariant); v != "" {
		want := v == "watchlist"
		if got := clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient); got != want {
			t.Fatalf("client-go WatchListClient = %v in the %s child, want %v", got, v, want)
		}
		body(t, want)
		return
	}
	edgeapi := edgeapiBin.Path(t) // resolve (or build) once, for the children
	for _, v := range []struct {
		name string
		gate string
	}{{"watchlist", "true"}, {"list", "false"}} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^"+strings.Split(t.Name(), "/")[0]+"$", "-test.v", "-test.count=1", "-test.timeout=4m")
			cmd.Env = append(os.Environ(), envInformerVariant+"="+v.name, "KUBE_FEATURE_WatchListClient="+v.gate, edgeapiBin.env+"="+edgeapi)
			cmd.Dir, _ = os.Getwd()
			out, err := cmd.CombinedOutput()
			if err != nil || !bytes.Contains(out, []byte("\nPASS\n")) {
				t.Errorf("%s with KUBE_FEATURE_WatchListClient=%s failed (%v):\n%s", t.Name(), v.gate, err, out)
			} else if testing.Verbose() {
				t.Logf("child output:\n%s", out)
			}
		})
	}
}

// reqRecord is one request a recordingTransport saw.
type reqRecord struct {
	Method string
	Query  url.Values
	Path   string
	Status int
	At     time.Time
	// saw410 is set when the response body (a watch stream) carried a 410.
	saw410 *bool
}

func (r reqRecord) watch() bool     { return r.Query.Get("watch") == "true" || r.Query.Get("watch") == "1" }
func (r reqRecord) watchList() bool { return r.watch() && r.Query.Get("sendInitialEvents") == "true" }
func (r reqRecord) String() string {
	s := fmt.Sprintf("%s %s?%s -> %d", r.Method, r.Path, r.Query.Encode(), r.Status)
	if r.saw410 != nil && *r.saw410 {
		s += " (stream carried a 410)"
	}
	return s
}

// recordingTransport records requests and can cut the connection to the
// server: while cut, requests fail as if the server refused connections
// and streams in flight are closed.
type recordingTransport struct {
	rt http.RoundTripper

	mu     sync.Mutex // guards the fields below
	log    []*reqRecord
	cut    bool
	bodies map[*recordedBody]struct{}
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	cut := rt.cut
	rt.mu.Unlock()
	if cut {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	resp, err := rt.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	rec := &reqRecord{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), Status: resp.StatusCode, At: time.Now(), saw410: new(bool)}
	b := &recordedBody{ReadCloser: resp.Body, rt: rt, rec: rec}
	resp.Body = b
	rt.mu.Lock()
	rt.log = append(rt.log, rec)
	if rt.bodies == nil {
		rt.bodies = map[*recordedBody]struct{}{}
	}
	rt.bodies[b] = struct{}{}
	rt.mu.Unlock()
	return resp, nil
}

// Cut closes every open response body and fails new requests until Resume.
func (rt *recordingTransport) Cut() {
	rt.mu.Lock()
	rt.cut = true
	bodies := rt.bodies
	rt.bodies = nil
	rt.mu.Unlock()
	for b := range bodies {
		b.ReadCloser.Close()
	}
}

func (rt *recordingTransport) Resume() {
	rt.mu.Lock()
	rt.cut = false
	rt.mu.Unlock()
}

// Log returns the requests recorded so far.
func (rt *recordingTransport) Log() []reqRecord {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]reqRecord, len(rt.log))
	for i, r := range rt.log {
		out[i] = *r
		saw := *r.saw410
		out[i].saw410 = &saw
	}
	return out
}

type recordedBody struct {
	io.ReadCloser
	rt   *recordingTransport
	rec  *reqRecord
	tail []byte // the end of what was read, to find a 410 across reads
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.tail = append(b.tail, p[:n]...)
		// JSON has the code; Protobuf (what client-go's typed clients ask
		// for) has the message as plain bytes.
		if bytes.Contains(b.tail, []byte(`"code":410`)) || bytes.Contains(b.tail, []byte("too old resource version")) {
			b.rt.mu.Lock()
			*b.rec.saw410 = true
			b.rt.mu.Unlock()
		}
		if len(b.tail) > 64 {
			b.tail = b.tail[len(b.tail)-64:]
		}
	}
	return n, err
}

func (b *recordedBody) Close() error {
	b.rt.mu.Lock()
	delete(b.rt.bodies, b)
	b.rt.mu.Unlock()
	return b.ReadCloser.Close()
}

// recordedClientset is a clientset whose requests go through a
// recordingTransport.
func recordedClientset(t *testing.T, d *Daemon) (kubernetes.Interface, *recordingTransport) {
	t.Helper()
	cfg := d.RESTConfig()
	rec := &recordingTransport{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		rec.rt = rt
		return rec
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, rec
}

// objectLine is how lister and server contents are compared: name,
// resourceVersion and data.
func cmLine(cm *corev1.ConfigMap) string {
	return fmt.Sprintf("%s@%s %v", cm.Name, cm.ResourceVersion, cm.Data)
}

func secretLine(s *corev1.Secret) string {
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, s.Data[k])
	}
	return fmt.Sprintf("%s@%s%s", s.Name, s.ResourceVersion, b.String())
}

// informerSet is the listers of one started factory.
type informerSet struct {
	name    string
	factory informers.SharedInformerFactory
	cms     cache.SharedIndexInformer
	secrets cache.SharedIndexInformer
}

func startInformers(t *testing.T, name string, cs kubernetes.Interface, ns string, withSecrets bool) *informerSet {
	t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	s := &informerSet{name: name, factory: f, cms: f.Core().V1().ConfigMaps().Informer()}
	if withSecrets {
		s.secrets = f.Core().V1().Secrets().Informer()
	}
	stop := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop) }); f.Shutdown() })
	f.Start(stop)
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informers %s: %v did not sync within %v", name, typ, eventually)
		}
	}
	return s
}

// serverState is the server's current content of ns, as lines.
func serverState(ctx context.Context, cs kubernetes.Interface, ns string, withSecrets bool) (cms, secrets []string, err error) {
	cl, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	for i := range cl.Items {
		cms = append(cms, cmLine(&cl.Items[i]))
	}
	sort.Strings(cms)
	if withSecrets {
		sl, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		for i := range sl.Items {
			secrets = append(secrets, secretLine(&sl.Items[i]))
		}
		sort.Strings(secrets)
	}
	return cms, secrets, nil
}

func (s *informerSet) state() (cms, secrets []string) {
	for _, o := range s.cms.GetStore().List() {
		cms = append(cms, cmLine(o.(*corev1.ConfigMap)))
	}
	sort.Strings(cms)
	if s.secrets != nil {
		for _, o := range s.secrets.GetStore().List() {
			secrets = append(secrets, secretLine(o.(*corev1.Secret)))
		}
		sort.Strings(secrets)
	}
	return cms, secrets
}

// waitConverged polls until every informer set holds exactly the server's
// state. The deadline is generous; it only keeps a broken server from
// hanging the test.
func waitConverged(t *testing.T, cs kubernetes.Interface, ns string, sets ...*informerSet) {
	t.Helper()
	ctx := context.Background()
	withSecrets := sets[0].secrets != nil
	deadline := time.Now().Add(eventually)
	for {
		wantCMs, wantSecrets, err := serverState(ctx, cs, ns, withSecrets)
		if err != nil {
			t.Fatalf("list the server's state: %v", err)
		}
		var diffs []string
		for _, s := range sets {
			gotCMs, gotSecrets := s.state()
			if d := lineDiff(gotCMs, wantCMs); d != "" {
				diffs = append(diffs, fmt.Sprintf("informers %s, ConfigMaps (- lister only, + server only):\n%s", s.name, d))
			}
			if d := lineDiff(gotSecrets, wantSecrets); withSecrets && d != "" {
				diffs = append(diffs, fmt.Sprintf("informers %s, Secrets (- lister only, + server only):\n%s", s.name, d))
			}
		}
		if len(diffs) == 0 {
			t.Logf("converged: %d ConfigMaps, %d Secrets", len(wantCMs), len(wantSecrets))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("informers didn't converge to the server's LIST within %v:\n%s", eventually, strings.Join(diffs, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lineDiff lists lines only in got (-) and only in want (+).
func lineDiff(got, want []string) string {
	in := map[string]int{}
	for _, l := range got {
		in[l]++
	}
	for _, l := range want {
		in[l]--
	}
	var out []string
	for l, n := range in {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("... and %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// churn runs writers goroutines, each making ops random creates, updates
// and deletes of ConfigMaps (and Secrets) named from a shared pool.
// Conflicts between writers (409, 404, AlreadyExists) are part of the game.
func churn(t *testing.T, cs kubernetes.Interface, ns string, writers, ops int, withSecrets bool, seed uint64) {
	t.Helper()
	if err := churnErr(cs, ns, writers, ops, withSecrets, seed); err != nil {
		t.Fatal(err)
	}
}

func churnErr(cs kubernetes.Interface, ns string, writers, ops int, withSecrets bool, seed uint64) error {
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; i < ops; i++ {
				name := fmt.Sprintf("obj-%02d", rng.IntN(30))
				val := fmt.Sprintf("w%d-%d", w, i)
				var err error
				if withSecrets && rng.IntN(3) == 0 {
					err = churnSecret(ctx, cs, ns, name, val, rng.IntN(4))
				} else {
					err = churnConfigMap(ctx, cs, ns, name, val, rng.IntN(4))
				}
				if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
					errc <- fmt.Errorf("writer %d op %d on %s: %w", w, i, name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// churnConfigMap: op 0 deletes, otherwise update (or create when missing).
func churnConfigMap(ctx context.Context, cs kubernetes.Interface, ns, name, val string, op int) error {
	cms := cs.CoreV1().ConfigMaps(ns)
	if op == 0 {
		return cms.Delete(ctx, name, metav1.DeleteOptions{})
	}
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": val}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm.Data = map[string]string{"v": val}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

func churnSecret(ctx context.Context, cs kubernetes.Interface, ns, name, val string, op int) error {
	ss := cs.CoreV1().Secrets(ns)
	if op == 0 {
		return ss.Delete(ctx, name, metav1.DeleteOptions{})
	}
	s, err := ss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = ss.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"v": []byte(val)}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	s.Data = map[string][]byte{"v": []byte(val)}
	_, err = ss.Update(ctx, s, metav1.UpdateOptions{})
	return err
}

// wantInitialSyncProtocol checks how the informers' reflectors loaded their
// state: with watch-list, through watches with sendInitialEvents=true and no
// LIST at all (client-go falls back to LIST when the server's watch-list
// answer is wrong); without, through LISTs.
func wantInitialSyncProtocol(t *testing.T, log []reqRecord, watchList bool) {
	t.Helper()
	var lists, watchLists int
	for _, r := range log {
		if r.Method != http.MethodGet {
			continue
		}
		switch {
		case r.watchList():
			watchLists++
		case !r.watch():
			lists++
		}
	}
	if watchList && (lists != 0 || watchLists == 0) {
		t.Errorf("with WatchListClient: %d LIST and %d watch-list requests, want only watch-list requests (a LIST means client-go fell back):\n%v", lists, watchLists, log)
	}
	if !watchList && (lists == 0 || watchLists != 0) {
		t.Errorf("without WatchListClient: %d LIST and %d watch-list requests, want only LISTs:\n%v", lists, watchLists, log)
	}
}

// TestInformer_Converges runs client-go shared informers for ConfigMaps and
// Secrets while writers churn, then checks that every informer's store ends
// up exactly equal to the server's LIST (names, resourceVersions, data).
// It runs with client-go's WatchListClient on and off.
func TestInformer_Converges(t *testing.T) {
	runInformerVariants(t, func(t *testing.T, watchList bool) {
		d := StartDaemon(t)
		cs := d.Clientset()
		const ns = "converge"
		createNamespace(t, cs, ns)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d, watch-list %v", seed, watchList)

		// Some content before the first informers start.
		churn(t, cs, ns, 2, 40, true, seed)
		ics1, rec1 := recordedClientset(t, d)
		early := startInformers(t, "started-before", ics1, ns, true)

		churned := make(chan error, 1)
		go func() { churned <- churnErr(cs, ns, 6, 150, true, seed+1) }()
		// A second factory starts in the middle of the churn.
		time.Sleep(200 * time.Millisecond)
		ics2, rec2 := recordedClientset(t, d)
		late := startInformers(t, "started-during", ics2, ns, true)
		if err := <-churned; err != nil {
			t.Fatal(err)
		}

		waitConverged(t, cs, ns, early, late)
		wantInitialSyncProtocol(t, rec1.Log(), watchList)
		wantInitialSyncProtocol(t, rec2.Log(), watchList)

		// A label-selected informer (a filtered watch) converges to the
		// filtered LIST too.
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "keep=yes" }))
		inf := f.Core().V1().ConfigMaps()
		inf.Informer() // registers it with the factory before Start
		stop := make(chan struct{})
		defer close(stop)
		f.Start(stop)
		f.WaitForCacheSync(stop)
		ctx := context.Background()
		for i := 0; i < 30; i++ {
			name := fmt.Sprintf("sel-%d", i%10)
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"keep": "yes"}}}, metav1.CreateOptions{})
			} else if err == nil {
				// Flip in and out of the selector.
				if cm.Labels["keep"] == "yes" {
					cm.Labels = map[string]string{"keep": "no"}
				} else {
					cm.Labels = map[string]string{"keep": "yes"}
				}
				_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(eventually)
		for {
			l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "keep=yes"})
			if err != nil {
				t.Fatal(err)
			}
			var want, got []string
			for i := range l.Items {
				want = append(want, cmLine(&l.Items[i]))
			}
			objs, _ := inf.Lister().List(labels.Everything())
			for _, o := range objs {
				got = append(got, cmLine(o))
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(got, "\n") == strings.Join(want, "\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("label-selected informer didn't converge:\n%s", lineDiff(got, want))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// TestInformer_RelistAfterCompaction cuts an informer off from the server
// while writes happen and the change log is compacted past the informer's
// last revision. When it reconnects, resuming from that revision gets a 410
// (in the watch stream, or on a LIST at that exact revision), the
// Reflector relists, and the informer converges to the server's state.
func TestInformer_RelistAfterCompaction(t *testing.T) {
	runInformerVariants(t, func(t *testing.T, watchList bool) {
		d := startDaemonArgs(t, "--compaction-interval", "1s")
		cs := d.Clientset()
		const ns = "relist"
		createNamespace(t, cs, ns)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d, watch-list %v", seed, watchList)
		churn(t, cs, ns, 2, 40, false, seed)

		ics, rec := recordedClientset(t, d)
		s := startInformers(t, "cut-off", ics, ns, false)
		waitConverged(t, cs, ns, s)
		// Let the watch run and settle on the latest revision.
		churn(t, cs, ns, 1, 10, false, seed+1)
		waitConverged(t, cs, ns, s)
		lastRV := s.cms.LastSyncResourceVersion()
		last := mustRV(t, lastRV)

		rec.Cut()
		churn(t, cs, ns, 4, 60, false, seed+2)
		compacted := waitCompactedPast(t, d, cs, ns, last)
		t.Logf("informer cut off at revision %d; change log compacted to %d", last, compacted)
		resumedAt := len(rec.Log())
		rec.Resume()

		waitConverged(t, cs, ns, s)
		after := rec.Log()[resumedAt:]
		var resumed *reqRecord
		for i := range after {
			if after[i].Query.Get("resourceVersion") == lastRV {
				resumed = &after[i]
				break
			}
		}
		switch {
		case resumed == nil:
			t.Errorf("after reconnecting, no request resumed from the informer's revision %s; requests:\n%v", lastRV, after)
		case resumed.watchList():
			// A watch-list from an old revision is NotOlderThan: no 410 owed.
		case resumed.watch() && !*resumed.saw410:
			t.Errorf("the watch resuming from compacted revision %s didn't carry a 410 ERROR event: %v", lastRV, *resumed)
		case !resumed.watch() && resumed.Query.Get("limit") != "" && resumed.Status != http.StatusGone:
			t.Errorf("the paged LIST at compacted revision %s (Exact, as limit without resourceVersionMatch means) answered %d, want 410: %v", lastRV, resumed.Status, *resumed)
		}
		t.Logf("requests after reconnecting:\n%v", after)
	})
}
