package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/edgeapi/edgeapi/encryption"
	"github.com/edgeapi/edgeapi/store"
)

// runRewriteSecrets is `edgeapi rewrite-secrets`: the offline rewrite step
// of an encryption key rotation. With the daemon stopped, it opens the
// data dir with the encryption configuration and writes again every
// object of an encrypted resource (Secrets, usually) that is stored under
// a key or provider other than the first, so that the old key can then be
// removed from the configuration.
func runRewriteSecrets(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rewrite-secrets", flag.ContinueOnError)
	dataDir := fs.String("data-dir", DefaultDataDir, "the daemon's data `directory`; the daemon must be stopped")
	encConfig := fs.String("encryption-provider-config", "", "the EncryptionConfiguration `file` the daemon will run with, the new key first")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: edgeapi rewrite-secrets --data-dir DIR --encryption-provider-config FILE\n\n"+
			"Rewrite every stored object of the resources FILE encrypts (Secrets, usually) that is\n"+
			"stored with another key or provider than FILE's first, so that all are then stored with\n"+
			"the first. Run it with the daemon stopped, after putting the new key first.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 || *encConfig == "" {
		err := errors.New("--encryption-provider-config is required")
		if fs.NArg() > 0 {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		fmt.Fprintf(fs.Output(), "%v\n", err)
		fs.Usage()
		return usageError{err}
	}
	enc, err := encryption.Load(*encConfig)
	if err != nil {
		return fmt.Errorf("load encryption provider config: %w", err)
	}
	dbPath := filepath.Join(*dataDir, dbFileName)
	if _, err := os.Stat(dbPath); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	db, err := store.Open(ctx, store.Config{Path: dbPath, Logger: zap.NewNop(), Transformers: enc.Transformers()})
	if err != nil {
		return err
	}
	rewritten, checked, err := db.RewriteStale(ctx)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close store: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("rewrite after %d of %d objects: %w", rewritten, checked, err)
	}
	fmt.Printf("rewrote %d of %d objects of the encrypted resources (%s)\n", rewritten, checked, enc.Resources())
	return nil
}
