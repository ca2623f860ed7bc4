package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/edgeapi/edgeapi/audit"
	"github.com/edgeapi/edgeapi/auth/serviceaccount"
	"github.com/edgeapi/edgeapi/httpapi"
	"github.com/edgeapi/edgeapi/registry"
)

// Defaults for `edgeapi serve`. The packaged systemd unit overrides
// --data-dir with /var/lib/edgeapi and reads /etc/edgeapi/config.yaml.
const (
	// DefaultDataDir holds the database and the generated kubeconfig;
	// relative paths are relative to the working directory.
	DefaultDataDir = "data"
	// DefaultListen is the HTTPS listen address: loopback only, on
	// kube-apiserver's usual port.
	DefaultListen = "127.0.0.1:6443"
	// DefaultHTTP2MaxStreams bounds the concurrent streams (requests and
	// watches) of one HTTP/2 connection.
	DefaultHTTP2MaxStreams = 1000
	// DefaultTLSMinVersion is kube-apiserver's default --tls-min-version.
	DefaultTLSMinVersion = "VersionTLS12"
	// DefaultLogLevel is one of debug, info, warn, error.
	DefaultLogLevel = "info"
	// DefaultLogFormat is one of auto, console, json; auto picks console
	// when stderr is a terminal and JSON otherwise (e.g. under journald).
	DefaultLogFormat = "auto"
	// DefaultEventTTL is how long Events live, like kube-apiserver's
	// --event-ttl.
	DefaultEventTTL = time.Hour
	// DefaultCompactionInterval is how often the change log is compacted,
	// like kube-apiserver's --etcd-compaction-interval.
	DefaultCompactionInterval = 5 * time.Minute
	// DefaultCompactionMaxRows is the change-log size that has the
	// compactor run before its interval (store.DefaultMaxChangeLogRows).
	DefaultCompactionMaxRows = 100_000
	// DefaultMaxRequestBody bounds request bodies in bytes
	// (kube-apiserver's 3 MiB).
	DefaultMaxRequestBody = httpapi.DefaultMaxRequestBodyBytes
	// DefaultReadHeaderTimeout bounds how long a client may take to send
	// request headers. There is deliberately no write timeout: watches
	// stay open for many minutes.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes keep-alive connections idle this long
	// (kube-apiserver: 90 s).
	DefaultIdleTimeout = 90 * time.Second
	// DefaultMaxHeaderBytes bounds request headers (kube-apiserver: 1 MiB).
	DefaultMaxHeaderBytes = 1 << 20
	// DefaultRequestTimeout bounds how long a client may take to send a
	// request body, like kube-apiserver's --request-timeout (1m).
	DefaultRequestTimeout = time.Minute
	// DefaultResponseCompression compresses large responses for clients
	// on other machines only (see httpapi.CompressRemote).
	DefaultResponseCompression = "remote"
	// DefaultDiskReserve is the space set aside beside the database, given
	// up when the file system fills so that deletes can still free space.
	DefaultDiskReserve = 16 << 20
	// DefaultQuotaBackendBytes bounds the database, like etcd's
	// --quota-backend-bytes (etcd's default is 2 GiB as well).
	DefaultQuotaBackendBytes = 2 << 30
	// DefaultMemoryLimit is the memory budget of --memory-limit: it sets
	// the Go runtime's soft memory limit and sizes SQLite's caches, the
	// watch cache, the object cache and the watch bounds (see budget.go).
	// It counts the binary's resident pages and SQLite's caches too, so
	// that the RSS stays within it (README, Memory).
	DefaultMemoryLimit = 128 << 20
	// DefaultShutdownTimeout bounds the graceful part of shutdown (in-flight
	// requests); after it, connections are closed. The systemd unit's
	// TimeoutStopSec must be longer.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultServiceClusterIPRange and DefaultServiceNodePortRange are
	// kube-apiserver's --service-cluster-ip-range and
	// --service-node-port-range defaults.
	DefaultServiceClusterIPRange = registry.DefaultServiceClusterIPRange
	DefaultServiceNodePortRange  = registry.DefaultServiceNodePortRange
	// DefaultServiceAccountIssuer is the --service-account-issuer of kind
	// and k3s clusters.
	DefaultServiceAccountIssuer = serviceaccount.DefaultIssuer
)

// Names used inside the data directory.
const (
	dbFileName         = "edgeapi.db"
	kubeconfigFileName = "kubeconfig"
	// insecureKubeconfigFileName is written only with --insecure-listen:
	// a kubeconfig for the plain-HTTP listener.
	insecureKubeconfigFileName = "kubeconfig-insecure"
	// pkiDirName holds the generated CA, serving and admin certificates.
	pkiDirName = "pki"
)

