package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
)

// Build information, set at link time by scripts/build:
//
//	go build -ldflags "-X main.version=$(git describe --always --dirty) -X main.commit=$(git rev-parse HEAD)"
//
// A plain `go build` or `go run` leaves the defaults.
var (
	version = "dev"
	commit  = "unknown"
)

func runVersion(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("edgeapi version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi version\n\nPrint the version (with the build variant, if not the default), git commit and Go version.\n")
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	printVersion(os.Stdout)
	return nil
}

func printVersion(w io.Writer) {
	if variant != "" {
		fmt.Fprintf(w, "edgeapi %s (%s)\n", version, variant)
	} else {
		fmt.Fprintf(w, "edgeapi %s\n", version)
	}
	fmt.Fprintf(w, "git commit: %s\n", commit)
	fmt.Fprintf(w, "go version: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
