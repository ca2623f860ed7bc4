package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseServeConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yamlFile := write("config.yaml", `
data-dir: /srv/edgeapi
listen: 0.0.0.0:7443
insecure-allow-public-listen: true
log-level: debug
event-ttl: 2h
compaction-interval: 1m
max-request-body: 1Mi
`)
	jsonFile := write("config.json", `{"listen": "127.0.0.1:9443", "max-request-body": 2048}`)
	typoFile := write("typo.yaml", "listen: 127.0.0.1:1\nlog_level: debug\n")
	badDuration := write("bad.yaml", "event-ttl: 3600\n")
	auditFile := write("audit.yaml", "audit-log-path: /var/lib/edgeapi/audit/audit.log\naudit-log-maxsize: 5\naudit-log-maxbackup: 0\naudit-log-maxage: 7\n")
	saFile := write("sa.yaml", "service-account-issuer: [https://a.example, https://b.example]\napi-audiences: [x]\nservice-account-max-token-expiration: 2h\n")

	defaults := defaultServeConfig()
	tests := []struct {
		name    string
		args    []string
		want    func(c *serveConfig)
		wantErr string
	}{
		{name: "defaults", args: nil, want: func(c *serveConfig) {}},
		{
			name: "flags",
			args: []string{"--data-dir", "/tmp/x", "--listen", "127.0.0.1:0", "--log-level", "warn", "--log-format", "json",
				"--event-ttl", "30m", "--compaction-interval", "10s", "--max-request-body", "512Ki", "--request-timeout", "2s",
				"--disk-reserve", "0", "--response-compression", "all"},
			want: func(c *serveConfig) {
				c.DataDir, c.Listen, c.LogLevel, c.LogFormat = "/tmp/x", "127.0.0.1:0", "warn", "json"
				c.EventTTL, c.CompactionInterval = duration(30*time.Minute), duration(10*time.Second)
				c.MaxRequestBody = 512 << 10
				c.RequestTimeout = duration(2 * time.Second)
				c.DiskReserve = 0
				c.ResponseCompression = "all"
			},
		},
		{
			name: "yaml file",
			args: []string{"--config", yamlFile},
			want: func(c *serveConfig) {
				c.DataDir, c.Listen, c.LogLevel = "/srv/edgeapi", "0.0.0.0:7443", "debug"
				c.InsecureAllowPublicListen = true
				c.EventTTL, c.CompactionInterval = duration(2*time.Hour), duration(time.Minute)
				c.MaxRequestBody = 1 << 20
			},
		},
		{
			name: "flags override file, before or after --config",
			args: []string{"--listen", "127.0.0.1:1", "--config", yamlFile, "--event-ttl", "5m"},
			want: func(c *serveConfig) {
				c.DataDir, c.Listen, c.LogLevel = "/srv/edgeapi", "127.0.0.1:1", "debug"
				c.InsecureAllowPublicListen = true
				c.EventTTL, c.CompactionInterval = duration(5*time.Minute), duration(time.Minute)
				c.MaxRequestBody = 1 << 20
			},
		},
		{
			name: "auth flags",
			args: []string{"--token-auth-file", "/etc/tokens.csv", "--anonymous-auth=false", "--authorization-mode", "RBAC,AlwaysDeny"},
			want: func(c *serveConfig) {
				c.TokenAuthFile, c.AnonymousAuth, c.AuthorizationMode = "/etc/tokens.csv", false, "RBAC,AlwaysDeny"
			},
		},
		{
			name: "audit flags",
			args: []string{"--audit-log-path", "/var/log/edgeapi/audit.log", "--audit-log-maxsize", "10", "--audit-log-maxbackup", "3", "--audit-log-maxage", "0"},
			want: func(c *serveConfig) {
				c.AuditLogPath, c.AuditLogMaxSize, c.AuditLogMaxBackup, c.AuditLogMaxAge = "/var/log/edgeapi/audit.log", 10, 3, 0
			},
		},
		{
			name: "audit to stdout without rotation",
			args: []string{"--audit-log-path", "-", "--audit-log-maxsize", "0"},
			want: func(c *serveConfig) { c.AuditLogPath, c.AuditLogMaxSize = "-", 0 },
		},
		{
			name: "audit keys in the config file",
			args: []string{"--config", auditFile},
			want: func(c *serveConfig) {
				c.AuditLogPath, c.AuditLogMaxSize, c.AuditLogMaxBackup, c.AuditLogMaxAge = "/var/lib/edgeapi/audit/audit.log", 5, 0, 7
			},
		},
		{name: "negative audit-log-maxsize", args: []string{"--audit-log-maxsize", "-1"}, wantErr: "invalid audit-log-maxsize -1"},
		{name: "huge audit-log-maxsize", args: []string{"--audit-log-maxsize", "1048577"}, wantErr: "invalid audit-log-maxsize 1048577"},
		{name: "negative audit-log-maxbackup", args: []string{"--audit-log-maxbackup", "-1"}, wantErr: "invalid audit-log-maxbackup -1"},
		{name: "negative audit-log-maxage", args: []string{"--audit-log-maxage", "-2"}, wantErr: "invalid audit-log-maxage -2"},
		{name: "audit-log-maxsize not a number", args: []string{"--audit-log-maxsize", "1Mi"}, wantErr: "invalid value"},
		{
			name: "json file",
			args: []string{"--config", jsonFile},
			want: func(c *serveConfig) { c.Listen, c.MaxRequestBody = "127.0.0.1:9443", 2048 },
		},
		{name: "unknown key in file", args: []string{"--config", typoFile}, wantErr: `unknown field "log_level"`},
		{name: "duration without unit in file", args: []string{"--config", badDuration}, wantErr: "duration must be a string"},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "nope.yaml")}, wantErr: "read config file"},
		{name: "bad log level", args: []string{"--log-level", "verbose"}, wantErr: `invalid log-level "verbose"`},
		{name: "bad log format", args: []string{"--log-format", "text"}, wantErr: `invalid log-format "text"`},
		{name: "bad listen", args: []string{"--listen", "6443"}, wantErr: "invalid listen address"},
		{name: "zero ttl", args: []string{"--event-ttl", "0s"}, wantErr: "invalid event-ttl"},
		{name: "unknown response compression", args: []string{"--response-compression", "gzip"}, wantErr: "invalid response-compression"},
		{name: "zero request timeout", args: []string{"--request-timeout", "0s"}, wantErr: "invalid request-timeout"},
		{name: "negative disk reserve", args: []string{"--disk-reserve", "-1"}, wantErr: "disk-reserve"},
		{name: "negative memory limit", args: []string{"--memory-limit", "-1"}, wantErr: "memory-limit"},
		{name: "bad size", args: []string{"--max-request-body", "lots"}, wantErr: "parse size"},
		{
			name: "debug-pprof on loopback",
			args: []string{"--debug-pprof", "127.0.0.1:6060"},
			want: func(c *serveConfig) { c.DebugPprof = "127.0.0.1:6060" },
		},
		{name: "debug-pprof off loopback", args: []string{"--debug-pprof", "0.0.0.0:6060"}, wantErr: "invalid debug-pprof"},
		{name: "bad service cluster IP range", args: []string{"--service-cluster-ip-range", "10.0.0.0"}, wantErr: "invalid service-cluster-ip-range"},
		{name: "service cluster IP range too large", args: []string{"--service-cluster-ip-range", "10.0.0.0/8"}, wantErr: "invalid service-cluster-ip-range"},
		{name: "bad service node port range", args: []string{"--service-node-port-range", "32767-30000"}, wantErr: "invalid service-node-port-range"},
		{
			name: "tls flags",
			args: []string{"--tls-cert-file", "/etc/c.crt", "--tls-private-key-file", "/etc/c.key", "--client-ca-file", "/etc/ca.crt",
				"--tls-min-version", "VersionTLS13", "--insecure-listen", "[::1]:8080"},
			want: func(c *serveConfig) {
				c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile = "/etc/c.crt", "/etc/c.key", "/etc/ca.crt"
				c.TLSMinVersion, c.InsecureListen = "VersionTLS13", "[::1]:8080"
			},
		},
		{name: "insecure-listen off loopback", args: []string{"--insecure-listen", "0.0.0.0:8080"}, wantErr: "plain HTTP is served only on a loopback address"},
		{name: "insecure-listen off loopback despite allow-public", args: []string{"--insecure-listen", ":8080", "--insecure-allow-public-listen"}, wantErr: "invalid insecure-listen"},
		{name: "bad insecure-listen", args: []string{"--insecure-listen", "8080"}, wantErr: "invalid insecure-listen"},
		{name: "cert without key", args: []string{"--tls-cert-file", "/etc/c.crt"}, wantErr: "give both or neither"},
		{name: "key without cert", args: []string{"--tls-private-key-file", "/etc/c.key"}, wantErr: "give both or neither"},
		{name: "bad tls-min-version", args: []string{"--tls-min-version", "1.2"}, wantErr: `invalid tls-min-version "1.2"`},
		{
			name: "service account flags",
			args: []string{"--service-account-issuer", "https://a.example", "--service-account-issuer", "https://b.example",
				"--service-account-signing-key-file", "/etc/sa.key", "--service-account-key-file", "/etc/old.pub",
				"--service-account-max-token-expiration", "24h", "--api-audiences", "x,y"},
			want: func(c *serveConfig) {
				c.ServiceAccountIssuer.values = []string{"https://a.example", "https://b.example"}
				c.ServiceAccountSigningKeyFile = "/etc/sa.key"
				c.ServiceAccountKeyFile.values = []string{"/etc/old.pub"}
				c.ServiceAccountMaxTokenExpiration = duration(24 * time.Hour)
				c.APIAudiences.values = []string{"x", "y"}
			},
		},
		{
			name: "service account lists in the file",
			args: []string{"--config", saFile},
			want: func(c *serveConfig) {
				c.ServiceAccountIssuer.values = []string{"https://a.example", "https://b.example"}
				c.APIAudiences.values = []string{"x"}
				c.ServiceAccountMaxTokenExpiration = duration(2 * time.Hour)
			},
		},
		{
			name: "a flag replaces the file's list",
			args: []string{"--service-account-issuer", "https://c.example", "--config", saFile, "--service-account-issuer", "https://d.example"},
			want: func(c *serveConfig) {
				c.ServiceAccountIssuer.values = []string{"https://c.example", "https://d.example"}
				c.APIAudiences.values = []string{"x"}
				c.ServiceAccountMaxTokenExpiration = duration(2 * time.Hour)
			},
		},
		{name: "issuer not a URL", args: []string{"--service-account-issuer", "https//:x y"}, wantErr: "invalid service-account-issuer"},
		{name: "empty issuer", args: []string{"--service-account-issuer", ","}, wantErr: "at least one is required"},
		{name: "max token expiration too short", args: []string{"--service-account-max-token-expiration", "30m"}, wantErr: "must be between 1 hour and 2^32 seconds"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseServeConfig(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseServeConfig(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseServeConfig(%q): %v", tt.args, err)
			}
			want := defaults
			tt.want(&want)
			want.budget = budgetFor(int64(want.MemoryLimit), 0)
			// Which lists a flag set is no part of the configuration.
			for _, l := range []*configList{&got.ServiceAccountIssuer, &got.ServiceAccountKeyFile, &got.APIAudiences} {
				l.fromFlag = false
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parseServeConfig(%q)\n got %+v\nwant %+v", tt.args, got, want)
			}
		})
	}
}