// serveConfig is the configuration of `edgeapi serve`. The JSON names are
// the keys of the config file (YAML or JSON) and equal the flag names.
type serveConfig struct {
	DataDir            string   `json:"data-dir"`
	Listen             string   `json:"listen"`
	LogLevel           string   `json:"log-level"`
	LogFormat          string   `json:"log-format"`
	EventTTL           duration `json:"event-ttl"`
	CompactionInterval duration `json:"compaction-interval"`
	MaxRequestBody     byteSize `json:"max-request-body"`
	// DebugPprof, when set, is a loopback host:port serving net/http/pprof
	// for profiling; empty (the default) serves nothing.
	DebugPprof string `json:"debug-pprof"`
	// RequestTimeout bounds the time a client may take to send a request
	// body.
	RequestTimeout duration `json:"request-timeout"`
	// ResponseCompression is which clients that ask for gzip get
	// responses over 128 KiB compressed: "remote" (those not on loopback
	// or the Unix socket), "all" (kube-apiserver's behaviour) or "off".
	ResponseCompression string `json:"response-compression"`
	// MaxRequestsInflight bounds the GET and HEAD requests served at once,
	// watches aside; 0 is no bound.
	MaxRequestsInflight int `json:"max-requests-inflight"`
	// MaxMutatingRequestsInflight bounds the other requests served at
	// once; 0 is no bound.
	MaxMutatingRequestsInflight int `json:"max-mutating-requests-inflight"`
	// MaxWatches bounds the watches served at once; 0 is no bound.
	MaxWatches int `json:"max-watches"`
	// MaxWatchesPerUser bounds the watches of one user served at once; 0
	// is no bound.
	MaxWatchesPerUser int `json:"max-watches-per-user"`
	// InsecureAllowPublicListen accepts a Listen address that is not
	// loopback. The API is plain HTTP without authentication, so anyone
	// who can reach such an address can read and change every object.
	InsecureAllowPublicListen bool `json:"insecure-allow-public-listen"`
	// DiskReserve is the size of the space reserve beside the database
	// (0 keeps none).
	DiskReserve byteSize `json:"disk-reserve"`
	// CompactionMaxRows is the change-log size, in rows, past which the
	// compactor runs without waiting for the interval (0: no bound).
	CompactionMaxRows int64 `json:"compaction-max-rows"`
	// QuotaBackendBytes bounds the database's pages in use: past it,
	// creates and updates are refused (0: no quota).
	QuotaBackendBytes byteSize `json:"quota-backend-bytes"`
	// EncryptionProviderConfig is kube-apiserver's EncryptionConfiguration
	// file: the resources (Secrets, usually) whose stored values are
	// encrypted, and the providers and keys (empty: none encrypted).
	EncryptionProviderConfig string `json:"encryption-provider-config"`
	// StorageBackend is where objects are stored: "sqlite" (the default,
	// one file in DataDir) or "etcd3" (an etcd v3 cluster, in builds with
	// the etcd backend: edgeapi-ha).
	StorageBackend string `json:"storage-backend"`
	// EtcdServers are the etcd client URLs, comma-separated (etcd3 only).
	EtcdServers string `json:"etcd-servers"`
	// EtcdPrefix is the prefix of every key in etcd: kube-apiserver's
	// layout under it (etcd3 only).
	EtcdPrefix string `json:"etcd-prefix"`
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connection to
	// etcd: the CA that signed etcd's serving certificate, and the client
	// certificate and key (etcd3 only).
	EtcdCAFile   string `json:"etcd-cafile"`
	EtcdCertFile string `json:"etcd-certfile"`
	EtcdKeyFile  string `json:"etcd-keyfile"`
	// EtcdCompactionInterval is how often etcd is compacted, by one
	// replica at a time (etcd3 only; kube-apiserver's flag); 0 means
	// CompactionInterval.
	EtcdCompactionInterval duration `json:"etcd-compaction-interval"`
	// MemoryLimit is the memory budget: the Go runtime's soft memory
	// limit and the sizes of the caches come from it (budget.go; 0: no
	// Go limit, caches as for DefaultMemoryLimit). The GOMEMLIMIT
	// environment variable, when set, wins for the Go limit.
	MemoryLimit byteSize `json:"memory-limit"`
	// budget is budgetFor(MemoryLimit, 0), set by parseServeConfig; serve
	// sizes it again with the binary's measured pages before it opens the
	// store. Its watch bounds (which do not depend on those pages) are
	// already in MaxWatches and MaxWatchesPerUser unless a flag or the
	// file set those.
	budget memoryBudget
	// UnsafeTestingSynchronousOff runs SQLite with synchronous=OFF, which
	// loses acknowledged writes on power loss. For the power-cut test
	// only: a hidden flag, and no config-file key.
	UnsafeTestingSynchronousOff bool `json:"-"`
	// ServiceClusterIPRange is the CIDR Service cluster IPs are allocated
	// from; its first address is the default/kubernetes Service's.
	ServiceClusterIPRange string `json:"service-cluster-ip-range"`
	// ServiceNodePortRange is the "min-max" range of NodePort and
	// LoadBalancer Services' node ports.
	ServiceNodePortRange string `json:"service-node-port-range"`
	// TLSCertFile and TLSPrivateKeyFile, when set, are the serving
	// certificate and key instead of the generated ones; they are read
	// again when they change on disk.
	TLSCertFile       string `json:"tls-cert-file"`
	TLSPrivateKeyFile string `json:"tls-private-key-file"`
	// ClientCAFile, when set, holds the CAs that client certificates are
	// verified against instead of the generated CA.
	ClientCAFile string `json:"client-ca-file"`
	// TLSMinVersion is the lowest TLS version accepted, named as
	// kube-apiserver names it (VersionTLS12).
	TLSMinVersion string `json:"tls-min-version"`
	// InsecureListen, when set, is a loopback host:port that also serves
	// plain HTTP, for tests and debugging. Its requests are not
	// authenticated: they are served as system:unsecured in
	// system:masters, as kube-apiserver's old insecure port did.
	InsecureListen string `json:"insecure-listen"`
	// UnixSocket, when set, is the path of a Unix socket that also serves
	// the API (plain HTTP), authenticating each connection by its peer's
	// credentials (SO_PEERCRED).
	UnixSocket string `json:"unix-socket"`
	// ServiceAccountIssuer are the "iss" values of ServiceAccount tokens:
	// the first is written into new tokens, all are accepted.
	ServiceAccountIssuer configList `json:"service-account-issuer"`
	// ServiceAccountSigningKeyFile, when set, is the PEM private key that
	// signs ServiceAccount tokens instead of <data-dir>/pki/sa.key.
	ServiceAccountSigningKeyFile string `json:"service-account-signing-key-file"`
	// ServiceAccountKeyFile are PEM files of further public keys that
	// verify ServiceAccount tokens (keys being rotated out).
	ServiceAccountKeyFile configList `json:"service-account-key-file"`
	// ServiceAccountMaxTokenExpiration, when set, caps the lifetime of
	// the tokens TokenRequests ask for.
	ServiceAccountMaxTokenExpiration duration `json:"service-account-max-token-expiration"`
	// APIAudiences are the audiences of the API: a token must name one
	// of them (empty: the ServiceAccountIssuer values).
	APIAudiences configList `json:"api-audiences"`
	// TokenAuthFile is kube-apiserver's --token-auth-file: a CSV file of
	// static bearer tokens (token,user,uid,"group1,group2").
	TokenAuthFile string `json:"token-auth-file"`
	// AnonymousAuth serves requests without credentials as
	// system:anonymous in system:unauthenticated (kube-apiserver's
	// --anonymous-auth, default true); off, they get 401.
	AnonymousAuth bool `json:"anonymous-auth"`
	// AuthorizationMode is kube-apiserver's --authorization-mode: a
	// comma-separated list of RBAC, AlwaysAllow and AlwaysDeny, asked in
	// order until one decides.
	AuthorizationMode string `json:"authorization-mode"`
	// AuditLogPath, when set, is the audit log file ("-": standard
	// output), as kube-apiserver's --audit-log-path.
	AuditLogPath string `json:"audit-log-path"`
	// AuditLogMaxSize is the size in megabytes (MiB) at which the audit
	// log is rotated (0: never).
	AuditLogMaxSize int `json:"audit-log-maxsize"`
	// AuditLogMaxBackup is how many rotated audit logs are kept (0: all).
	AuditLogMaxBackup int `json:"audit-log-maxbackup"`
	// AuditLogMaxAge is how many days rotated audit logs are kept, by the
	// time in their names (0: forever).
	AuditLogMaxAge int `json:"audit-log-maxage"`
}

