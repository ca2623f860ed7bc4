package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// apidiffScenarios are the scenario files (without .json) that TestAPIDiff
// replays. Each runs against its own fresh daemon. Add a scenario here when
// the server implements it.
var apidiffScenarios = []string{
	"s01-configmap-crud",
	"s02-errors",
	"s03-generate-name",
	"s04-paging", "s05-list-rv-match", "s06-get-rv", "s07-watch-from-rv", "s08-watch-no-rv", "s10-watch-label-selector",
	"s16-json-patch", "s17-merge-patch", "s18-strategic-merge-patch", "s19-ssa-basics", "s20-ssa-conflicts", "s22-dry-run", "s23-finalizers",
	"s25-deletecollection",
	"s26-selectors",
	"s27-immutable-configmap",
	"s28-secrets",
	"s29-leases",
	"s30-namespace-lifecycle",
	"s33-discovery",
	"s34-field-validation",
}

// goldenServer names the golden transcript directory under golden/.
const goldenServer = "kube-apiserver-1.36.3"

// apidiffDir is ../shared/apidiff next to the module root, or APIDIFF_DIR.
func apidiffDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("APIDIFF_DIR")
	if dir == "" {
		dir = filepath.Join(filepath.Dir(moduleRoot), "shared", "apidiff")
	}
	if _, err := os.Stat(filepath.Join(dir, "apidiff.py")); err != nil {
		t.Fatalf("apidiff harness not found: %v (set APIDIFF_DIR to the directory holding apidiff.py)", err)
	}
	return dir
}

// TestAPIDiff replays the apidiff scenarios against a fresh daemon each and
// compares the transcripts with kube-apiserver's. Differences listed in
// apidiffAllowed are reported but do not fail; every other difference does,
// and is printed in apidiff's format (A = kube-apiserver, B = edgeapi).
func TestAPIDiff(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found in PATH: TestAPIDiff runs apidiff.py with it (%v)", err)
	}
	dir := apidiffDir(t)
	for _, name := range apidiffScenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scenario := filepath.Join(dir, "scenarios", name+".json")
			golden := filepath.Join(dir, "golden", goldenServer, name+".json")
			for _, f := range []string{scenario, golden} {
				if _, err := os.Stat(f); err != nil {
					t.Fatalf("missing apidiff file: %v", err)
				}
			}
			// As the golden transcripts were recorded: over TLS, with
			// RBAC, a token-auth-file admin in system:masters and a
			// user alice with no bindings.
			tokens := filepath.Join(t.TempDir(), "tokens.csv")
			if err := os.WriteFile(tokens, []byte("x,admin,admin-uid,\"system:masters\"\ny,alice,alice-uid\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			d := StartDaemon(t, DaemonOptions{TLS: true, Args: []string{"--token-auth-file", tokens, "--authorization-mode", "RBAC"}})

			// A hang guard: scenarios take seconds.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out := t.TempDir()
			run := exec.CommandContext(ctx, python, filepath.Join(dir, "apidiff.py"), "run",
				"--server", d.URL, "--token-admin", "x", "--token-alice", "y",
				"--out", out, scenario)
			if msg, err := run.CombinedOutput(); err != nil {
				t.Fatalf("apidiff.py run: %v\n%s", err, msg)
			} else if strings.Contains(string(msg), " :: ") {
				// apidiff prints steps whose request failed or whose capture
				// was missing; the diff below shows their effect.
				t.Logf("apidiff.py run:\n%s", msg)
			}

			// diff compares whole directories: give it just this golden file.
			goldenDir := t.TempDir()
			data, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(goldenDir, name+".json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			diff := exec.CommandContext(ctx, python, filepath.Join(dir, "apidiff.py"), "diff",
				"--max-per-step", "1000000", goldenDir, out)
			msg, err := diff.CombinedOutput()
			if err != nil && diff.ProcessState.ExitCode() != 1 {
				t.Fatalf("apidiff.py diff: %v\n%s", err, msg)
			}
			diffs, other := parseAPIDiff(string(msg))
			if len(other) > 0 {
				t.Errorf("apidiff.py diff reported problems outside steps:\n%s", strings.Join(other, "\n"))
			}
			steps, err := loadTranscriptSteps(filepath.Join(out, name+".json"))
			if err != nil {
				t.Fatalf("read edgeapi transcript: %v", err)
			}

			var unexpected []apidiffLine
			allowed := map[string][]string{} // step -> allowed differences, for the log
			var allowedSteps []string
			for _, dl := range diffs {
				a, ok := findAllowed(name, dl.Step, dl.Path)
				if !ok {
					unexpected = append(unexpected, dl)
					continue
				}
				if a.Accept != nil {
					if err := a.Accept(steps[dl.Step]); err != nil {
						dl.Text += fmt.Sprintf("\n    allowed only when %s: %v", a.Reason, err)
						unexpected = append(unexpected, dl)
						continue
					}
				}
				if allowed[dl.Step] == nil {
					allowedSteps = append(allowedSteps, dl.Step)
				}
				allowed[dl.Step] = append(allowed[dl.Step], dl.Text)
			}
			for _, step := range allowedSteps {
				a, _ := findAllowed(name, step, "")
				t.Logf("step %s: %d allowed difference(s): %s", step, len(allowed[step]), a.Reason)
			}
			if len(unexpected) > 0 {
				var b strings.Builder
				for _, dl := range unexpected {
					b.WriteString(dl.Text)
					b.WriteString("\n")
				}
				t.Errorf("%s: %d difference(s) from %s (A = kube-apiserver, B = edgeapi):\n%s",
					name, len(unexpected), goldenServer, b.String())
			}
		})
	}
}

