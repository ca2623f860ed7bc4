package authn

import (
	"context"
	"errors"
	"net/http"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"

	userinfo "k8s.io/apiserver/pkg/authentication/user"
)

// PeerCred is what the kernel reports about the process at the other end
// of a Unix socket connection, as it was when that process connected.
type PeerCred struct {
	UID uint32
	// GID is the process's effective group.
	GID uint32
	// Groups are its supplementary groups (SO_PEERGROUPS), or nil when the
	// kernel does not report them (Linux before 4.13): then the user's
	// groups in the group database are used instead.
	Groups []uint32
	PID    int32
}

// peerConn is one Unix socket connection's credentials, and the user
// resolved from them on its first request.
type peerConn struct {
	cred PeerCred
	// err: the credentials could not be read; every request is refused.
	err error

	once sync.Once
	user userinfo.Info
}

// peerConnKey is the context key of a connection's *peerConn.
type peerConnKey struct{}

// WithPeerCred returns a copy of a connection's context that marks it as
// a Unix socket connection whose peer has cred. err, when not nil, says
// the credentials could not be read: PeerCredentials then refuses every
// request on the connection rather than having no opinion.
func WithPeerCred(ctx context.Context, cred PeerCred, err error) context.Context {
	return context.WithValue(ctx, peerConnKey{}, &peerConn{cred: cred, err: err})
}

// IsPeerConn reports whether ctx was marked by WithPeerCred.
func IsPeerConn(ctx context.Context) bool {
	_, ok := ctx.Value(peerConnKey{}).(*peerConn)
	return ok
}

// errNoPeerCred: a Unix socket connection whose peer credentials could not
// be read.
var errNoPeerCred = errors.New("authn: peer credentials of the unix socket connection are unknown")

// PeerCredentials authenticates the requests of a Unix socket connection
// by its peer's credentials (see WithPeerCred): the user is the peer's
// user name (its uid in decimal when it has none, or the user database
// cannot be read), its UID the uid in decimal, and its groups the names of
// the peer's effective and supplementary groups (the gid in decimal when
// a group has no name), system:masters for uid 0, and system:authenticated.
//
// Unix user and group names cannot contain ':', so none of them can be a
// system: name. They share the name space of certificate and token users:
// the Unix user alice and a certificate with CN=alice are the same user to
// RBAC.
//
// The user is resolved once per connection, on its first request.
type PeerCredentials struct {
	// UserName, GroupName and UserGroups look names and groups up; nil
	// uses os/user (the user and group databases). Tests set them.
	UserName   func(uid uint32) (string, error)
	GroupName  func(gid uint32) (string, error)
	UserGroups func(name string) ([]uint32, error)
	// Overflow, when not nil, are the ids the kernel reports for users
	// and groups outside the daemon's user namespace (see
	// DetectOverflow). They stand for every such user or group at once,
	// so a peer with the overflow uid gets 401 and the overflow gid is
	// left out of groups.
	Overflow *Overflow
}

// Overflow are the uid and gid the kernel reports, in a user namespace
// that maps only some ids (systemd's PrivateUsers=), for any id it does
// not map (/proc/sys/kernel/overflowuid and overflowgid, usually 65534).
type Overflow struct{ UID, GID uint32 }

// errUnmappedPeer: the peer's uid is the overflow uid, which stands for
// every user outside the daemon's user namespace.
var errUnmappedPeer = errors.New("authn: the unix socket peer's user is outside the daemon's user namespace")

// AuthenticateRequest implements Authenticator: no opinion on a request
// that did not come over a Unix socket connection, an error when that
// connection's credentials are unknown.
func (p *PeerCredentials) AuthenticateRequest(r *http.Request) (userinfo.Info, bool, error) {
	pc, ok := r.Context().Value(peerConnKey{}).(*peerConn)
	if !ok {
		return nil, false, nil
	}
	if pc.err != nil {
		return nil, false, errNoPeerCred
	}
	if p.Overflow != nil && pc.cred.UID == p.Overflow.UID {
		return nil, false, errUnmappedPeer
	}
	pc.once.Do(func() { pc.user = p.resolve(pc.cred) })
	return pc.user, true, nil
}

// resolve builds the user of cred.
func (p *PeerCredentials) resolve(cred PeerCred) userinfo.Info {
	uid := strconv.FormatUint(uint64(cred.UID), 10)
	name, err := p.userName(cred.UID)
	if err != nil || name == "" {
		name = uid
	}
	gids := []uint32{cred.GID}
	if cred.Groups != nil {
		gids = append(gids, cred.Groups...)
	} else if name != uid {
		if more, err := p.userGroups(name); err == nil {
			gids = append(gids, more...)
		}
	}
	groups := make([]string, 0, len(gids)+2)
	seen := make(map[uint32]bool, len(gids))
	for _, gid := range gids {
		if seen[gid] || (p.Overflow != nil && gid == p.Overflow.GID) {
			continue
		}
		seen[gid] = true
		g, err := p.groupName(gid)
		if err != nil || g == "" {
			g = strconv.FormatUint(uint64(gid), 10)
		}
		groups = append(groups, g)
	}
	if cred.UID == 0 {
		groups = append(groups, userinfo.SystemPrivilegedGroup)
	}
	groups = append(groups, userinfo.AllAuthenticated)
	return &userinfo.DefaultInfo{Name: name, UID: uid, Groups: slices.Clip(groups)}
}

func (p *PeerCredentials) userName(uid uint32) (string, error) {
	if p.UserName != nil {
		return p.UserName(uid)
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

func (p *PeerCredentials) groupName(gid uint32) (string, error) {
	if p.GroupName != nil {
		return p.GroupName(gid)
	}
	g, err := user.LookupGroupId(strconv.FormatUint(uint64(gid), 10))
	if err != nil {
		return "", err
	}
	return g.Name, nil
}

func (p *PeerCredentials) userGroups(name string) ([]uint32, error) {
	if p.UserGroups != nil {
		return p.UserGroups(name)
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	gids := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			gids = append(gids, uint32(n))
		}
	}
	return gids, nil
}

// isIdentityMap reports whether m, a /proc/<pid>/uid_map or gid_map, maps
// every id onto itself.
func isIdentityMap(m string) bool {
	return strings.Join(strings.Fields(m), " ") == "0 0 4294967295"
}