// maxAuditLogMaxSize bounds --audit-log-maxsize (1 TiB) so that its size in
// bytes cannot overflow.
const maxAuditLogMaxSize = 1 << 20

// Authorization modes (--authorization-mode).
const (
	modeRBAC        = "RBAC"
	modeAlwaysAllow = "AlwaysAllow"
	modeAlwaysDeny  = "AlwaysDeny"
	// DefaultAuthorizationMode closes the API to everyone RBAC does not
	// let in.
	DefaultAuthorizationMode = modeRBAC
)

// authorizationModes returns the modes of c.AuthorizationMode in order.
func (c *serveConfig) authorizationModes() []string {
	var modes []string
	for _, m := range strings.Split(c.AuthorizationMode, ",") {
		if m = strings.TrimSpace(m); m != "" {
			modes = append(modes, m)
		}
	}
	return modes
}

// hasAuthorizationMode reports whether mode is one of c's modes.
func (c *serveConfig) hasAuthorizationMode(mode string) bool {
	for _, m := range c.authorizationModes() {
		if m == mode {
			return true
		}
	}
	return false
}

// tlsVersions maps kube-apiserver's --tls-min-version values to Go's.
// compressionModes maps --response-compression's values to the API's.
var compressionModes = map[string]httpapi.CompressionMode{
	"remote": httpapi.CompressRemote,
	"all":    httpapi.CompressAll,
	"off":    httpapi.CompressOff,
}

