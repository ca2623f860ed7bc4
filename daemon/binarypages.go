package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// binaryResidentBytes returns how much of the daemon's own executable is
// resident: the Rss of every mapping of /proc/self/exe in
// /proc/self/smaps. These are clean file pages that the Go runtime's soft
// limit does not count but the RSS does (25-30 MiB once serving), so the
// memory budget takes them off the Go limit. It fails where there is no
// /proc (not Linux); the caller then counts DefaultBinaryBytes.
func binaryResidentBytes() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("read binary's pages: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("read binary's pages: %w", err)
	}
	defer f.Close()
	n, err := smapsRSS(f, strings.TrimSuffix(exe, " (deleted)"))
	if err != nil {
		return 0, fmt.Errorf("read binary's pages: %w", err)
	}
	return n, nil
}

// smapsRSS sums the "Rss:" lines, in bytes, of the mappings of path in an
// smaps file (proc(5)): each mapping starts with a header line
// "start-end perms offset dev inode [pathname]", followed by "Key: value
// kB" lines. A binary replaced on disk while it runs is listed as
// "path (deleted)" and counts too. It is an error if path has no mapping.
func smapsRSS(r io.Reader, path string) (int64, error) {
	var (
		sum   int64
		in    bool // the current mapping is path's
		found bool
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			// A mapping's header: its pathname is the rest after the
			// inode (it may contain spaces).
			in = false
			if len(f) >= 6 {
				name := strings.TrimSuffix(strings.Join(f[5:], " "), " (deleted)")
				in = name == path
				found = found || in
			}
			continue
		}
		if in && f[0] == "Rss:" && len(f) >= 2 {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse smaps %q: %w", line, err)
			}
			sum += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no mapping of %s in smaps", path)
	}
	return sum, nil
}
