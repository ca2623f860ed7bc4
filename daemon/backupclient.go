package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/store"
)

// This file is the client side of `edgeapi backup --kubeconfig` and
// `--unix-socket`: it fetches the running daemon's backupPath and writes
// it to a file. The kubeconfig is read here rather than with client-go's
// clientcmd, which would link client-go's REST client and its auth
// plugins into the daemon for one GET.

// apiTarget is where and how to reach the daemon's API: a client and the
// base URL, plus the headers each request carries.
type apiTarget struct {
	client *http.Client
	base   string
	header http.Header
}

// socketTarget reaches the daemon at the Unix socket path (its
// --unix-socket); the daemon authenticates the peer's credentials.
func socketTarget(socket string) apiTarget {
	return apiTarget{
		client: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
		}},
		base: "http://edgeapi",
	}
}

// kubeconfigTarget reaches the daemon as the kubeconfig at path says: its
// context contextName (empty: current-context), that context's cluster
// (server, CA, tls-server-name, insecure-skip-tls-verify) and user
// (client certificate and key, or a bearer token, inline or in files;
// relative file names are relative to the kubeconfig's directory, as
// kubectl reads them). Users that need an exec or auth-provider plugin,
// or a user name and password, are refused.
func kubeconfigTarget(path, contextName string) (apiTarget, error) {
	fail := func(err error) (apiTarget, error) {
		return apiTarget{}, fmt.Errorf("read kubeconfig %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return apiTarget{}, fmt.Errorf("read kubeconfig: %w", err)
	}
	var cfg clientcmdv1.Config
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return fail(err)
	}
	if contextName == "" {
		contextName = cfg.CurrentContext
	}
	if contextName == "" {
		return fail(errors.New("no current-context; name one with --context"))
	}
	var kctx *clientcmdv1.Context
	for i := range cfg.Contexts {
		if cfg.Contexts[i].Name == contextName {
			kctx = &cfg.Contexts[i].Context
		}
	}
	if kctx == nil {
		return fail(fmt.Errorf("no context %q", contextName))
	}
	var cluster *clientcmdv1.Cluster
	for i := range cfg.Clusters {
		if cfg.Clusters[i].Name == kctx.Cluster {
			cluster = &cfg.Clusters[i].Cluster
		}
	}
	if cluster == nil {
		return fail(fmt.Errorf("context %q names no cluster %q", contextName, kctx.Cluster))
	}
	user := &clientcmdv1.AuthInfo{}
	if kctx.AuthInfo != "" {
		user = nil
		for i := range cfg.AuthInfos {
			if cfg.AuthInfos[i].Name == kctx.AuthInfo {
				user = &cfg.AuthInfos[i].AuthInfo
			}
		}
		if user == nil {
			return fail(fmt.Errorf("context %q names no user %q", contextName, kctx.AuthInfo))
		}
	}
	dir := filepath.Dir(path)
	// data returns inline data, or else the named file's contents.
	data := func(inline []byte, file string) ([]byte, error) {
		if len(inline) > 0 || file == "" {
			return inline, nil
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return os.ReadFile(file)
	}

	u, err := url.Parse(cluster.Server)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fail(fmt.Errorf("cluster %q: server %q is not an http(s) URL", kctx.Cluster, cluster.Server))
	}
	tlsCfg := &tls.Config{ServerName: cluster.TLSServerName, InsecureSkipVerify: cluster.InsecureSkipTLSVerify} //nolint:gosec // as the kubeconfig asks
	ca, err := data(cluster.CertificateAuthorityData, cluster.CertificateAuthority)
	if err != nil {
		return fail(fmt.Errorf("cluster %q: certificate authority: %w", kctx.Cluster, err))
	}
	if len(ca) > 0 {
		tlsCfg.RootCAs = x509.NewCertPool()
		if !tlsCfg.RootCAs.AppendCertsFromPEM(ca) {
			return fail(fmt.Errorf("cluster %q: no PEM certificate in its certificate authority", kctx.Cluster))
		}
	}

	switch {
	case user.Exec != nil, user.AuthProvider != nil:
		return fail(fmt.Errorf("user %q: exec and auth-provider plugins are not supported; use a client certificate or a token", kctx.AuthInfo))
	case user.Username != "" || user.Password != "":
		return fail(fmt.Errorf("user %q: basic authentication is not supported; use a client certificate or a token", kctx.AuthInfo))
	}
	cert, err := data(user.ClientCertificateData, user.ClientCertificate)
	if err != nil {
		return fail(fmt.Errorf("user %q: client certificate: %w", kctx.AuthInfo, err))
	}
	key, err := data(user.ClientKeyData, user.ClientKey)
	if err != nil {
		return fail(fmt.Errorf("user %q: client key: %w", kctx.AuthInfo, err))
	}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return fail(fmt.Errorf("user %q: client certificate: %w", kctx.AuthInfo, err))
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	header := http.Header{}
	token := user.Token
	if token == "" && user.TokenFile != "" {
		b, err := data(nil, user.TokenFile)
		if err != nil {
			return fail(fmt.Errorf("user %q: token file: %w", kctx.AuthInfo, err))
		}
		token = strings.TrimSpace(string(b))
	}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	if user.Impersonate != "" {
		header.Set("Impersonate-User", user.Impersonate)
		for _, g := range user.ImpersonateGroups {
			header.Add("Impersonate-Group", g)
		}
	}
	return apiTarget{
		client: &http.Client{Transport: &http.Transport{
			Proxy:           http.ProxyFromEnvironment,
			TLSClientConfig: tlsCfg,
			// HTTP/1.1: the one request is a bulk download, for which
			// HTTP/2's framing and flow control cost the daemon and this
			// client about a third more CPU (measured: 2.2–2.4 against
			// 3.3–3.9 s of the daemon's for a 1 GB copy).
		}},
		base:   strings.TrimSuffix(u.String(), "/"),
		header: header,
	}, nil
}