var tlsVersions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10,
	"VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12,
	"VersionTLS13": tls.VersionTLS13,
}

// hiddenFlags are left out of --help: they exist for tests.
var hiddenFlags = map[string]bool{"unsafe-testing-synchronous-off": true}

func defaultServeConfig() serveConfig {
	return serveConfig{
		DataDir:                     DefaultDataDir,
		Listen:                      DefaultListen,
		LogLevel:                    DefaultLogLevel,
		LogFormat:                   DefaultLogFormat,
		EventTTL:                    duration(DefaultEventTTL),
		CompactionInterval:          duration(DefaultCompactionInterval),
		MaxRequestBody:              byteSize(DefaultMaxRequestBody),
		RequestTimeout:              duration(DefaultRequestTimeout),
		ResponseCompression:         DefaultResponseCompression,
		MaxRequestsInflight:         DefaultMaxRequestsInflight,
		MaxMutatingRequestsInflight: DefaultMaxMutatingRequestsInflight,
		MaxWatches:                  budgetFor(DefaultMemoryLimit, 0).MaxWatches,
		MaxWatchesPerUser:           budgetFor(DefaultMemoryLimit, 0).MaxWatchesPerUser,
		DiskReserve:                 byteSize(DefaultDiskReserve),
		QuotaBackendBytes:           byteSize(DefaultQuotaBackendBytes),
		CompactionMaxRows:           DefaultCompactionMaxRows,
		StorageBackend:              DefaultStorageBackend,
		EtcdPrefix:                  DefaultEtcdPrefix,
		MemoryLimit:                 byteSize(DefaultMemoryLimit),
		ServiceClusterIPRange:       DefaultServiceClusterIPRange,
		ServiceNodePortRange:        DefaultServiceNodePortRange,
		TLSMinVersion:               DefaultTLSMinVersion,
		ServiceAccountIssuer:        configList{values: []string{DefaultServiceAccountIssuer}},
		AnonymousAuth:               true,
		AuthorizationMode:           DefaultAuthorizationMode,
		AuditLogMaxSize:             audit.DefaultMaxSizeMB,
		AuditLogMaxBackup:           audit.DefaultMaxBackups,
		AuditLogMaxAge:              audit.DefaultMaxAgeDays,
	}
}

