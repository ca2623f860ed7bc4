package authn

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	userinfo "k8s.io/apiserver/pkg/authentication/user"
)

// fakeUsers is a user and group database for PeerCredentials.
type fakeUsers struct {
	users  map[uint32]string
	groups map[uint32]string
	member map[string][]uint32
	// lookups counts the calls of UserName.
	lookups int
}

func (f *fakeUsers) authenticator() *PeerCredentials {
	return &PeerCredentials{
		UserName: func(uid uint32) (string, error) {
			f.lookups++
			if n, ok := f.users[uid]; ok {
				return n, nil
			}
			return "", errors.New("unknown user")
		},
		GroupName: func(gid uint32) (string, error) {
			if n, ok := f.groups[gid]; ok {
				return n, nil
			}
			return "", errors.New("unknown group")
		},
		UserGroups: func(name string) ([]uint32, error) { return f.member[name], nil },
	}
}

func newFakeUsers() *fakeUsers {
	return &fakeUsers{
		users:  map[uint32]string{0: "root", 1000: "alice"},
		groups: map[uint32]string{0: "root", 1000: "alice", 27: "sudo", 44: "video"},
		member: map[string][]uint32{"alice": {1000, 44}, "root": {0}},
	}
}

func TestPeerCredentials_AuthenticateRequest(t *testing.T) {
	tests := []struct {
		name string
		cred PeerCred
		want *userinfo.DefaultInfo
	}{
		{
			name: "named user with the kernel's groups",
			cred: PeerCred{UID: 1000, GID: 1000, Groups: []uint32{27, 1000}},
			want: &userinfo.DefaultInfo{Name: "alice", UID: "1000", Groups: []string{"alice", "sudo", userinfo.AllAuthenticated}},
		},
		{
			name: "no supplementary groups from the kernel: the group database's",
			cred: PeerCred{UID: 1000, GID: 1000},
			want: &userinfo.DefaultInfo{Name: "alice", UID: "1000", Groups: []string{"alice", "video", userinfo.AllAuthenticated}},
		},
		{
			name: "an empty list from the kernel is no supplementary groups",
			cred: PeerCred{UID: 1000, GID: 1000, Groups: []uint32{}},
			want: &userinfo.DefaultInfo{Name: "alice", UID: "1000", Groups: []string{"alice", userinfo.AllAuthenticated}},
		},
		{
			name: "uid 0 is in system:masters",
			cred: PeerCred{UID: 0, GID: 0, Groups: []uint32{0}},
			want: &userinfo.DefaultInfo{Name: "root", UID: "0", Groups: []string{"root", userinfo.SystemPrivilegedGroup, userinfo.AllAuthenticated}},
		},
		{
			name: "a uid and gid without names are decimal",
			cred: PeerCred{UID: 4242, GID: 4243, Groups: []uint32{44}},
			want: &userinfo.DefaultInfo{Name: "4242", UID: "4242", Groups: []string{"4243", "video", userinfo.AllAuthenticated}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFakeUsers().authenticator()
			r := httptest.NewRequest("GET", "/api", nil)
			r = r.WithContext(WithPeerCred(r.Context(), tt.cred, nil))
			got, ok, err := p.AuthenticateRequest(r)
			if err != nil || !ok {
				t.Fatalf("AuthenticateRequest: ok %v, err %v; want a user", ok, err)
			}
			if got.GetName() != tt.want.Name || got.GetUID() != tt.want.UID || !slices.Equal(got.GetGroups(), tt.want.Groups) {
				t.Errorf("got user %q uid %q groups %q, want %q uid %q groups %q",
					got.GetName(), got.GetUID(), got.GetGroups(), tt.want.Name, tt.want.UID, tt.want.Groups)
			}
		})
	}
}

func TestPeerCredentials_NotPeer(t *testing.T) {
	p := newFakeUsers().authenticator()
	r := httptest.NewRequest("GET", "/api", nil)
	if u, ok, err := p.AuthenticateRequest(r); u != nil || ok || err != nil {
		t.Errorf("request without a peer: got %v, %v, %v; want no opinion", u, ok, err)
	}
}

