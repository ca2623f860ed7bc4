// Package e2e runs the real edgeapi daemon over HTTP and drives it with real
// clients: client-go (typed and dynamic), kubectl built from k8s.io/kubectl,
// and the apidiff harness that replays scenarios recorded from
// kube-apiserver 1.36.3.
//
// The tests use the binaries named by EDGEAPI_BIN and KUBECTL_BIN (absolute
// paths, as scripts/test exports them). When those are unset, the package
// builds ./daemon and ./scripts/kubectl once per run into a temporary
// directory. TestAPIDiff needs python3 and the shared apidiff directory
// (../shared/apidiff relative to the module root, or APIDIFF_DIR).
package e2e