// parseServeConfig builds the configuration from the defaults, then the
// file named by --config (if any), then the flags given in args: a flag on
// the command line always wins over the file.
func parseServeConfig(args []string, output io.Writer) (serveConfig, error) {
	cfg := defaultServeConfig()
	var configPath string

	fs := flag.NewFlagSet("edgeapi serve", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&configPath, "config", "", "read settings from this YAML or JSON `file`; flags override it")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "`directory` for the database (edgeapi.db) and the generated kubeconfig; created with mode 0700")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "`host:port` to serve HTTPS on (port 0 picks a free port)")
	fs.StringVar(&cfg.InsecureListen, "insecure-listen", cfg.InsecureListen, "also serve plain HTTP, without TLS, on this loopback `host:port` (off when empty; for tests and debugging)")
	fs.StringVar(&cfg.UnixSocket, "unix-socket", cfg.UnixSocket, "also serve the API on a Unix socket at this `path` (mode 0666; a stale socket there is replaced), authenticating each client as its Unix user and groups (SO_PEERCRED) for RBAC; off when empty")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", cfg.TLSCertFile, "serve this PEM certificate `file` (with its chain) instead of the one generated under <data-dir>/pki; read again when it changes")
	fs.StringVar(&cfg.TLSPrivateKeyFile, "tls-private-key-file", cfg.TLSPrivateKeyFile, "PEM private key `file` of --tls-cert-file")
	fs.StringVar(&cfg.ClientCAFile, "client-ca-file", cfg.ClientCAFile, "verify client certificates against the CAs in this PEM `file` instead of the generated CA")
	fs.StringVar(&cfg.TokenAuthFile, "token-auth-file", cfg.TokenAuthFile, "authenticate bearer tokens listed in this CSV `file` (token,user,uid,\"group1,group2\"), as kube-apiserver does")
	fs.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", cfg.AnonymousAuth, "serve requests without credentials as system:anonymous (in system:unauthenticated), for RBAC to decide; false answers them 401")
	fs.StringVar(&cfg.AuthorizationMode, "authorization-mode", cfg.AuthorizationMode, "comma-separated `modes` that authorize requests, asked in order: RBAC, AlwaysAllow (everyone may do everything: for tests), AlwaysDeny")
	fs.StringVar(&cfg.AuditLogPath, "audit-log-path", cfg.AuditLogPath, "write kube-apiserver's audit events (audit.k8s.io/v1, level Metadata) to this `file`, created 0600, or to standard output with -: every create, update, patch, delete and deletecollection, and every request answered 401 or 403 (off when empty)")
	fs.IntVar(&cfg.AuditLogMaxSize, "audit-log-maxsize", cfg.AuditLogMaxSize, "rotate the audit log when it reaches this size in `megabytes` (0: never)")
	fs.IntVar(&cfg.AuditLogMaxBackup, "audit-log-maxbackup", cfg.AuditLogMaxBackup, "keep this `number` of rotated audit logs (0: all)")
	fs.IntVar(&cfg.AuditLogMaxAge, "audit-log-maxage", cfg.AuditLogMaxAge, "remove rotated audit logs older than this many `days`, by the time in their names (0: never)")
	fs.StringVar(&cfg.TLSMinVersion, "tls-min-version", cfg.TLSMinVersion, "lowest TLS `version` accepted: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13")
	fs.Var(&cfg.ServiceAccountIssuer, "service-account-issuer", "`URL` of the issuer of ServiceAccount tokens, repeatable: the first goes into new tokens, every one is accepted")
	fs.StringVar(&cfg.ServiceAccountSigningKeyFile, "service-account-signing-key-file", cfg.ServiceAccountSigningKeyFile, "sign ServiceAccount tokens with the PEM private key (ECDSA or RSA) in this `file` instead of the one generated as <data-dir>/pki/sa.key")
	fs.Var(&cfg.ServiceAccountKeyFile, "service-account-key-file", "also accept ServiceAccount tokens signed by the PEM keys in this `file`, repeatable (for key rotation)")
	fs.Var(&cfg.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", "cap the lifetime of requested ServiceAccount tokens at this `duration` (1h to 2^32 s; 0: no cap)")
	fs.Var(&cfg.APIAudiences, "api-audiences", "`audiences` of the API, comma-separated: ServiceAccount tokens must name one, and name them all by default (default: the service account issuers)")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "log `level`: debug, info, warn or error (debug logs every request)")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "log `format`: auto, console or json (auto: console on a terminal, json otherwise)")
	fs.Var(&cfg.EventTTL, "event-ttl", "keep Events for this `duration` (e.g. 1h, 90m)")
	fs.Var(&cfg.CompactionInterval, "compaction-interval", "compact the change log at this `interval` (e.g. 5m)")
	fs.Var(&cfg.MaxRequestBody, "max-request-body", "reject request bodies larger than this `size` in bytes (e.g. 3145728 or 3Mi)")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", cfg.MaxRequestsInflight, "answer 429 to GET and HEAD requests, watches aside, past this `number` served at once; 0 is no limit")
	fs.IntVar(&cfg.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", cfg.MaxMutatingRequestsInflight, "answer 429 to other requests past this `number` served at once; 0 is no limit")
	fs.IntVar(&cfg.MaxWatches, "max-watches", cfg.MaxWatches, "answer 429 to watches past this `number` served at once; 0 is no limit; unless set, --memory-limit / 128Ki")
	fs.IntVar(&cfg.MaxWatchesPerUser, "max-watches-per-user", cfg.MaxWatchesPerUser, "answer 429 to a user's watches past this `number` of theirs served at once; 0 is no limit; unless set, --memory-limit / 256Ki")
	fs.StringVar(&cfg.ResponseCompression, "response-compression", cfg.ResponseCompression, "gzip responses over 128 KiB for clients that ask (client-go and kubectl do) when they are: `remote` (not on loopback or the Unix socket), all (as kube-apiserver), or off")
	fs.Var(&cfg.RequestTimeout, "request-timeout", "fail a request whose body has not arrived within this `duration` with 504 Timeout (e.g. 1m)")
	fs.Var(&cfg.MemoryLimit, "memory-limit", "memory budget: sets the Go runtime's soft memory limit and sizes SQLite's page caches, the watch cache, the object cache and the watch bounds from it (at least 32Mi; 0: no Go limit, caches sized as for the default; GOMEMLIMIT, when set, wins for the Go limit)")
	fs.Var(&cfg.DiskReserve, "disk-reserve", "keep this `size` of disk space in reserve beside the database, given up when the disk fills so that deletes still work (0: none)")
	fs.Int64Var(&cfg.CompactionMaxRows, "compaction-max-rows", cfg.CompactionMaxRows, "also compact the change log, without waiting for the interval, when it passes this many `rows`, keeping the newest half (0: no bound)")
	fs.Var(&cfg.QuotaBackendBytes, "quota-backend-bytes", "refuse creates and updates with 507 once the database holds this `size` (as etcd's flag; deletes, reads and compaction go on, and writes resume when space is reclaimed; 0: no quota)")
	fs.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", cfg.EncryptionProviderConfig, "kube-apiserver's EncryptionConfiguration `file`: encrypt the named resources' stored values (identity, aesgcm, aescbc and secretbox providers; the first provider and key write, all read)")
	fs.StringVar(&cfg.StorageBackend, "storage-backend", cfg.StorageBackend, "store objects in `backend`: sqlite (one file in --data-dir) or etcd3 (the etcd v3 cluster at --etcd-servers; in the edgeapi-ha build only)")
	fs.StringVar(&cfg.EtcdServers, "etcd-servers", cfg.EtcdServers, "etcd client `URLs`, comma-separated (with --storage-backend=etcd3)")
	fs.StringVar(&cfg.EtcdPrefix, "etcd-prefix", cfg.EtcdPrefix, "`prefix` of every key in etcd, under which objects sit in kube-apiserver's layout")
	fs.StringVar(&cfg.EtcdCAFile, "etcd-cafile", cfg.EtcdCAFile, "verify etcd's serving certificate against this PEM CA `file` (etcd over https)")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-certfile", cfg.EtcdCertFile, "PEM client certificate `file` for etcd")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", cfg.EtcdKeyFile, "PEM private key `file` of --etcd-certfile")
	fs.Var(&cfg.EtcdCompactionInterval, "etcd-compaction-interval", "compact etcd at this `interval`, one replica at a time (with --storage-backend=etcd3; default: --compaction-interval)")
	fs.BoolVar(&cfg.InsecureAllowPublicListen, "insecure-allow-public-listen", cfg.InsecureAllowPublicListen, "allow a --listen address that is not loopback although --authorization-mode=AlwaysAllow lets every client do everything")
	fs.StringVar(&cfg.DebugPprof, "debug-pprof", cfg.DebugPprof, "serve net/http/pprof on this loopback `host:port` (off when empty)")
	fs.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", cfg.ServiceClusterIPRange, "allocate Service cluster IPs from this `CIDR` (IPv4 or IPv6, 2^3 to 2^20 addresses); its first address goes to the default/kubernetes Service")
	fs.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", cfg.ServiceNodePortRange, "allocate NodePort and LoadBalancer Services' node ports from this `range` (min-max, inclusive)")
	fs.BoolVar(&cfg.UnsafeTestingSynchronousOff, "unsafe-testing-synchronous-off", false, "testing only: run SQLite with synchronous=OFF, which loses acknowledged writes on power loss")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi serve [flags]\n\nServe the Kubernetes resource API over HTTPS.\n\nFlags:\n")
		printVisibleDefaults(fs)
	}
	if err := fs.Parse(args); err != nil {
		return serveConfig{}, usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return serveConfig{}, usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}

	// explicit holds the settings given as flags or in the file: the
	// memory budget does not override them.
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if configPath != "" {
		// Remember the flags given on the command line, load the file
		// over the defaults, then apply those flags again.
		given := map[string]string{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
		cfg = defaultServeConfig()
		if err := loadConfigFile(configPath, &cfg, explicit); err != nil {
			return serveConfig{}, err
		}
		for name, value := range given {
			if err := fs.Set(name, value); err != nil {
				return serveConfig{}, fmt.Errorf("set flag -%s: %w", name, err)
			}
		}
	}
	if err := cfg.validate(); err != nil {
		return serveConfig{}, err
	}
	cfg.applyBudget(explicit)
	return cfg, nil
}

