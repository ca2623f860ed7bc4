package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand: its name, a one-line summary for the usage
// text, and the function that runs it with the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands lists the subcommands in the order the usage text shows them.
var commands = []command{
	{"serve", "serve the Kubernetes resource API", runServe},
	{"proxy", "forward a loopback port to the Unix socket for your own user (for kubectl)", runProxy},
	{"kubeconfig", "issue a client certificate for a user and groups, and write a kubeconfig that uses it", runKubeconfig},
	{"rewrite-secrets", "re-encrypt stored Secrets with the first key (offline, after a key rotation)", runRewriteSecrets},
	{"check", "check the database's integrity and invariants (offline)", runCheck},
	{"backup", "write a consistent copy of the database (the daemon may be running)", runBackup},
	{"restore", "replace the database with a backup, above every revision handed out (offline)", runRestore},
	{"compact", "compact the change log to the newest revisions (offline)", runCompact},
	{"defrag", "rebuild the database file so that it holds only the pages in use (offline)", runDefrag},
	{"migrate", "copy every object between a SQLite data dir and etcd, as a new store (offline; etcd build)", runMigrate},
	{"version", "print version information", runVersion},
}

// Run runs the subcommand named by args[0] with the remaining arguments.
// Cancelling ctx asks a running subcommand to shut down gracefully.
//
// It returns nil on success, a usageError for bad arguments (already printed
// together with the usage text; flag.ErrHelp for -h), and any other error
// from the subcommand.
func Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		printUsage(os.Stderr)
		return usageError{errors.New("no command given")}
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		printUsage(os.Stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "edgeapi: unknown command %q\n\n", name)
	printUsage(os.Stderr)
	return usageError{fmt.Errorf("unknown command %q", name)}
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: edgeapi <command> [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'edgeapi <command> -h' for the flags of a command.\n")
}

// usageError marks an error in the command line. The flag package (or
// Run) has already printed it along with the usage text.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func isUsageError(err error) bool {
	var u usageError
	return errors.As(err, &u) || errors.Is(err, flag.ErrHelp)
}

// exitCode maps Run's error to the process exit code: 0 for success and for
// -h, 2 for usage errors (like the flag package), 1 for everything else.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case isUsageError(err):
		return 2
	default:
		return 1
	}
}
