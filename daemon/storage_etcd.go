//go:build etcd

package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/store/etcdstore"
)

// This file links the etcd backend into the edgeapi-ha build.

func init() { openEtcd = openEtcdStore }

// openEtcdStore connects to the etcd cluster.
func openEtcdStore(ctx context.Context, o etcdOptions, log *zap.Logger) (backend, error) {
	cfg := etcdstore.Config{Endpoints: o.Servers, Prefix: o.Prefix, Transformers: o.Transformers, TypeMeta: o.TypeMeta}
	if o.CAFile != "" || o.CertFile != "" {
		t, err := etcdstore.ClientTLS(o.CAFile, o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("open etcd store: %w", err)
		}
		cfg.TLS = t
	}
	s, err := etcdstore.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	log.Info("connected to etcd", zap.Int64("rev", s.Rev()), zap.Int64("compacted_rev", s.CompactedRev()))
	return s, nil
}