// applyBudget sizes what --memory-limit sizes, leaving the settings in
// explicit as they were given.
func (c *serveConfig) applyBudget(explicit map[string]bool) {
	c.budget = budgetFor(int64(c.MemoryLimit), 0)
	if !explicit["max-watches"] {
		c.MaxWatches = c.budget.MaxWatches
	}
	if !explicit["max-watches-per-user"] {
		c.MaxWatchesPerUser = c.budget.MaxWatchesPerUser
	}
}

// printVisibleDefaults is fs.PrintDefaults without the hiddenFlags.
func printVisibleDefaults(fs *flag.FlagSet) {
	visible := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	visible.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenFlags[f.Name] {
			visible.Var(f.Value, f.Name, f.Usage)
			visible.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	visible.PrintDefaults()
}

// loadConfigFile reads a YAML or JSON config file into cfg, and adds the
// keys it sets to keys. Unknown keys are an error, so a typo doesn't
// silently fall back to a default.
func loadConfigFile(path string, cfg *serveConfig, keys map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return fmt.Errorf("parse config file %s: %w", path, err)
	}
	var set map[string]any
	if err := yaml.Unmarshal(data, &set); err != nil {
		return fmt.Errorf("parse config file %s: %w", path, err)
	}
	for k := range set {
		keys[k] = true
	}
	return nil
}

