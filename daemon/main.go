// Command edgeapi serves the Kubernetes resource API from one SQLite file.
//
// main only wires process-level concerns: it turns signals into context
// cancellation and Run's error into an exit code. Everything else lives in
// Run and the subcommand files.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The first SIGINT/SIGTERM cancels ctx, which starts a graceful
	// shutdown; a second one exits at once, for when that shutdown hangs.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		cancel()
		sig = <-sigs
		fmt.Fprintf(os.Stderr, "edgeapi: received second %v, exiting now\n", sig)
		os.Exit(1)
	}()

	err := Run(ctx, os.Args[1:])
	if err != nil && !isUsageError(err) {
		// Usage errors were already printed with the usage text.
		fmt.Fprintf(os.Stderr, "edgeapi: %v\n", err)
	}
	os.Exit(exitCode(err))
}
