//go:build !etcd

package main

import "context"

// This file stands in for migrate_etcd.go in the default build, which
// does not link the etcd client: `edgeapi migrate` says how to build the
// binary that has it.

// migrateEtcdBuilt reports whether this binary has the etcd backend.
const migrateEtcdBuilt = false

func openMigrateEtcdSource(context.Context, migrateOptions, migrateLocation) (migrateSource, error) {
	return nil, errMigrateNoEtcd
}

func openMigrateEtcdTarget(context.Context, migrateOptions, migrateLocation) (migrateTarget, error) {
	return nil, errMigrateNoEtcd
}

func migrateUnmapped(error) bool { return false }
