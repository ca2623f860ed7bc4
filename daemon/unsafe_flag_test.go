package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestParseServeConfig_UnsafeTestingSynchronousOff: the power-cut test's
// flag parses, is no config-file key, and is left out of --help.
func TestParseServeConfig_UnsafeTestingSynchronousOff(t *testing.T) {
	got, err := parseServeConfig([]string{"--unsafe-testing-synchronous-off"}, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("parseServeConfig: %v", err)
	}
	if !got.UnsafeTestingSynchronousOff {
		t.Errorf("UnsafeTestingSynchronousOff = false, want true")
	}
	if def, _ := parseServeConfig(nil, &bytes.Buffer{}); def.UnsafeTestingSynchronousOff {
		t.Errorf("UnsafeTestingSynchronousOff is on by default")
	}

	var help bytes.Buffer
	_, err = parseServeConfig([]string{"--help"}, &help)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: error %v, want flag.ErrHelp", err)
	}
	if strings.Contains(help.String(), "unsafe") {
		t.Errorf("--help lists the hidden flag:\n%s", help.String())
	}
	if !strings.Contains(help.String(), "-insecure-allow-public-listen\n") || !strings.Contains(help.String(), `(default "127.0.0.1:6443")`) {
		t.Errorf("--help lost the other flags or their defaults:\n%s", help.String())
	}
}