// fetchBackup gets backupPath from the daemon at target and writes it to
// the new file to as the daemon's own backups are written
// (store.BackupFile: paced, through to.partial, synced, renamed), checked
// against the Content-Length, at most maxRate bytes a second (0: no
// bound; the daemon's copy then goes no faster). It returns the copy's
// revision and size.
// An answer other than 200 is an error that quotes the daemon's Status
// message (403 for a user RBAC does not let get backupPath).
func fetchBackup(ctx context.Context, target apiTarget, to string, maxRate int64) (rev, size int64, err error) {
	out, err := store.CreateBackupFile(to, maxRate)
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.base+backupPath, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("back up: %w", err)
	}
	for k, v := range target.header {
		req.Header[k] = v
	}
	resp, err := target.client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("back up: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, 0, &backupStatusError{status: resp.Status, msg: statusMessage(msg)}
	}
	rev, _ = strconv.ParseInt(resp.Header.Get("X-Edgeapi-Revision"), 10, 64)
	w, err := out.Start(rev, resp.ContentLength)
	if err == nil {
		bw := bufio.NewWriterSize(w, copyBuffer)
		size, err = io.Copy(bw, resp.Body)
		if err == nil {
			err = bw.Flush()
		}
	}
	if err == nil && resp.ContentLength >= 0 && size != resp.ContentLength {
		err = fmt.Errorf("got %d of %d bytes", size, resp.ContentLength)
	}
	if err != nil {
		err = fmt.Errorf("back up: %w", err)
	}
	if err := out.Finish(err); err != nil {
		return 0, 0, err
	}
	return rev, size, nil
}

// copyBuffer is how much fetchBackup gathers from the response before
// it writes to the file: the response comes in pieces of a TLS record or
// less, each a write of its own without it.
const copyBuffer = 1 << 20

// backupStatusError is fetchBackup's error for an answer other than 200.
type backupStatusError struct{ status, msg string }

func (e *backupStatusError) Error() string { return "back up: " + e.status + ": " + e.msg }

// statusMessage returns the message of a metav1.Status body, or the body
// itself.
func statusMessage(body []byte) string {
	var st struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	}
	if yaml.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return st.Message
	}
	return strings.TrimSpace(string(body))
}
