package main

import (
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/controller"
)

func TestLeaderElection(t *testing.T) {
	tests := []struct {
		name    string
		backend string
		env     string
		want    controller.LeaderElection
		wantErr bool
	}{
		{"sqlite: no election", backendSQLite, "", controller.LeaderElection{}, false},
		{"sqlite ignores the knob", backendSQLite, "2s,1s,250ms", controller.LeaderElection{}, false},
		{"etcd: kube-controller-manager's timings", backendEtcd3, "", controller.LeaderElection{Enabled: true}, false},
		{"etcd with the test knob", backendEtcd3, "2s,1s,250ms", controller.LeaderElection{Enabled: true, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 250 * time.Millisecond}, false},
		{"two durations", backendEtcd3, "2s,1s", controller.LeaderElection{}, true},
		{"not a duration", backendEtcd3, "2s,x,250ms", controller.LeaderElection{}, true},
		{"renew deadline above the lease", backendEtcd3, "2s,3s,250ms", controller.LeaderElection{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(leaderElectionTimingsEnv, tt.env)
			got, err := leaderElection(serveConfig{StorageBackend: tt.backend})
			if (err != nil) != tt.wantErr {
				t.Fatalf("leaderElection() error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("leaderElection() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
