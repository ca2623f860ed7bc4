// Command kubectl is kubectl built from the k8s.io/kubectl module at the
// version pinned in go.mod, for the end-to-end tests. scripts/kubectl-build
// builds it into bin/kubectl; nothing is downloaded as a binary.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
