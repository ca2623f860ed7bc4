package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.uber.org/zap"
)

// dbFileMode is the mode of the database and its -wal and -shm files:
// they hold every object, Secrets included, so only the daemon's user
// may read them.
const dbFileMode fs.FileMode = 0o600

// secureDBFiles creates the database file at path with dbFileMode if it
// does not exist, before SQLite opens it: SQLite would create it 0644
// (less the umask), and creates -wal and -shm with the database file's
// mode. Existing files with a wider mode are narrowed, with a warning.
func secureDBFiles(path string, log *zap.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, dbFileMode)
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check database file mode: %w", err)
		}
		if mode := st.Mode().Perm(); mode&^dbFileMode != 0 {
			if err := os.Chmod(p, dbFileMode); err != nil {
				return fmt.Errorf("narrow database file mode: %w", err)
			}
			log.Warn("database file was readable or writable by others; narrowed its mode",
				zap.String("path", p), zap.Stringer("was", mode), zap.Stringer("now", dbFileMode))
		}
	}
	return nil
}
