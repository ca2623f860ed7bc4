package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// This file runs etcd members for the tests that kill them: a
// three-member cluster on loopback (etcdCluster) or a single member of
// the test's own (newEtcdCluster with n=1), never the suite's shared
// etcd (e2eEtcd), which other tests use at the same time.

// requireEtcdCluster skips t unless this is an etcd run (the daemon binary
// then has the etcd backend) and an etcd binary exists.
func requireEtcdCluster(t *testing.T) string {
	t.Helper()
	if !onEtcd() {
		t.Skipf("needs the etcd backend: set %s=etcd and EDGEAPI_BIN to an edgeapi-ha build (go build -tags etcd)", envBackend)
	}
	bin, err := etcdBinary()
	if err != nil {
		t.Skipf("no etcd binary: %v", err)
	}
	return bin
}

// etcdMember is one member of an etcdCluster.
type etcdMember struct {
	name      string
	clientURL string
	peerURL   string
	dataDir   string

	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been reaped
	log    *logBuffer
}

// etcdCluster is an etcd cluster of members on loopback that a test can
// kill -9 and restart one by one.
type etcdCluster struct {
	t       *testing.T
	bin     string
	members []*etcdMember
	initial string // --initial-cluster
	token   string
}

// newEtcdCluster starts n etcd members on free loopback ports and waits
// until the cluster has a leader. The test's cleanup kills them; their
// logs go to the test log when it fails.
func newEtcdCluster(t *testing.T, bin string, n int) *etcdCluster {
	t.Helper()
	c := &etcdCluster{t: t, bin: bin, token: fmt.Sprintf("e2e-%d", time.Now().UnixNano())}
	dir := t.TempDir()
	var initial []string
	for i := 0; i < n; i++ {
		cport, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		pport, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		m := &etcdMember{
			name:      fmt.Sprintf("m%d", i),
			clientURL: "http://127.0.0.1:" + strconv.Itoa(cport),
			peerURL:   "http://127.0.0.1:" + strconv.Itoa(pport),
			dataDir:   filepath.Join(dir, fmt.Sprintf("m%d", i)),
			log:       &logBuffer{},
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL)
	}
	c.initial = strings.Join(initial, ",")
	t.Cleanup(func() {
		for _, m := range c.members {
			c.Kill(m)
			if t.Failed() {
				t.Logf("etcd member %s (%s) log:\n%s", m.name, m.clientURL, m.log.String())
			}
		}
	})
	for _, m := range c.members {
		c.Start(m)
	}
	c.WaitLeader()
	return c
}

// URLs is the members' client URLs, comma-separated, as --etcd-servers
// takes them.
func (c *etcdCluster) URLs() string {
	var urls []string
	for _, m := range c.members {
		urls = append(urls, m.clientURL)
	}
	return strings.Join(urls, ",")
}

// Start starts member m (again, on its data dir) and waits until it
// listens for clients.
func (c *etcdCluster) Start(m *etcdMember) {
	c.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		c.t.Fatalf("start etcd member %s: already running", m.name)
	}
	cmd := exec.Command(c.bin, "--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", c.initial, "--initial-cluster-state", "new",
		"--initial-cluster-token", c.token, "--log-level", "error",
		"--snapshot-count", "10000")
	cmd.Stdout, cmd.Stderr = m.log, m.log
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start etcd member %s: %v", m.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.cmd, m.exited = cmd, exited
	hostPort := strings.TrimPrefix(m.clientURL, "http://")
	deadline := time.Now().Add(eventually)
	for {
		conn, err := net.DialTimeout("tcp", hostPort, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case <-exited:
			c.t.Fatalf("etcd member %s exited at start; log:\n%s", m.name, m.log.String())
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcd member %s not listening on %s after %v", m.name, m.clientURL, eventually)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill sends member m SIGKILL and waits until it is gone; killing a
// stopped member does nothing.
func (c *etcdCluster) Kill(m *etcdMember) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	m.cmd = nil
}

// Running reports whether member m runs.
func (m *etcdMember) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil
}

// etcdStatus is what etcd's gateway answers for POST
// /v3/maintenance/status (uint64 fields are JSON strings).
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
		Revision string `json:"revision"`
	} `json:"header"`
	Leader    string `json:"leader"`
	RaftTerm  string `json:"raftTerm"`
	RaftIndex string `json:"raftIndex"`
	// RaftAppliedIndex is the index of the last entry the member applied.
	RaftAppliedIndex string `json:"raftAppliedIndex"`
}

// Status asks member m for its status through the gRPC gateway.
func (c *etcdCluster) Status(m *etcdMember) (etcdStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.clientURL+"/v3/maintenance/status", bytes.NewReader([]byte("{}")))
	if err != nil {
		return etcdStatus{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return etcdStatus{}, fmt.Errorf("status of %s: %w", m.name, err)
	}
	defer resp.Body.Close()
	var st etcdStatus
	if resp.StatusCode != http.StatusOK {
		return etcdStatus{}, fmt.Errorf("status of %s: %s", m.name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return etcdStatus{}, fmt.Errorf("status of %s: decode: %w", m.name, err)
	}
	return st, nil
}

// Leader returns the running member that reports itself leader, with the
// agreement of a majority of the members, or nil.
func (c *etcdCluster) Leader() *etcdMember {
	votes := map[string]int{}
	self := map[string]*etcdMember{}
	for _, m := range c.members {
		if !m.Running() {
			continue
		}
		st, err := c.Status(m)
		if err != nil || st.Leader == "" || st.Leader == "0" {
			continue
		}
		votes[st.Leader]++
		if st.Leader == st.Header.MemberID {
			self[st.Leader] = m
		}
	}
	for id, m := range self {
		if votes[id] > len(c.members)/2 {
			return m
		}
	}
	return nil
}

// WaitLeader waits until the cluster has a leader (see Leader) and
// returns it.
func (c *etcdCluster) WaitLeader() *etcdMember {
	c.t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		if m := c.Leader(); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("etcd cluster %s: no leader after %v", c.URLs(), eventually)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Follower returns a running member other than leader, one other than
// avoid (the member killed last) when there is one.
func (c *etcdCluster) Follower(leader, avoid *etcdMember) *etcdMember {
	var found *etcdMember
	for _, m := range c.members {
		if m != leader && m.Running() && (found == nil || found == avoid) {
			found = m
		}
	}
	if found != nil {
		return found
	}
	c.t.Fatalf("etcd cluster: no running follower")
	return nil
}

// WaitCaughtUp waits until every running member has applied at least
// the raft index the leader reports now, so that killing another member
// afterwards leaves a quorum that holds every committed write.
func (c *etcdCluster) WaitCaughtUp() {
	c.t.Helper()
	leader := c.WaitLeader()
	st, err := c.Status(leader)
	if err != nil {
		c.t.Fatalf("etcd cluster: %v", err)
	}
	want, _ := strconv.ParseUint(st.RaftIndex, 10, 64)
	deadline := time.Now().Add(eventually)
	for _, m := range c.members {
		for m.Running() {
			st, err := c.Status(m)
			idx, _ := strconv.ParseUint(st.RaftAppliedIndex, 10, 64)
			if err == nil && idx >= want {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("etcd member %s has not caught up to raft index %d after %v (at %s, %v)", m.name, want, eventually, st.RaftAppliedIndex, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// etcdDaemonArgs are the storage flags of a daemon on cluster c under
// prefix; they come after (and win over) the harness's own.
func etcdDaemonArgs(c *etcdCluster, prefix string) []string {
	return []string{"--storage-backend=etcd3", "--etcd-servers", c.URLs(), "--etcd-prefix", prefix}
}