func TestPeerCredentials_UnreadableCredentials(t *testing.T) {
	p := newFakeUsers().authenticator()
	r := httptest.NewRequest("GET", "/api", nil)
	r = r.WithContext(WithPeerCred(r.Context(), PeerCred{}, errors.New("getsockopt failed")))
	// The zero PeerCred is uid 0: it must never become root.
	if u, ok, err := p.AuthenticateRequest(r); u != nil || ok || err == nil {
		t.Errorf("got %v, %v, %v; want an error", u, ok, err)
	}
	// Nor anonymous, through the chain.
	chain := &Chain{Authenticators: Union{p}, Anonymous: true}
	if u, ok, err := chain.AuthenticateRequest(r); u != nil || ok || err == nil {
		t.Errorf("chain: got %v, %v, %v; want an error", u, ok, err)
	}
}

func TestPeerCredentials_OncePerConnection(t *testing.T) {
	users := newFakeUsers()
	p := users.authenticator()
	connCtx := WithPeerCred(context.Background(), PeerCred{UID: 1000, GID: 1000}, nil)
	for range 3 {
		r := httptest.NewRequest("GET", "/api", nil).WithContext(connCtx)
		if u, ok, err := p.AuthenticateRequest(r); !ok || err != nil || u.GetName() != "alice" {
			t.Fatalf("got %v, %v, %v; want alice", u, ok, err)
		}
	}
	if got, want := users.lookups, 1; got != want {
		t.Errorf("user lookups for 3 requests on one connection: got %d, want %d", got, want)
	}
}

func TestReadPeerCred(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_PEERCRED is read on Linux only")
	}
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	got, err := ReadPeerCred(server.(*net.UnixConn))
	if err != nil {
		t.Fatalf("ReadPeerCred: %v", err)
	}
	if got.UID != uint32(os.Geteuid()) || got.GID != uint32(os.Getegid()) || got.PID != int32(os.Getpid()) {
		t.Errorf("got uid %d gid %d pid %d, want %d %d %d", got.UID, got.GID, got.PID, os.Geteuid(), os.Getegid(), os.Getpid())
	}
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	var want []uint32
	for _, g := range groups {
		want = append(want, uint32(g))
	}
	slices.Sort(want)
	gotGroups := slices.Sorted(slices.Values(got.Groups))
	if got.Groups == nil || !slices.Equal(gotGroups, want) {
		t.Errorf("got supplementary groups %v, want %v", got.Groups, want)
	}
}

func TestPeerCredentials_Overflow(t *testing.T) {
	users := newFakeUsers()
	users.users[65534] = "nobody"
	users.groups[65534] = "nogroup"
	p := users.authenticator()
	p.Overflow = &Overflow{UID: 65534, GID: 65534}
	request := func(cred PeerCred) *http.Request {
		r := httptest.NewRequest("GET", "/api", nil)
		return r.WithContext(WithPeerCred(r.Context(), cred, nil))
	}
	// Every user outside the daemon's user namespace looks like 65534.
	if u, ok, err := p.AuthenticateRequest(request(PeerCred{UID: 65534, GID: 65534})); u != nil || ok || err == nil {
		t.Errorf("overflow uid: got %v, %v, %v; want an error", u, ok, err)
	}
	got, ok, err := p.AuthenticateRequest(request(PeerCred{UID: 1000, GID: 1000, Groups: []uint32{65534, 44}}))
	if err != nil || !ok {
		t.Fatalf("mapped uid: got %v, %v; want a user", ok, err)
	}
	if want := []string{"alice", "video", userinfo.AllAuthenticated}; !slices.Equal(got.GetGroups(), want) {
		t.Errorf("groups with the overflow gid: got %q, want %q", got.GetGroups(), want)
	}
}

func TestIsIdentityMap(t *testing.T) {
	tests := []struct {
		m    string
		want bool
	}{
		{"         0          0 4294967295\n", true},
		// systemd's PrivateUsers=: root and the service's user only.
		{"         0          0          1\n     61234      61234          1\n", false},
		{"         0     100000      65536\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := isIdentityMap(tt.m); got != tt.want {
			t.Errorf("isIdentityMap(%q) = %v, want %v", tt.m, got, tt.want)
		}
	}
}