// TestDefaultServeConfig_Audit: the audit log is off by default, and its
// rotation defaults are kube-apiserver's.
func TestDefaultServeConfig_Audit(t *testing.T) {
	c := defaultServeConfig()
	got := [4]any{c.AuditLogPath, c.AuditLogMaxSize, c.AuditLogMaxBackup, c.AuditLogMaxAge}
	want := [4]any{"", 100, 100, 366}
	if got != want {
		t.Errorf("audit-log-path, -maxsize, -maxbackup, -maxage = %v, want %v", got, want)
	}
}

// TestServeConfig_ValidateListen: with RBAC (the default) any address may
// be listened on; with AlwaysAllow, which lets every client do everything,
// only a loopback address, unless --insecure-allow-public-listen
// acknowledges it.
func TestServeConfig_ValidateListen(t *testing.T) {
	const wantErr = "not a loopback address (127.0.0.0/8, ::1, localhost), and --authorization-mode=AlwaysAllow"
	tests := []struct {
		listen   string
		mode     string
		allow    bool
		wantPass bool
	}{
		{"127.0.0.1:6443", "AlwaysAllow", false, true},
		{"127.1.2.3:6443", "AlwaysAllow", false, true},
		{"[::1]:6443", "AlwaysAllow", false, true},
		{"localhost:6443", "AlwaysAllow", false, true},
		{"127.0.0.1:0", "AlwaysAllow", false, true},
		{"0.0.0.0:6443", "AlwaysAllow", false, false},
		{"[::]:6443", "AlwaysAllow", false, false},
		{":6443", "AlwaysAllow", false, false},
		{"192.168.1.10:6443", "AlwaysAllow", false, false},
		{"[fe80::1]:6443", "AlwaysAllow", false, false},
		{"example.com:6443", "AlwaysAllow", false, false},
		{"[::ffff:10.0.0.1]:6443", "AlwaysAllow", false, false},
		{"0.0.0.0:6443", "AlwaysAllow", true, true},
		{":6443", "AlwaysAllow", true, true},
		{"192.168.1.10:6443", "AlwaysAllow", true, true},
		{"0.0.0.0:6443", "RBAC", false, true},
		{"192.168.1.10:6443", "RBAC,AlwaysAllow", false, true},
		{"192.168.1.10:6443", "AlwaysAllow,RBAC", false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s allow=%v", tt.listen, tt.mode, tt.allow), func(t *testing.T) {
			c := defaultServeConfig()
			c.Listen, c.AuthorizationMode, c.InsecureAllowPublicListen = tt.listen, tt.mode, tt.allow
			err := c.validate()
			if tt.wantPass {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "--insecure-allow-public-listen") {
				t.Fatalf("validate() = %v, want an error containing %q and naming the flag", err, wantErr)
			}
		})
	}
	t.Run("flag", func(t *testing.T) {
		got, err := parseServeConfig([]string{"--listen", "0.0.0.0:1", "--insecure-allow-public-listen"}, io.Discard)
		if err != nil {
			t.Fatalf("parseServeConfig: %v", err)
		}
		if !got.InsecureAllowPublicListen {
			t.Errorf("InsecureAllowPublicListen = false, want true")
		}
	})
}

