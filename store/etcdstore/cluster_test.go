//go:build etcd

package etcdstore

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
)

// clusterMember is one member of a test's three-member etcd cluster.
type clusterMember struct {
	name, url, peer, dir string
	cmd                  *exec.Cmd
	log                  bytes.Buffer
}

// etcdCluster is a three-member etcd cluster on loopback.
type etcdCluster struct {
	t       *testing.T
	bin     string
	members []*clusterMember
	initial string // --initial-cluster
}

// startCluster starts three etcd members on loopback; the test's cleanup
// kills them. The test is skipped without an etcd binary.
func startCluster(t *testing.T) *etcdCluster {
	t.Helper()
	c := &etcdCluster{t: t, bin: etcdBinary()}
	if c.bin == "" {
		t.Skip("no etcd binary: run scripts/kube-ref-build or set EDGEAPI_ETCD")
	}
	var initial []string
	for i := 0; i < 3; i++ {
		m := &clusterMember{
			name: fmt.Sprintf("m%d", i),
			url:  fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			dir:  t.TempDir(),
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peer)
	}
	c.initial = strings.Join(initial, ",")
	t.Cleanup(func() {
		for _, m := range c.members {
			m.kill()
			if t.Failed() {
				t.Logf("etcd %s log:\n%s", m.name, m.log.Bytes())
			}
		}
	})
	for _, m := range c.members {
		c.start(m)
	}
	return c
}

// urls returns the members' client URLs.
func (c *etcdCluster) urls() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.url)
	}
	return out
}

// start starts member m (again, on its data) and waits until it listens.
func (c *etcdCluster) start(m *clusterMember) {
	c.t.Helper()
	m.cmd = exec.Command(c.bin, "--name", m.name, "--data-dir", m.dir,
		"--listen-client-urls", m.url, "--advertise-client-urls", m.url,
		"--listen-peer-urls", m.peer, "--initial-advertise-peer-urls", m.peer,
		"--initial-cluster", c.initial, "--initial-cluster-state", "new",
		"--log-level", "error")
	m.cmd.Stdout, m.cmd.Stderr = &m.log, &m.log
	if err := m.cmd.Start(); err != nil {
		c.t.Fatalf("start etcd %s: %v", m.name, err)
	}
	hostPort := strings.TrimPrefix(m.url, "http://")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err := net.Dial("tcp", hostPort); err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcd %s not listening on %s", m.name, m.url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill kills the member with SIGKILL and waits for it.
func (m *clusterMember) kill() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	_ = m.cmd.Wait()
	m.cmd = nil
}

// waitCaughtUp waits until every member has applied the raft index the
// most advanced one reports now, asking through s's client.
func (c *etcdCluster) waitCaughtUp(ctx context.Context, s *Store) {
	c.t.Helper()
	var want uint64
	for _, m := range c.members {
		if st, err := s.client.Status(ctx, m.url); err == nil {
			want = max(want, st.RaftAppliedIndex)
		}
	}
	for _, m := range c.members {
		for {
			st, err := s.client.Status(ctx, m.url)
			if err == nil && st.RaftAppliedIndex >= want {
				break
			}
			if ctx.Err() != nil {
				c.t.Fatalf("etcd %s has not caught up to index %d: %v", m.name, want, ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestStore_MemberLoss runs a store on all three members of an etcd
// cluster while each member in turn is killed with SIGKILL (the others
// keep quorum) and writers go on: every write succeeds, once, and the
// subscriber sees each of them in revision order with no gap, whichever
// member the store's watch was on.
func TestStore_MemberLoss(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: c.urls()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()

	var mu sync.Mutex
	var seen []int64
	stop := s.Subscribe(func(evs []store.Event) {
		mu.Lock()
		for _, ev := range evs {
			seen = append(seen, ev.Rev())
		}
		mu.Unlock()
	})
	defer stop()

	var (
		wmu   sync.Mutex
		acked []int64
		errs  []error
	)
	write := func(w, n int) {
		obj, err := s.Create(ctx, key("ns", fmt.Sprintf("w%d-%d", w, n)), "u", cm("ns", "x", "u", "1"))
		wmu.Lock()
		defer wmu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		acked = append(acked, obj.ModRev)
	}
	for i, m := range c.members {
		m.kill()
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 10; n++ {
					write(w, i*10+n)
				}
			}()
		}
		wg.Wait()
		// Restart it, and let it catch up, before the next kill, so that
		// two members always hold every write.
		c.start(m)
		c.waitCaughtUp(ctx, s)
	}
	for _, err := range errs {
		t.Errorf("write while a member was down: %v", err)
	}
	if got, want := len(acked), 3*8*10; got != want {
		t.Errorf("%d writes acknowledged, want %d", got, want)
	}
	// Every acknowledged write reached the subscriber (writes wait for
	// the feed), in increasing revision order.
	mu.Lock()
	defer mu.Unlock()
	have := map[int64]bool{}
	for i, rev := range seen {
		if i > 0 && rev <= seen[i-1] {
			t.Errorf("event %d at revision %d after %d: out of order or doubled", i, rev, seen[i-1])
		}
		have[rev] = true
	}
	for _, rev := range acked {
		if !have[rev] {
			t.Errorf("acknowledged write at revision %d never reached the subscriber", rev)
		}
	}
	if len(seen) != len(acked) {
		t.Errorf("the subscriber saw %d events, %d writes were acknowledged", len(seen), len(acked))
	}
}
