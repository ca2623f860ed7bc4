//go:build !etcd

package main

// variant names the build variant in `edgeapi version`; the default build,
// packaged as edgeapi, has none.
const variant = ""
