//go:build !linux

package store

import "os"

// writeBack does nothing where sync_file_range does not exist: the fsync
// that follows writes every dirty page at once.
func writeBack(*os.File) {}

// startWriteBack does nothing here: see writeback_linux.go.
func startWriteBack(*os.File, int64, int64) {}

// waitWriteBack does nothing here: see writeback_linux.go.
func waitWriteBack(*os.File, int64, int64) {}
