package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeapi/edgeapi/store"
)

// TestRunListRef_ScansTheListRows fills a store as the daemon's data dir
// holds it and checks that list-ref scans exactly the list namespace's
// rows, --lists times, and reports the ratios to the list results of the
// same run; and, after cr-list, the custom resources' rows too.
func TestRunListRef_ScansTheListRows(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Config{Path: filepath.Join(dir, "edgeapi.db")})
	if err != nil {
		t.Fatal(err)
	}
	for i, ns := range []string{"ls", "ls", "ls", "other", "crs", "crs", "crs"} {
		resource := "configmaps"
		if ns == "crs" {
			resource = "gadgets.example.com"
		}
		key := store.Key{Resource: resource, Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}
		value := fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q,"uid":"uid-%d"},"data":{"k":"v"}}`, key.Name, ns, i)
		if _, err := db.Create(ctx, key, fmt.Sprintf("uid-%d", i), []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The loop probes a server's statistics: the fake's.
	srv := httptest.NewServer(newFakeServer().routes())
	defer srv.Close()
	b := &bench{
		c:      newClient(srv.URL, 1),
		base:   srv.URL,
		cfg:    config{duration: time.Second, lists: 4, listObjects: 3, quiet: true},
		d:      &daemon{dataDir: dir},
		runID:  "test",
		listNS: "ls",
		// cr-list ran: its rows are the three in crs.
		crListResource: "gadgets.example.com",
		crListNS:       "crs",
		report: &Report{Results: []Result{
			{Workload: "list-3", Ops: 4, OpsPerSec: 10, ServerCPU: 0.5, Latency: &Latency{P50MS: 2}},
			{Workload: "list-3-protobuf", Ops: 4, OpsPerSec: 5, ServerCPU: 0.5, Latency: &Latency{P50MS: 4}},
			{Workload: "cr-list-3", Ops: 4, OpsPerSec: 8, ServerCPU: 0.5, Latency: &Latency{P50MS: 3}},
		}},
	}
	defer b.c.close()
	res, err := runListRef(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 10 {
		t.Fatalf("results = %+v, want the scan and two ratios, then the custom resources' scan and one ratio, mapped and then without the map", res)
	}
	for i, want := range []string{"list-ref-nomap-3", "list-3 vs list-ref-nomap", "list-3-protobuf vs list-ref-nomap", "list-ref-cr-nomap-3", "cr-list-3 vs list-ref-cr-nomap"} {
		if got := res[5+i].Workload; got != want {
			t.Errorf("without the map, result %d = %q, want %q", i, got, want)
		}
	}
	if notes := strings.Join(res[5].Notes, "; "); !strings.Contains(notes, "3 configmaps rows") || !strings.Contains(notes, "mmap_size 0 MiB") {
		t.Errorf("unmapped scan notes = %q, want 3 rows read without the map", notes)
	}
	if got := res[0]; got.Workload != "list-ref-3" || got.Ops != 4 || got.Errors != 0 {
		t.Errorf("scan = %s, %d ops, %d errors; want list-ref-3, 4 ops, none", got.Workload, got.Ops, got.Errors)
	}
	if notes := strings.Join(res[0].Notes, "; "); !strings.Contains(notes, "3 configmaps rows") || strings.Contains(notes, "WARNING") {
		t.Errorf("scan notes = %q, want 3 rows and no warning", notes)
	}
	for i, want := range []string{"list-3 vs list-ref", "list-3-protobuf vs list-ref"} {
		if got := res[i+1].Workload; got != want {
			t.Errorf("ratio %d = %q, want %q", i, got, want)
		}
	}
	if got := res[3]; got.Workload != "list-ref-cr-3" || got.Ops != 4 || got.Errors != 0 || !strings.Contains(strings.Join(got.Notes, "; "), "3 gadgets.example.com rows") {
		t.Errorf("custom resources' scan = %s, %d ops, %d errors, notes %q; want list-ref-cr-3, 4 ops, none, 3 rows", got.Workload, got.Ops, got.Errors, got.Notes)
	}
	if got, want := res[4].Workload, "cr-list-3 vs list-ref-cr"; got != want {
		t.Errorf("custom resources' ratio = %q, want %q", got, want)
	}
	if res[2].Value <= res[1].Value {
		t.Errorf("ratios JSON %.3f, Protobuf %.3f: want Protobuf's (p50 4 ms) above JSON's (2 ms)", res[1].Value, res[2].Value)
	}

	b.listNS, b.crListNS = "", ""
	if _, err := runListRef(ctx, b); err == nil || !strings.Contains(err.Error(), "run list before it") {
		t.Errorf("without list: error %v, want one saying to run list first", err)
	}
}
