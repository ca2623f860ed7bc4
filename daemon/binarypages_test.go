package main

import (
	"os"
	"strings"
	"testing"
)

func TestSmapsRSS(t *testing.T) {
	const smaps = `00400000-00c00000 r-xp 00000000 08:01 1234                               /usr/bin/edgeapi
Size:               8192 kB
Rss:                6000 kB
Pss:                6000 kB
00c00000-01800000 r--p 00800000 08:01 1234                               /usr/bin/edgeapi
Size:              12288 kB
Rss:               10240 kB
01800000-01900000 rw-p 01400000 08:01 1234                               /usr/bin/edgeapi
Rss:                 100 kB
c000000000-c004000000 rw-p 00000000 00:00 0 
Size:              65536 kB
Rss:               40000 kB
7f0000000000-7f0002000000 r--s 00000000 08:01 99                         /var/lib/edgeapi/db/edgeapi.db
Rss:               30000 kB
7f1000000000-7f1000001000 r--p 00000000 08:01 77                         /opt/my app/edgeapi
Rss:                   4 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  32 kB
`
	tests := []struct {
		name, smaps, path string
		want              int64
		wantErr           bool
	}{
		{name: "the binary's three mappings, not the heap or the database", smaps: smaps, path: "/usr/bin/edgeapi", want: (6000 + 10240 + 100) << 10},
		{name: "a path with a space", smaps: smaps, path: "/opt/my app/edgeapi", want: 4 << 10},
		{name: "a binary replaced on disk", smaps: strings.ReplaceAll(smaps, "/usr/bin/edgeapi", "/usr/bin/edgeapi (deleted)"), path: "/usr/bin/edgeapi", want: (6000 + 10240 + 100) << 10},
		{name: "no mapping of the path", smaps: smaps, path: "/usr/bin/other", wantErr: true},
		{name: "a bad number", smaps: "00400000-00c00000 r-xp 00000000 08:01 1 /e\nRss: many kB\n", path: "/e", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := smapsRSS(strings.NewReader(tt.smaps), tt.path)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("smapsRSS() = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestBinaryResidentBytes: this test binary has some of its pages
// resident, fewer than its size.
func TestBinaryResidentBytes(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	got, err := binaryResidentBytes()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if got <= 0 || got > fi.Size()+1<<20 {
		t.Errorf("binaryResidentBytes() = %d, want more than 0 and at most the binary's %d bytes", got, fi.Size())
	}
}