// apidiffLine is one difference printed by `apidiff.py diff`:
//
//	NAME.json :: STEP :: PATH
//	    A: <golden value>
//	    B: <edgeapi value>
//
// PATH is empty when a whole step is missing on one side.
type apidiffLine struct {
	Step, Path string
	Text       string // the lines as printed
}

// parseAPIDiff splits apidiff's diff output into differences and any other
// unexpected lines (a transcript only on one side). Summary and "requests
// differ" warning lines are dropped.
func parseAPIDiff(out string) (diffs []apidiffLine, other []string) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var cur *apidiffLine
	flush := func() {
		if cur != nil {
			diffs = append(diffs, *cur)
			cur = nil
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "    A: ") || strings.HasPrefix(line, "    B: ") {
			if cur != nil {
				cur.Text += "\n" + line
			}
			continue
		}
		flush()
		name, rest, ok := strings.Cut(line, " :: ")
		switch {
		case ok && strings.HasSuffix(name, ".json"):
			if strings.HasSuffix(rest, ": warning: requests differ (scenario files differ?)") {
				other = append(other, line)
				continue
			}
			step, path, _ := strings.Cut(rest, " :: ")
			cur = &apidiffLine{Step: step, Path: path, Text: line}
		case strings.HasSuffix(line, "difference(s)"):
			// "NAME.json: N difference(s)" and the final total
		case strings.TrimSpace(line) == "":
		default:
			other = append(other, line)
		}
	}
	flush()
	return diffs, other
}

// transcriptStep is one step of an apidiff transcript as written by
// `apidiff.py run`, already normalized.
type transcriptStep struct {
	ID       string `json:"id"`
	Error    string `json:"error"`
	Response struct {
		Status  int                        `json:"status"`
		Headers map[string]json.RawMessage `json:"headers"`
		Body    json.RawMessage            `json:"body"`
	} `json:"response"`
}

func loadTranscriptSteps(path string) (map[string]transcriptStep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tr struct {
		Steps []transcriptStep `json:"steps"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	steps := make(map[string]transcriptStep, len(tr.Steps))
	for _, s := range tr.Steps {
		steps[s.ID] = s
	}
	return steps, nil
}

func TestParseAPIDiff(t *testing.T) {
	out := `s02-errors.json :: rv-on-create :: status
    A: 500
    B: 422
s02-errors.json :: rv-on-create :: body.reason
    A: "<missing>"
    B: "Invalid"
s02-errors.json :: gone
    A: "<step>"
    B: "<missing>"
s02-errors.json: 3 difference(s)
x.json: only in /tmp/a
1 transcript(s), 3 difference(s)
`
	diffs, other := parseAPIDiff(out)
	got := make([]string, 0, len(diffs))
	for _, d := range diffs {
		got = append(got, d.Step+"|"+d.Path)
	}
	want := []string{"rv-on-create|status", "rv-on-create|body.reason", "gone|"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("diffs = %q, want %q", got, want)
	}
	if len(other) != 1 || other[0] != "x.json: only in /tmp/a" {
		t.Errorf("other = %q, want the only-in line", other)
	}
	if want := "s02-errors.json :: rv-on-create :: status\n    A: 500\n    B: 422"; diffs[0].Text != want {
		t.Errorf("diffs[0].Text = %q, want %q", diffs[0].Text, want)
	}
}