// TestServeConfig_ValidateAuthorizationMode: kube-apiserver's mode names,
// in a comma-separated list; modes edgeapi does not have are refused by
// name.
func TestServeConfig_ValidateAuthorizationMode(t *testing.T) {
	tests := []struct {
		mode    string
		wantErr string
	}{
		{"RBAC", ""},
		{"AlwaysAllow", ""},
		{"RBAC,AlwaysDeny", ""},
		{" RBAC , AlwaysAllow ", ""},
		{"", "want a comma-separated list"},
		{",", "want a comma-separated list"},
		{"Node,RBAC", "Node is not supported"},
		{"Webhook", "Webhook is not supported"},
		{"rbac", `unknown mode "rbac"`},
		{"RBAC,RBAC", "RBAC is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			c := defaultServeConfig()
			c.AuthorizationMode = tt.mode
			err := c.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"help", usageError{errHelpForTest()}, 0},
		{"usage", usageError{errors.New("unknown command")}, 2},
		{"runtime", errors.New("open store: disk full"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.err); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func errHelpForTest() error {
	_, err := parseServeConfig([]string{"-h"}, io.Discard)
	return err
}

// TestServeConfig_ValidateMaxInflight: the in-flight limits come from
// flags and config files, 0 turns a limit off, and negatives are refused
// by name.
func TestServeConfig_ValidateMaxInflight(t *testing.T) {
	// The watch bounds come from the memory budget (TestServeConfig_MemoryBudget).
	if c := defaultServeConfig(); c.MaxWatches != 1024 || c.MaxWatchesPerUser != 512 {
		t.Fatalf("watch defaults = %d, %d, want 1024, 512 (128Mi budget)", c.MaxWatches, c.MaxWatchesPerUser)
	}
	if c := defaultServeConfig(); c.MaxRequestsInflight != 400 || c.MaxMutatingRequestsInflight != 200 {
		t.Fatalf("defaults = %d, %d, want kube-apiserver's 400, 200", c.MaxRequestsInflight, c.MaxMutatingRequestsInflight)
	}
	tests := []struct {
		args                  []string
		wantReadOnly, wantMut int
		wantErr               string
	}{
		{args: []string{"--max-requests-inflight", "7", "--max-mutating-requests-inflight", "3"}, wantReadOnly: 7, wantMut: 3},
		{args: []string{"--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"}, wantReadOnly: 0, wantMut: 0},
		{args: []string{"--max-requests-inflight", "-1"}, wantErr: "invalid max-requests-inflight -1: must not be negative"},
		{args: []string{"--max-mutating-requests-inflight", "-5"}, wantErr: "invalid max-mutating-requests-inflight -5: must not be negative"},
		{args: []string{"--max-watches", "-1"}, wantErr: "invalid max-watches -1: must not be negative"},
		{args: []string{"--max-watches-per-user", "-2"}, wantErr: "invalid max-watches-per-user -2: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseServeConfig(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseServeConfig() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseServeConfig: %v", err)
			}
			if got.MaxRequestsInflight != tt.wantReadOnly || got.MaxMutatingRequestsInflight != tt.wantMut {
				t.Errorf("limits = %d, %d, want %d, %d", got.MaxRequestsInflight, got.MaxMutatingRequestsInflight, tt.wantReadOnly, tt.wantMut)
			}
		})
	}
	t.Run("config file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte("max-requests-inflight: 9\nmax-mutating-requests-inflight: 4\nmax-watches: 8\nmax-watches-per-user: 5\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := parseServeConfig([]string{"--config", p}, io.Discard)
		if err != nil {
			t.Fatalf("parseServeConfig: %v", err)
		}
		if got.MaxRequestsInflight != 9 || got.MaxMutatingRequestsInflight != 4 || got.MaxWatches != 8 || got.MaxWatchesPerUser != 5 {
			t.Errorf("limits = %d, %d, %d, %d, want 9, 4, 8, 5", got.MaxRequestsInflight, got.MaxMutatingRequestsInflight, got.MaxWatches, got.MaxWatchesPerUser)
		}
	})
}