func (c *serveConfig) validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("invalid data-dir: must not be empty")
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("invalid listen address %q: %w", c.Listen, err)
	}
	modes := c.authorizationModes()
	if len(modes) == 0 {
		return fmt.Errorf("invalid authorization-mode %q: want a comma-separated list of RBAC, AlwaysAllow and AlwaysDeny", c.AuthorizationMode)
	}
	seen := map[string]bool{}
	for _, m := range modes {
		switch m {
		case modeRBAC, modeAlwaysAllow, modeAlwaysDeny:
		case "Node", "Webhook", "ABAC":
			return fmt.Errorf("invalid authorization-mode %q: %s is not supported; want RBAC, AlwaysAllow or AlwaysDeny", c.AuthorizationMode, m)
		default:
			return fmt.Errorf("invalid authorization-mode %q: unknown mode %q; want RBAC, AlwaysAllow or AlwaysDeny", c.AuthorizationMode, m)
		}
		if seen[m] {
			return fmt.Errorf("invalid authorization-mode %q: %s is listed twice", c.AuthorizationMode, m)
		}
		seen[m] = true
	}
	if !isLoopback(c.Listen) && modes[0] == modeAlwaysAllow && !c.InsecureAllowPublicListen {
		return fmt.Errorf("invalid listen address %q: not a loopback address (127.0.0.0/8, ::1, localhost), and --authorization-mode=%s lets every client read and change every object, Secrets included; "+
			"to listen there anyway, add --insecure-allow-public-listen", c.Listen, c.AuthorizationMode)
	}
	if c.InsecureListen != "" {
		if _, _, err := net.SplitHostPort(c.InsecureListen); err != nil {
			return fmt.Errorf("invalid insecure-listen address %q: %w", c.InsecureListen, err)
		}
		if !isLoopback(c.InsecureListen) {
			return fmt.Errorf("invalid insecure-listen address %q: plain HTTP is served only on a loopback address (127.0.0.0/8, ::1, localhost)", c.InsecureListen)
		}
	}
	if len(c.UnixSocket) > maxUnixSocketPath {
		return fmt.Errorf("invalid unix-socket %q: longer than %d bytes", c.UnixSocket, maxUnixSocketPath)
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		return fmt.Errorf("invalid tls-cert-file and tls-private-key-file: give both or neither")
	}
	if _, ok := tlsVersions[c.TLSMinVersion]; !ok {
		return fmt.Errorf("invalid tls-min-version %q: want VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13", c.TLSMinVersion)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("invalid log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	switch c.LogFormat {
	case "auto", "console", "json":
	default:
		return fmt.Errorf("invalid log-format %q: want auto, console or json", c.LogFormat)
	}
	if c.EventTTL <= 0 {
		return fmt.Errorf("invalid event-ttl %v: must be positive", c.EventTTL)
	}
	if c.CompactionInterval <= 0 {
		return fmt.Errorf("invalid compaction-interval %v: must be positive", c.CompactionInterval)
	}
	if err := c.validateStorage(); err != nil {
		return err
	}
	if c.MaxRequestBody <= 0 {
		return fmt.Errorf("invalid max-request-body %v: must be positive", c.MaxRequestBody)
	}
	if c.MemoryLimit < 0 || (c.MemoryLimit > 0 && c.MemoryLimit < minMemoryLimit) {
		return fmt.Errorf("invalid memory-limit %v: must be 0 or at least %d (32Mi)", c.MemoryLimit, minMemoryLimit)
	}
	if c.CompactionMaxRows < 0 {
		return fmt.Errorf("invalid compaction-max-rows %d: must not be negative", c.CompactionMaxRows)
	}
	if c.QuotaBackendBytes < 0 {
		return fmt.Errorf("invalid quota-backend-bytes %v: must not be negative", c.QuotaBackendBytes)
	}
	if c.DiskReserve < 0 {
		return fmt.Errorf("invalid disk-reserve %v: must not be negative", c.DiskReserve)
	}
	if _, ok := compressionModes[c.ResponseCompression]; !ok {
		return fmt.Errorf("invalid response-compression %q: want remote, all or off", c.ResponseCompression)
	}
	if c.RequestTimeout <= 0 {
		return fmt.Errorf("invalid request-timeout %v: must be positive", c.RequestTimeout)
	}
	if c.MaxRequestsInflight < 0 {
		return fmt.Errorf("invalid max-requests-inflight %d: must not be negative", c.MaxRequestsInflight)
	}
	if c.MaxMutatingRequestsInflight < 0 {
		return fmt.Errorf("invalid max-mutating-requests-inflight %d: must not be negative", c.MaxMutatingRequestsInflight)
	}
	if c.MaxWatches < 0 {
		return fmt.Errorf("invalid max-watches %d: must not be negative", c.MaxWatches)
	}
	if c.MaxWatchesPerUser < 0 {
		return fmt.Errorf("invalid max-watches-per-user %d: must not be negative", c.MaxWatchesPerUser)
	}
	if _, err := registry.ParseServiceClusterIPRange(c.ServiceClusterIPRange); err != nil {
		return fmt.Errorf("invalid service-cluster-ip-range: %w", err)
	}
	if _, err := registry.ParsePortRange(c.ServiceNodePortRange); err != nil {
		return fmt.Errorf("invalid service-node-port-range: %w", err)
	}
	if c.AuditLogMaxSize < 0 || c.AuditLogMaxSize > maxAuditLogMaxSize {
		return fmt.Errorf("invalid audit-log-maxsize %d: want 0 (no rotation) to %d megabytes", c.AuditLogMaxSize, maxAuditLogMaxSize)
	}
	if c.AuditLogMaxBackup < 0 {
		return fmt.Errorf("invalid audit-log-maxbackup %d: must not be negative", c.AuditLogMaxBackup)
	}
	if c.AuditLogMaxAge < 0 {
		return fmt.Errorf("invalid audit-log-maxage %d: must not be negative", c.AuditLogMaxAge)
	}
	if len(c.ServiceAccountIssuer.values) == 0 {
		return fmt.Errorf("invalid service-account-issuer: at least one is required")
	}
	for _, iss := range c.ServiceAccountIssuer.values {
		if strings.Contains(iss, ":") {
			if u, err := url.Parse(iss); err != nil || u.Scheme == "" {
				return fmt.Errorf("invalid service-account-issuer %q: not a URL", iss)
			}
		}
	}
	if m := time.Duration(c.ServiceAccountMaxTokenExpiration); m != 0 && (m < time.Hour || m > (1<<32)*time.Second) {
		return fmt.Errorf("invalid service-account-max-token-expiration %v: must be between 1 hour and 2^32 seconds", m)
	}
	if c.DebugPprof != "" && !isLoopback(c.DebugPprof) {
		return fmt.Errorf("invalid debug-pprof %q: must be a loopback host:port (127.0.0.1, ::1, localhost)", c.DebugPprof)
	}
	return nil
}

