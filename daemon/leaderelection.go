package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/edgeapi/edgeapi/controller"
)

// leaderElectionTimingsEnv, when set, replaces the leader election's
// timings, as "LEASE,RENEW,RETRY" durations (for example "2s,1s,250ms"),
// so that tests of several replicas see the controllers move within
// seconds. A test knob, not a setting: the defaults are
// kube-controller-manager's (15s, 10s, 2s).
const leaderElectionTimingsEnv = "EDGEAPI_TEST_LEADER_ELECTION_TIMINGS"

// leaderElection returns the controllers' leader election for cfg: on
// etcd, where several replicas may share the store, the controllers that
// write run on the holder of the controller Lease; on SQLite there is one
// process and no election.
func leaderElection(cfg serveConfig) (controller.LeaderElection, error) {
	le := controller.LeaderElection{Enabled: cfg.StorageBackend == backendEtcd3}
	if !le.Enabled {
		return le, nil
	}
	if v := os.Getenv(leaderElectionTimingsEnv); v != "" {
		parts := strings.Split(v, ",")
		if len(parts) != 3 {
			return le, fmt.Errorf("invalid %s %q: want LEASE,RENEW,RETRY durations", leaderElectionTimingsEnv, v)
		}
		var d [3]time.Duration
		for i, p := range parts {
			var err error
			if d[i], err = time.ParseDuration(strings.TrimSpace(p)); err != nil {
				return le, fmt.Errorf("invalid %s %q: %w", leaderElectionTimingsEnv, v, err)
			}
		}
		le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = d[0], d[1], d[2]
	}
	return le, le.Validate()
}
