// Command testreport reads `go test -json` on stdin and prints what a plain
// `go test` would (one line per package, the output of failing tests and
// of build failures) followed by a summary that counts tests, not
// packages. It exits 1 if anything failed or no test ran. scripts/test
// uses it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json), including the
// build events `go test -json` emits since Go 1.24.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

// pkgState is what is kept of one package until it finishes: output per
// running test ("" for the package itself).
type pkgState struct {
	output map[string][]string
}

type report struct {
	pkgs                    map[string]*pkgState
	passed, failed, skipped int
	failedTests, failedPkgs []string
	pkgsOK, pkgsNoTests     int
	buildFailed             bool
}

func main() {
	r := &report{pkgs: map[string]*pkgState{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			// Not from test2json (e.g. a go command message): pass it on.
			fmt.Println(string(line))
			continue
		}
		r.handle(ev)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testreport: read go test output: %v\n", err)
		os.Exit(1)
	}
	os.Exit(r.summarize())
}

func (r *report) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{output: map[string][]string{}}
		r.pkgs[name] = p
	}
	return p
}

func (r *report) handle(ev event) {
	switch ev.Action {
	case "build-output":
		fmt.Print(ev.Output)
		return
	case "build-fail":
		r.buildFailed = true
		return
	}
	if ev.Package == "" {
		return
	}
	p := r.pkg(ev.Package)
	switch ev.Action {
	case "output":
		p.output[ev.Test] = append(p.output[ev.Test], ev.Output)
	case "pass", "skip", "fail":
		if ev.Test != "" {
			r.finishTest(p, ev)
		} else {
			r.finishPackage(p, ev)
		}
	}
}

func (r *report) finishTest(p *pkgState, ev event) {
	switch ev.Action {
	case "pass":
		r.passed++
	case "skip":
		r.skipped++
	case "fail":
		r.failed++
		r.failedTests = append(r.failedTests, ev.Package+"."+ev.Test)
		fmt.Print(strings.Join(p.output[ev.Test], ""))
	}
	delete(p.output, ev.Test)
}

func (r *report) finishPackage(p *pkgState, ev event) {
	defer delete(r.pkgs, ev.Package)
	switch ev.Action {
	case "pass":
		r.pkgsOK++
		fmt.Printf("ok  \t%s\t%.3fs\n", ev.Package, ev.Elapsed)
	case "skip":
		r.pkgsNoTests++
		fmt.Printf("?   \t%s\t[no test files]\n", ev.Package)
	case "fail":
		r.failedPkgs = append(r.failedPkgs, ev.Package)
		// Output of tests that never finished (a panic, a timeout), then
		// the package's own output, which ends with "FAIL <pkg>".
		var running []string
		for name := range p.output {
			if name != "" {
				running = append(running, name)
			}
		}
		sort.Strings(running)
		for _, name := range running {
			fmt.Print(strings.Join(p.output[name], ""))
		}
		out := strings.Join(p.output[""], "")
		fmt.Print(out)
		if !strings.Contains(out, "FAIL") {
			fmt.Printf("FAIL\t%s\n", ev.Package)
		}
	}
}

// summarize prints the summary and returns the exit code.
func (r *report) summarize() int {
	fmt.Println()
	fmt.Printf("packages: %d ok, %d failed, %d without tests\n", r.pkgsOK, len(r.failedPkgs), r.pkgsNoTests)
	for _, name := range r.failedTests {
		fmt.Printf("FAILED TEST %s\n", name)
	}
	for _, name := range r.failedPkgs {
		fmt.Printf("FAILED PACKAGE %s\n", name)
	}
	code := 0
	switch {
	case r.failed > 0 || len(r.failedPkgs) > 0 || r.buildFailed:
		code = 1
	case r.passed == 0:
		fmt.Println("no test ran")
		code = 1
	}
	fmt.Printf("tests: %d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
	return code
}