// isLoopback reports whether addr is host:port with a loopback host.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// duration is a time.Duration written as "90s" or "1h" both on the command
// line and in the config file.
type duration time.Duration

func (d duration) String() string { return time.Duration(d).String() }

func (d *duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"90s\" or \"1h\": %s", b)
	}
	return d.Set(s)
}

// byteSize is a size in bytes, written as a plain number or a Kubernetes
// quantity ("3Mi", "512Ki").
type byteSize int64

func (b byteSize) String() string { return strconv.FormatInt(int64(b), 10) }

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("parse size %q: %w", s, err)
	}
	v, ok := q.AsInt64()
	if !ok {
		return fmt.Errorf("parse size %q: not a whole number of bytes", s)
	}
	*b = byteSize(v)
	return nil
}

func (b byteSize) MarshalJSON() ([]byte, error) { return json.Marshal(int64(b)) }

func (b *byteSize) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		*b = byteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("size must be a number of bytes or a string like \"3Mi\": %s", data)
	}
	return b.Set(s)
}

// configList is a list of strings given as a flag that may be repeated,
// each value split at commas, or as a list in the config file. The first
// flag replaces the default or the file's list; later ones add to it.
type configList struct {
	values []string
	// fromFlag is set once a flag has replaced the list.
	fromFlag bool
}

func (l *configList) String() string { return strings.Join(l.values, ",") }

func (l *configList) Set(s string) error {
	if !l.fromFlag {
		l.values, l.fromFlag = nil, true
	}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			l.values = append(l.values, v)
		}
	}
	return nil
}

func (l configList) MarshalJSON() ([]byte, error) { return json.Marshal(l.values) }

func (l *configList) UnmarshalJSON(b []byte) error {
	var v []string
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("want a list of strings: %s", b)
	}
	l.values, l.fromFlag = v, false
	return nil
}
