//go:build etcd

package main

// variant names the build variant in `edgeapi version`: the edgeapi-ha
// build, with the etcd backend linked in.
const variant = "etcd backend"
