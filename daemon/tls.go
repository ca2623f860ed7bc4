package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/pki"
)

// servingTLS is the TLS side of `edgeapi serve`: the generated PKI, the
// served certificate and the client CAs.
type servingTLS struct {
	bundle *pki.Bundle
	config *tls.Config
	// customCert: --tls-cert-file is served, not the generated
	// certificate, so the kubeconfig cannot name its CA.
	customCert bool
}

// servingHosts are the names the generated serving certificate covers:
// localhost, both loopback addresses, the host name, and the listen
// address with the address clients dial for it. A listen address without
// a host (0.0.0.0, [::]) stands for every address of the machine's
// interfaces at start (link-local ones left out).
func servingHosts(listen net.Addr) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if name, err := os.Hostname(); err == nil && name != "" {
		hosts = append(hosts, name)
	}
	if tcp, ok := listen.(*net.TCPAddr); ok {
		if tcp.IP != nil && !tcp.IP.IsUnspecified() {
			hosts = append(hosts, tcp.IP.String())
		} else if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLinkLocalUnicast() {
					hosts = append(hosts, ipn.IP.String())
				}
			}
		}
	}
	if host, _, err := net.SplitHostPort(clientAddress(listen)); err == nil {
		hosts = append(hosts, host)
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// setupTLS creates or reuses the PKI under dataDir and builds the TLS
// configuration of the listener bound to listen: HTTP/2 and HTTP/1.1 by
// ALPN, the served certificate read again when it changes on disk, and
// client certificates asked for (the CAs of --client-ca-file, or the
// generated CA, are named as acceptable) and left to the authenticator to
// verify; clients without one are let in, for the authenticators that
// come after TLS.
func setupTLS(cfg serveConfig, dataDir string, listen net.Addr, log *zap.Logger) (*servingTLS, error) {
	bundle, err := pki.Ensure(filepath.Join(dataDir, pkiDirName), servingHosts(listen), time.Now())
	if err != nil {
		return nil, fmt.Errorf("set up pki: %w", err)
	}
	for _, f := range bundle.Created {
		log.Info("wrote pki file", zap.String("path", f))
	}
	st := &servingTLS{bundle: bundle}
	certPath, keyPath := bundle.Path(pki.ServingCertFile), bundle.Path(pki.ServingKeyFile)
	if cfg.TLSCertFile != "" {
		certPath, keyPath, st.customCert = cfg.TLSCertFile, cfg.TLSPrivateKeyFile, true
	}
	reloader, err := pki.NewCertReloader(certPath, keyPath, func(err error) {
		log.Warn("reload serving certificate; serving the previous one", zap.Error(err))
	})
	if err != nil {
		return nil, err
	}
	clientCAs := x509.NewCertPool()
	caPEM := bundle.CACert
	if cfg.ClientCAFile != "" {
		if caPEM, err = os.ReadFile(cfg.ClientCAFile); err != nil {
			return nil, fmt.Errorf("read client-ca-file: %w", err)
		}
	}
	if !clientCAs.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("read client CAs: no PEM certificate in %s", cmpOr(cfg.ClientCAFile, bundle.Path(pki.CACertFile)))
	}
	st.config = &tls.Config{
		MinVersion:     tlsVersions[cfg.TLSMinVersion],
		GetCertificate: reloader.GetCertificate,
		// Asked for, not verified here: the client-certificate
		// authenticator verifies it, so a certificate from another CA
		// gets kube-apiserver's 401 rather than a failed handshake, and
		// a rotated --client-ca-file applies without a restart.
		ClientAuth: tls.RequestClientCert,
		ClientCAs:  clientCAs,
		NextProtos: []string{"h2", "http/1.1"},
	}
	return st, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
