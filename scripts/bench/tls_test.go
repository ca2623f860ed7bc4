package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseWatchSizes(t *testing.T) {
	got, err := parseWatchSizes("100x500, 1000x1000")
	if err != nil {
		t.Fatal(err)
	}
	if want := []watchSize{{100, 500}, {1000, 1000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("parseWatchSizes = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "100", "100x", "x500", "0x500", "100x-1", "100x500,"} {
		if _, err := parseWatchSizes(bad); err == nil {
			t.Errorf("parseWatchSizes(%q) succeeded, want an error", bad)
		}
	}
}

// TestBench_TLSTarget: without a started daemon or --kubeconfig the TLS
// workloads say what they need.
func TestBench_TLSTarget(t *testing.T) {
	b := &bench{}
	_, err := b.tlsTarget()
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("tlsTarget without a kubeconfig: %v, want an error naming --kubeconfig", err)
	}
}
