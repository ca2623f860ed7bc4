package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// A leader-election candidate is this test binary re-executed with these
// environment variables set; TestMain then runs runLeaderCandidate instead
// of the tests.
const (
	envLeaderCandidate  = "E2E_LEADER_CANDIDATE" // the candidate's identity
	envLeaderKubeconfig = "E2E_LEADER_KUBECONFIG"
	envLeaderNamespace  = "E2E_LEADER_NAMESPACE"
	envLeaderLease      = "E2E_LEADER_LEASE"
)

// Candidate timings, as the brief for this test asks: short, so that a
// takeover happens within seconds.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1 * time.Second
	retryPeriod   = 200 * time.Millisecond
)

// runLeaderCandidate runs client-go leader election on a LeaseLock until its
// stdin closes, then cancels with ReleaseOnCancel. It writes one line per
// transition to stdout, "WORD UNIXNANO":
//
//	LEADING  OnStartedLeading was called
//	CANCEL   stdin closed; about to cancel the context
//	LOST     the leading context ended (cancel, or a failed renewal)
//	STOPPED  OnStoppedLeading was called
func runLeaderCandidate() int {
	id := os.Getenv(envLeaderCandidate)
	var mu sync.Mutex
	say := func(word string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%s %d\n", word, time.Now().UnixNano())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(envLeaderKubeconfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		return 2
	}
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		say("CANCEL")
		cancel()
	}()
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta: metav1.ObjectMeta{
				Namespace: os.Getenv(envLeaderNamespace),
				Name:      os.Getenv(envLeaderLease),
			},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            "e2e",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				say("LEADING")
				<-ctx.Done()
				say("LOST")
			},
			OnStoppedLeading: func() { say("STOPPED") },
		},
	})
	return 0
}

// candidate is a running leader-election subprocess.
type candidate struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *logBuffer
	done   chan struct{} // closed when stdout has been read to EOF

	mu     sync.Mutex // guards events
	events []candidateEvent
}

type candidateEvent struct {
	word string
	at   time.Time
}

func (e candidateEvent) String() string { return e.word + "@" + e.at.Format(time.StampMicro) }

func startCandidate(t *testing.T, d *Daemon, id, ns, lease string) *candidate {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &candidate{id: id, stderr: &logBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(exe, "-test.run=^$")
	c.cmd.Env = append(os.Environ(),
		envLeaderCandidate+"="+id,
		envLeaderKubeconfig+"="+d.Kubeconfig,
		envLeaderNamespace+"="+ns,
		envLeaderLease+"="+lease,
	)
	c.cmd.Stderr = c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start candidate %s: %v", id, err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			word, ts, ok := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseInt(ts, 10, 64)
			if !ok || err != nil {
				continue
			}
			c.mu.Lock()
			c.events = append(c.events, candidateEvent{word, time.Unix(0, n)})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("candidate %s events: %v\nstderr:\n%s", id, c.snapshot(), c.stderr.String())
		}
	})
	return c
}

// stop closes stdin, so the candidate cancels, releases the lease if it
// holds it, and exits; it waits for that.
func (c *candidate) stop() {
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(stopTimeout):
		c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd.Wait()
}

func (c *candidate) snapshot() []candidateEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]candidateEvent(nil), c.events...)
}

func (c *candidate) has(word string) bool {
	for _, e := range c.snapshot() {
		if e.word == word {
			return true
		}
	}
	return false
}

// leaderships returns the candidate's leading intervals: from LEADING to the
// first CANCEL, LOST or STOPPED after it (or the end of the test if none).
func (c *candidate) leaderships(end time.Time) [][2]time.Time {
	var out [][2]time.Time
	var start *time.Time
	for _, e := range c.snapshot() {
		switch e.word {
		case "LEADING":
			at := e.at
			start = &at
		case "CANCEL", "LOST", "STOPPED":
			if start != nil {
				out = append(out, [2]time.Time{*start, e.at})
				start = nil
			}
		}
	}
	if start != nil {
		out = append(out, [2]time.Time{*start, end})
	}
	return out
}

// waitFor polls cond until it holds or the eventually deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", eventually, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLeaderElection_LeaseLock runs two client-go leader-election candidates
// in separate processes on one Lease and checks that there is never more
// than one leader, and that the other takes over once the leader releases.
func TestLeaderElection_LeaseLock(t *testing.T) {
	t.Parallel()
	d := StartDaemon(t)
	cs := d.Clientset()
	ctx := context.Background()
	const ns, lease = "leader-election", "e2e-lock"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	a := startCandidate(t, d, "candidate-a", ns, lease)
	b := startCandidate(t, d, "candidate-b", ns, lease)
	byID := map[string]*candidate{a.id: a, b.id: b}

	var leader, follower *candidate
	waitFor(t, "a first leader", func() bool { return a.has("LEADING") || b.has("LEADING") })
	leader, follower = a, b
	if b.has("LEADING") {
		leader, follower = b, a
	}

	// Let the leader renew through more than one lease duration: the
	// follower must not take over a lease that is being renewed.
	time.Sleep(3 * leaseDuration / 2)
	t.Run("holder", func(t *testing.T) {
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get lease: %v", err)
		}
		if got, want := deref(l.Spec.HolderIdentity), leader.id; got != want {
			t.Errorf("lease holderIdentity = %q, want %q", got, want)
		}
		if follower.has("LEADING") {
			t.Errorf("%s became leader while %s was renewing", follower.id, leader.id)
		}
	})

	leader.stop()
	waitFor(t, follower.id+" to take over after "+leader.id+" released the lease", func() bool { return follower.has("LEADING") })
	t.Run("takeover", func(t *testing.T) {
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get lease: %v", err)
		}
		if got, want := deref(l.Spec.HolderIdentity), follower.id; got != want {
			t.Errorf("lease holderIdentity = %q, want %q", got, want)
		}
		if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions < 1 {
			t.Errorf("lease leaseTransitions = %v, want >= 1", l.Spec.LeaseTransitions)
		}
	})
	follower.stop()

	t.Run("one leader at a time", func(t *testing.T) {
		type interval struct {
			id         string
			start, end time.Time
		}
		end := time.Now()
		var all []interval
		for id, c := range byID {
			for _, iv := range c.leaderships(end) {
				all = append(all, interval{id, iv[0], iv[1]})
			}
		}
		sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
		for i := 1; i < len(all); i++ {
			if prev, cur := all[i-1], all[i]; cur.start.Before(prev.end) {
				t.Errorf("%s became leader at %s while %s led until %s",
					cur.id, cur.start.Format(time.StampMicro), prev.id, prev.end.Format(time.StampMicro))
			}
		}
		if got, want := len(all), 2; got != want {
			t.Errorf("leadership intervals = %d, want %d (one per candidate): %+v", got, want, all)
		}
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
