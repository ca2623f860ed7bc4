package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/pki"
)

// DefaultClientCertValidity is how long a certificate issued by
// `edgeapi kubeconfig` is valid.
const DefaultClientCertValidity = 365 * 24 * time.Hour

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runKubeconfig is `edgeapi kubeconfig`: it issues a client certificate
// for a user and groups, signed by the CA under <data-dir>/pki, and writes
// a kubeconfig that uses it, for an operator to hand to a local agent.
// RBAC then decides what the user may do. It needs to read the CA key, so
// it runs as the daemon's user (root in the package).
func runKubeconfig(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("kubeconfig", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory` (its pki/ holds the CA)")
	user := fs.String("user", "", "the user `name` (the certificate's CN)")
	var groups stringList
	fs.Var(&groups, "group", "a `group` of the user (the certificate's O); repeat for several")
	server := fs.String("server", "", "the API server `URL` (default: the server of <data-dir>/kubeconfig)")
	validity := fs.Duration("expiration", DefaultClientCertValidity, "how long the certificate is valid (`duration`, at most the CA's lifetime)")
	out := fs.String("o", "-", "write the kubeconfig to this `file` (mode 0600), or - for stdout")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi kubeconfig --user NAME [--group G]... [--data-dir DIR] [-o FILE]\n\n"+
			"Issue a client certificate for NAME in the groups G, signed by the daemon's CA, and write a\n"+
			"kubeconfig that uses it. What NAME may do is what RBAC grants it (kubectl create rolebinding\n"+
			"... --user NAME). The certificate cannot be revoked before it expires: give it a short\n"+
			"--expiration, or prefer a ServiceAccount token for agents that can renew one.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if *user == "" {
		fs.Usage()
		return usageError{errors.New("--user is required")}
	}
	if *validity <= 0 {
		return usageError{fmt.Errorf("invalid --expiration %v: must be positive", *validity)}
	}
	pkiDir := filepath.Join(*dataDir, pkiDirName)
	adminPath := filepath.Join(*dataDir, kubeconfigFileName)
	if *server == "" {
		b, err := os.ReadFile(adminPath)
		if err != nil {
			return fmt.Errorf("read the server from %s (or give --server): %w", adminPath, err)
		}
		var cfg clientcmdv1.Config
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("read the server from %s (or give --server): %w", adminPath, err)
		}
		for _, c := range cfg.Clusters {
			*server = c.Cluster.Server
		}
		if *server == "" {
			return fmt.Errorf("no server in %s: give --server", adminPath)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, pki.CACertFile))
	if err != nil {
		return fmt.Errorf("read ca certificate: %w", err)
	}
	certPEM, keyPEM, err := pki.IssueClient(pkiDir, *user, groups, *validity, time.Now())
	if err != nil {
		return err
	}
	kc, err := kubeconfig(*server, kubeconfigCredentials{CA: caPEM, Cert: certPEM, Key: keyPEM})
	if err != nil {
		return err
	}
	if *out == "-" {
		_, err := os.Stdout.Write(kc)
		return err
	}
	if err := pki.WriteFileAtomic(*out, kc, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
