package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/edgeapi/edgeapi/pki"
)

// errKubeconfigNoSpace is writeKubeconfigFile's error when the file
// system is full and there is no kubeconfig to overwrite in place.
var errKubeconfigNoSpace = errors.New("no space left on the file system for a new kubeconfig")

// writeKubeconfigFile writes the kubeconfig kc to path at start. The
// daemon must start on a full disk too (it serves reads and deletes
// there), so a file that already holds kc (mode 0600) is left alone, and when the
// file system has no room for the atomic write's temporary file (ENOSPC)
// the existing file is overwritten in place: truncating it frees the
// blocks the new contents, about as long, take again. A start that dies
// halfway through that leaves a broken kubeconfig, which the next start
// writes again. With no file to reuse it returns errKubeconfigNoSpace,
// and the caller starts without it.
func writeKubeconfigFile(path string, kc []byte) error {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == 0o600 {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, kc) {
			return nil
		}
	}
	err := pki.WriteFileAtomic(path, kc, 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	f, oerr := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600)
	if oerr != nil {
		return fmt.Errorf("%w: %w", errKubeconfigNoSpace, err)
	}
	_, werr := f.Write(kc)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("overwrite in place on a full file system: %w", werr)
	}
	return nil
}
