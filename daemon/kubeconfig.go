package main

import (
	"fmt"
	"net"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// kubeconfigName names the cluster, user and context in the generated
// kubeconfig.
const kubeconfigName = "edgeapi"

// clientAddress returns the host:port a local client should dial to reach a
// listener bound to addr: an unspecified host (0.0.0.0, ::) becomes the
// loopback address of the same family.
func clientAddress(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	ip := tcp.IP
	switch {
	case ip == nil || (ip.IsUnspecified() && ip.To4() != nil):
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}

// kubeconfigCredentials are the PEM data a kubeconfig embeds: the CA that
// signed the serving certificate (nil: the system roots) and the client
// certificate and key (nil: none).
type kubeconfigCredentials struct {
	CA, Cert, Key []byte
}

// kubeconfig returns a kubeconfig for server (a URL) whose only context,
// "edgeapi", is current and uses creds. It holds a private key: write it
// with mode 0600.
func kubeconfig(server string, creds kubeconfigCredentials) ([]byte, error) {
	cfg := clientcmdv1.Config{
		Kind:       "Config",
		APIVersion: "v1",
		Clusters: []clientcmdv1.NamedCluster{{
			Name:    kubeconfigName,
			Cluster: clientcmdv1.Cluster{Server: server, CertificateAuthorityData: creds.CA},
		}},
		AuthInfos: []clientcmdv1.NamedAuthInfo{{
			Name: kubeconfigName,
			AuthInfo: clientcmdv1.AuthInfo{
				ClientCertificateData: creds.Cert,
				ClientKeyData:         creds.Key,
			},
		}},
		Contexts: []clientcmdv1.NamedContext{{
			Name:    kubeconfigName,
			Context: clientcmdv1.Context{Cluster: kubeconfigName, AuthInfo: kubeconfigName},
		}},
		CurrentContext: kubeconfigName,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return b, nil
}
