package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSQLiteRefLoop_RowsCommitted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ref.db")
	r, err := sqliteRefLoop(context.Background(), path, 200*time.Millisecond, 1024, "abc123")
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops <= 0 || r.Ops%sqliteRefRowsPerTxn != 0 {
		t.Fatalf("ops = %d, want a positive multiple of %d", r.Ops, sqliteRefRowsPerTxn)
	}
	if r.Latency == nil || r.Latency.Count != uint64(r.Ops/sqliteRefRowsPerTxn) {
		t.Errorf("latency = %+v, want one sample per transaction (%d)", r.Latency, r.Ops/sqliteRefRowsPerTxn)
	}

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var objects, changes, rev, minLen int64
	if err := db.QueryRow("SELECT count(*), min(length(value)) FROM objects").Scan(&objects, &minLen); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FROM changelog").Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT value FROM meta WHERE key = 'rev'").Scan(&rev); err != nil {
		t.Fatal(err)
	}
	if objects != r.Ops || changes != r.Ops || rev != r.Ops {
		t.Errorf("objects=%d changelog=%d rev=%d, want %d each", objects, changes, rev, r.Ops)
	}
	if minLen < 1024 {
		t.Errorf("smallest stored value %d B, want at least the 1024 B payload", minLen)
	}
}

func TestRunSQLiteRef_Ratio(t *testing.T) {
	b := &bench{
		cfg:    config{duration: 100 * time.Millisecond, payloadBytes: 1024, quiet: true},
		tmpDir: t.TempDir(),
		runID:  "test",
		report: &Report{Results: []Result{{Workload: "create-64", Ops: 1000, OpsPerSec: 1000}}},
	}
	res, err := runSQLiteRef(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("got %d results, want sqlite-ref and the ratio: %+v", len(res), res)
	}
	ref, ratio := res[0], res[1]
	if ref.Workload != "sqlite-ref" || ref.Ops <= 0 {
		t.Errorf("reference result = %+v, want sqlite-ref with rows", ref)
	}
	if want := 100 * 1000 / ref.OpsPerSec; ratio.Workload != "create-64 vs sqlite-ref" || ratio.Unit != "%" || math.Abs(ratio.Value-want) > 1e-9*want {
		t.Errorf("ratio = %s %v %s, want create-64 vs sqlite-ref %v %%", ratio.Workload, ratio.Value, ratio.Unit, want)
	}
	if !strings.Contains(strings.Join(ratio.Notes, ";"), "create-64 vs sqlite-ref: ") {
		t.Errorf("ratio notes %q lack the ×-ratio", ratio.Notes)
	}

	t.Run("without create", func(t *testing.T) {
		b.report = &Report{}
		res, err := runSQLiteRef(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Workload != "sqlite-ref" {
			t.Errorf("got %+v, want the sqlite-ref result alone", res)
		}
	})
}

func TestSQLiteRefValue_StoredShape(t *testing.T) {
	uid := sqliteRefUID("abc123", 31)
	got := sqliteRefValue(nil, newConfigMapBody(benchNamespace, 1024), "c64-12345", uid, 31)
	var obj struct {
		Metadata struct {
			Name, Namespace, UID, ResourceVersion string
			ManagedFields                         []json.RawMessage
		}
		Data map[string]string
	}
	if err := json.Unmarshal(got, &obj); err != nil {
		t.Fatalf("value is not JSON: %v\n%s", err, got)
	}
	if obj.Metadata.Name != "c64-12345" || obj.Metadata.Namespace != benchNamespace || obj.Metadata.UID != uid ||
		obj.Metadata.ResourceVersion != "31" || len(obj.Metadata.ManagedFields) != 1 || len(obj.Data["payload"]) != 1024 {
		t.Errorf("value = %s", got)
	}
	if len(uid) != 36 {
		t.Errorf("uid %q has %d characters, want 36", uid, len(uid))
	}
	// The daemon stores this ConfigMap (created by curl) in 1,386 bytes;
	// "bench" is one byte longer a manager name.
	if want := 1386 + 1; len(got) != want {
		t.Errorf("value has %d bytes, want %d", len(got), want)
	}
}

func TestSQLiteRefRatios(t *testing.T) {
	plain := Result{Workload: "create-64", OpsPerSec: 4000}
	cg := Result{Workload: "create-64 clientgo", OpsPerSec: 3000}
	other := Result{Workload: "create-16", OpsPerSec: 9000}
	ref := Result{Workload: "sqlite-ref", OpsPerSec: 10000}
	for _, tc := range []struct {
		name    string
		results []Result
		ref     Result
		want    map[string]float64 // ratio name -> percent
	}{
		{name: "plain only", results: []Result{other, plain}, ref: ref, want: map[string]float64{"create-64 vs sqlite-ref": 40}},
		{name: "both", results: []Result{plain, cg}, ref: ref, want: map[string]float64{"create-64 vs sqlite-ref": 40, "create-64 clientgo vs sqlite-ref": 30}},
		{name: "client-go only", results: []Result{cg}, ref: ref, want: map[string]float64{"create-64 clientgo vs sqlite-ref": 30}},
		{name: "no create-64", results: []Result{other}, ref: ref, want: map[string]float64{}},
		{name: "reference without rows", results: []Result{plain, cg}, ref: Result{Workload: "sqlite-ref"}, want: map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sqliteRefRatios(&Report{Results: tc.results}, tc.ref)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d ratios %+v, want %v", len(got), got, tc.want)
			}
			for _, r := range got {
				want, ok := tc.want[r.Workload]
				if !ok || r.Unit != "%" || math.Abs(r.Value-want) > 1e-9 {
					t.Errorf("ratio %s = %v %s, want %v %%", r.Workload, r.Value, r.Unit, want)
				}
				if name := strings.TrimSuffix(r.Workload, " vs sqlite-ref"); !strings.Contains(strings.Join(r.Notes, ";"), name+" vs sqlite-ref: ") {
					t.Errorf("ratio %s notes %q lack the ×-ratio", r.Workload, r.Notes)
				}
			}
		})
	}
}
