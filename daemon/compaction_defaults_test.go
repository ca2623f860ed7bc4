package main

import (
	"testing"

	"github.com/edgeapi/edgeapi/store"
)

// TestDefaultCompactionMaxRows checks that the flag's default is the
// store's documented bound.
func TestDefaultCompactionMaxRows(t *testing.T) {
	if got, want := defaultServeConfig().CompactionMaxRows, int64(store.DefaultMaxChangeLogRows); got != want {
		t.Errorf("default compaction-max-rows = %d, want store.DefaultMaxChangeLogRows %d", got, want)
	}
}
