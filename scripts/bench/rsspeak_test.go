package main

import (
	"os"
	"reflect"
	"runtime/debug"
	"testing"
)

func TestMemoryLimitFromArgs(t *testing.T) {
	tests := []struct {
		args    []string
		want    float64
		wantOK  bool
		wantErr bool
	}{
		{args: nil},
		{args: []string{"--debug-pprof", "127.0.0.1:6060"}},
		{args: []string{"--memory-limit", "96Mi"}, want: 96, wantOK: true},
		{args: []string{"--memory-limit=1Gi"}, want: 1024, wantOK: true},
		{args: []string{"--memory-limit", "67108864"}, want: 64, wantOK: true},
		{args: []string{"--memory-limit", "lots"}, wantErr: true},
	}
	for _, tt := range tests {
		got, ok, err := memoryLimitFromArgs(tt.args)
		if (err != nil) != tt.wantErr || ok != tt.wantOK || got != tt.want {
			t.Errorf("memoryLimitFromArgs(%q) = %v, %v, %v; want %v, %v, error %v", tt.args, got, ok, err, tt.want, tt.wantOK, tt.wantErr)
		}
	}
}

func TestWithoutWatchBounds(t *testing.T) {
	tests := []struct {
		args, want []string
	}{
		{args: nil, want: []string{"--max-watches", "0", "--max-watches-per-user", "0", "--compaction-max-rows", "0"}},
		{args: []string{"--max-watches", "5"}, want: []string{"--max-watches", "5", "--max-watches-per-user", "0", "--compaction-max-rows", "0"}},
		{args: []string{"--max-watches-per-user=7", "--max-watches=3", "--compaction-max-rows", "9"}, want: []string{"--max-watches-per-user=7", "--max-watches=3", "--compaction-max-rows", "9"}},
	}
	for _, tt := range tests {
		in := append([]string(nil), tt.args...)
		if got := withoutWatchBounds(in); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("withoutWatchBounds(%q) = %q, want %q", tt.args, got, tt.want)
		}
		if !reflect.DeepEqual(in, tt.args) && !(len(in) == 0 && len(tt.args) == 0) {
			t.Errorf("withoutWatchBounds changed its argument to %q", in)
		}
	}
}

// TestRSSPeak_End: the peak of this process over a stretch that allocates
// and touches 32 MiB is at least that much above its RSS before.
func TestRSSPeak_End(t *testing.T) {
	pid := os.Getpid()
	// Return the heap earlier tests freed to the system, so that the 32
	// MiB below are pages the process had not kept resident.
	debug.FreeOSMemory()
	before, err := rssBytes(pid)
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	p := startRSSPeak(pid)
	buf := make([]byte, 32<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	got := p.end()
	if got < before+30<<20 {
		t.Errorf("peak %d MiB, want at least %d MiB (before %d MiB + 32 MiB touched)", got>>20, (before+30<<20)>>20, before>>20)
	}
	buf[0] = 2 // keep buf alive until the peak is read
	if m := p.atMax; m.Anon > 0 && m.Anon+m.File+m.Shmem != m.RSS {
		t.Errorf("at the sampled peak anon %d + file %d + shmem %d != VmRSS %d", m.Anon, m.File, m.Shmem, m.RSS)
	}
}

func TestParseProcMem(t *testing.T) {
	const status = "Name:\tedgeapi\nVmHWM:\t  160000 kB\nVmRSS:\t  157696 kB\nRssAnon:\t   97280 kB\nRssFile:\t   60416 kB\nRssShmem:\t       0 kB\nThreads:\t12\n"
	tests := []struct {
		name    string
		status  string
		want    procMem
		wantErr bool
	}{
		{name: "Linux 4.5 and later", status: status, want: procMem{RSS: 157696 << 10, Anon: 97280 << 10, File: 60416 << 10}},
		{name: "older kernel: VmRSS only", status: "Name:\tx\nVmRSS:\t 2048 kB\n", want: procMem{RSS: 2 << 20}},
		{name: "no VmRSS (a kernel thread)", status: "Name:\tkthreadd\nThreads:\t1\n", wantErr: true},
		{name: "a bad number", status: "VmRSS:\t lots kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcMem([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseProcMem() = %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
