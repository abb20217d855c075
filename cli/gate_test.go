package cli

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/reports"
)

// The gate's fixture baselines hold a real run of none, watchdog and
// atomic with the figures the gate compares rewritten:
// baseline-slack.json has a p99 of an hour, 0.01 sales/s and 1,000
// commands per sale, which any run beats; baseline-fast.json is the same
// with a p99 of 1µs, which none can.
const (
	slackBaseline = "testdata/baseline-slack.json"
	fastBaseline  = "testdata/baseline-fast.json"
)

// smallSale is a sale of a fraction of a second on the embedded server.
var smallSale = []string{"--clients=1000", "--stock=250", "--ramp=200ms", "--seed=9"}

// junitDoc is what a CI system reads of a JUnit report.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			ClassName string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit parses the JUnit report at path and returns each case's
// failure text by name ("" for a pass).
func readJUnit(t *testing.T, path string) (junitDoc, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, raw)
	}
	cases := map[string]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases[c.Name] = ""
			if c.Failure != nil {
				cases[c.Name] = c.Failure.Text
			}
		}
	}
	return doc, cases
}

// perfExpectations adapts a case that judges performance to the
// implementations whose harness was saturated in this run: the gate
// compares none of their figures and says so (docs/health.md), while it
// still judges the others. Saturation is judged sale by sale, so on a busy
// machine one implementation of a run can be saturated and the next not.
func perfExpectations(tt gateCase, out string) gateCase {
	var want []string
	junit := map[string]string{}
	regressions, inconclusive := 0, false
	for impl, failure := range tt.junit {
		switch {
		case strings.Contains(out, "note: "+impl+": performance not compared: this run's harness was saturated"):
			junit[impl] = ""
		case strings.Contains(out, "note: "+impl+": inconclusive (the harness was saturated)"):
			junit[impl] = ""
			inconclusive = true
		default:
			junit[impl] = failure
			want = append(want, "  "+failure)
			regressions++
		}
	}
	if regressions < len(tt.junit) {
		want = append(want, "harness saturated: ")
	}
	switch {
	case regressions > 0:
		tt.wantExit = exitFail
		want = append(want, fmt.Sprintf("gate: FAIL against %s: %d regression", fastBaseline, regressions), "limit ×4.00)")
	case inconclusive:
		tt.wantExit = exitInconclusive
	default:
		tt.wantExit = exitPass
		want = append(want, "gate: pass against "+fastBaseline)
	}
	tt.want, tt.junit = want, junit
	return tt
}

// gateCase is one case of TestGate.
type gateCase struct {
	name     string
	args     []string
	wantExit int
	// perf: the case judges performance, which the gate does not
	// compare when the harness was saturated (a busy machine); its junit
	// failures then name the regression each implementation must show
	perf bool
	// stdout lines that must appear, and must not
	want, notWant []string
	// each JUnit case's failure: "" passes, otherwise a text it holds
	junit map[string]string
}

func TestGate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs sales")
	}
	tests := []gateCase{
		{
			name:     "pass",
			args:     []string{"--impl=watchdog,atomic", "--baseline=" + slackBaseline},
			wantExit: exitPass,
			want:     []string{"gate: pass against " + slackBaseline},
			notWant:  []string{"regression"},
			junit:    map[string]string{"watchdog": "", "atomic": ""},
		},
		{
			name:     "latency regression",
			perf:     true,
			args:     []string{"--impl=watchdog,atomic", "--baseline=" + fastBaseline},
			wantExit: exitFail,
			notWant:  []string{"sales/s 0.0", "commands per sale", "safety"},
			junit:    map[string]string{"watchdog": "watchdog: p99 latency 1µs → ", "atomic": "atomic: p99 latency 1µs → "},
		},
		{
			name:     "a looser threshold passes it",
			args:     []string{"--impl=atomic", "--baseline=" + fastBaseline, "--max-p99-ratio=1e9"},
			wantExit: exitPass,
			want:     []string{"gate: pass"},
			junit:    map[string]string{"atomic": ""},
		},
		{
			name:     "a baseline of another workload is not a pass",
			args:     []string{"--impl=atomic", "--baseline=" + slackBaseline, "--attempts=2"},
			wantExit: exitInconclusive,
			want:     []string{"gate: not compared against " + slackBaseline + ": the baseline ran another workload (attempts 1 vs 2): performance not compared, safety and liveness judged"},
			notWant:  []string{"gate: pass", "regression"},
			junit:    map[string]string{"atomic": ""},
		},
		{
			name:     "safety regression",
			args:     []string{"--impl=none,atomic", "--baseline=" + slackBaseline},
			wantExit: exitFail,
			want:     []string{"gate: FAIL against " + slackBaseline + ": 1 regression", "  none: safety failed: data safety violated: inventory history not linearizable"},
			junit:    map[string]string{"none": "none: safety failed: data safety violated", "atomic": ""},
		},
		{
			name:     "without a baseline the verdicts still make the cases",
			args:     []string{"--impl=none,watchdog"},
			wantExit: exitFail,
			notWant:  []string{"gate:"},
			junit:    map[string]string{"none": "none: safety failed", "watchdog": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			junit := filepath.Join(t.TempDir(), "junit.xml")
			args := append(append(append([]string{}, tt.args...), smallSale...), "--junit="+junit)
			code, out, errOut := lockbench(t, args...)
			if tt.perf {
				tt = perfExpectations(tt, out)
			}
			if code != tt.wantExit {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.wantExit, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			doc, cases := readJUnit(t, junit)
			if doc.Tests != len(tt.junit) || len(cases) != len(tt.junit) {
				t.Errorf("JUnit has %d tests (%v), want %d", doc.Tests, cases, len(tt.junit))
			}
			failures := 0
			for name, want := range tt.junit {
				got, ok := cases[name]
				switch {
				case !ok:
					t.Errorf("JUnit has no case %s", name)
				case want == "" && got != "":
					t.Errorf("JUnit case %s failed: %s", name, got)
				case want != "" && !strings.Contains(got, want):
					t.Errorf("JUnit case %s: failure %q, want it to hold %q", name, got, want)
				}
				if want != "" {
					failures++
				}
			}
			if doc.Failures != failures {
				t.Errorf("JUnit counts %d failures, want %d", doc.Failures, failures)
			}
		})
	}
}

// TestRepeat runs each implementation three times and expects the medians
// recorded, every repetition's history kept, and the gate to pass.
func TestRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs sales")
	}
	dir := filepath.Join(t.TempDir(), "out")
	args := append([]string{"--impl=watchdog,atomic", "--repeat=3", "--out=" + dir, "--baseline=" + slackBaseline}, smallSale...)
	code, out, errOut := lockbench(t, args...)
	if code != exitPass {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	res, err := reports.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Config.Extra["repeat"] != "3" {
		t.Fatalf("%d runs, repeat %q; want 2 runs of 3 repetitions", len(res.Runs), res.Config.Extra["repeat"])
	}
	for _, r := range res.Runs {
		if len(r.Repetitions) != 3 {
			t.Errorf("%s: %d repetitions, want 3", r.Impl, len(r.Repetitions))
			continue
		}
		var p99s []int64
		for k, rep := range r.Repetitions {
			want := r.Impl + ".rep" + string(rune('1'+k)) + ".history.jsonl"
			if rep.History != want {
				t.Errorf("%s repetition %d: history %q, want %q", r.Impl, k+1, rep.History, want)
			}
			if _, err := os.Stat(filepath.Join(dir, rep.History)); err != nil {
				t.Errorf("%s repetition %d: %v", r.Impl, k+1, err)
			}
			p99s = append(p99s, rep.P99)
		}
		lo, hi := min(p99s[0], p99s[1], p99s[2]), max(p99s[0], p99s[1], p99s[2])
		if med := p99s[0] + p99s[1] + p99s[2] - lo - hi; r.Latency.Purchase.P99 != med {
			t.Errorf("%s: p99 %d, want the median of %v", r.Impl, r.Latency.Purchase.P99, p99s)
		}
		if !strings.HasPrefix(r.History, r.Impl+".rep") {
			t.Errorf("%s: history %q, want one of its repetitions'", r.Impl, r.History)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("no report.html: %v", err)
	}
	if !strings.Contains(out, "gate: pass") {
		t.Errorf("no gate verdict:\n%s", out)
	}
}

func TestGateUsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"--repeat=0"}, "--repeat"},
		{[]string{"--repeat=101"}, "--repeat"},
		{[]string{"--baseline=testdata/nothing.json"}, "--baseline"},
		{[]string{"--baseline=testdata"}, "--baseline"},
		{[]string{"--max-p99-ratio=2"}, "--max-p99-ratio applies with --baseline"},
		{[]string{"--baseline=" + slackBaseline, "--min-throughput-ratio=0"}, "--min-throughput-ratio"},
		{[]string{"--baseline=" + slackBaseline, "--max-commands-ratio=-1"}, "--max-commands-ratio"},
		// A baseline without any implementation under test compares
		// nothing: refused before the sale, not a pass after it.
		{[]string{"--impl=lua", "--baseline=" + slackBaseline}, "has no run of the implementations under test"},
		{[]string{"report"}, "report: give"},
		{[]string{"report", "testdata/nothing.json"}, "report:"},
		{[]string{"report", "--bogus", "x"}, "bogus"},
	})
}

// TestReportOffline rebuilds a report from a result.json whose histories
// were not kept beside it: the report is written, with a note.
func TestReportOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a sale")
	}
	dir := filepath.Join(t.TempDir(), "run")
	code, _, errOut := lockbench(t, append([]string{"--impl=local", "--out=" + dir}, smallSale...)...)
	if code != exitFail {
		t.Fatalf("exit %d, want %d (local on two nodes): %s", code, exitFail, errOut)
	}
	bare := filepath.Join(t.TempDir(), "bare")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "result.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	code, out, errOut := lockbench(t, "report", bare, "-o", html)
	if code != exitPass || !strings.Contains(out, "wrote "+html) {
		t.Fatalf("report: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "local: its history local.history.jsonl was not found") {
		t.Errorf("no note on the missing history: %q", errOut)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<svg class="chart timeline"`, "Only the overlapping pair is drawn", "no porcupine view was saved"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if strings.Contains(string(page), `class="porcupine"`) {
		t.Errorf("the report links a porcupine view that was not kept")
	}
	// The full report from the run's own directory draws every holder.
	code, _, errOut = lockbench(t, "report", dir, "-o", html)
	if code != exitPass {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	page, _ = os.ReadFile(html)
	if strings.Contains(string(page), "Only the overlapping pair is drawn") {
		t.Errorf("the report with histories still notes them missing")
	}
	// Links are relative to where the report is written.
	rel, _ := filepath.Rel(filepath.Dir(html), filepath.Join(dir, "local.porcupine.html"))
	if want := `<a class="porcupine" href="` + filepath.ToSlash(rel) + `">`; !strings.Contains(string(page), want) || !strings.HasPrefix(rel, "..") {
		t.Errorf("report lacks %s", want)
	}
}

func TestGateAndReportHelp(t *testing.T) {
	code, out, _ := lockbench(t, "report", "--help")
	if code != exitPass || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--output") {
		t.Errorf("report --help: exit %d:\n%s", code, out)
	}
	code, out, _ = lockbench(t, "run", "--help")
	for _, flag := range []string{"--baseline", "--max-p99-ratio float", "(default 4)", "--min-throughput-ratio", "(default 0.6)", "--max-commands-ratio", "(default 1.75)", "--junit", "--repeat", "--repeat=3 --baseline="} {
		if code != exitPass || !strings.Contains(out, flag) {
			t.Errorf("run --help lacks %q", flag)
		}
	}
	code, out, _ = lockbench(t, "--help")
	if code != exitPass || !strings.Contains(out, "lockbench report") {
		t.Errorf("--help does not list report:\n%s", out)
	}
}

// TestExampleWorkflowFlags checks that the example CI workflow uses only
// flags the run command has, so that it does not rot when one is renamed.
func TestExampleWorkflowFlags(t *testing.T) {
	raw, err := os.ReadFile("../examples/lockbench-gate.yml")
	if err != nil {
		t.Fatal(err)
	}
	var o runOpts
	fs := runFlags(&o)
	seen, inCommand := 0, false
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		// A lockbench run command, and the lines it continues onto.
		if !inCommand && !strings.HasPrefix(line, "lockbench --") {
			continue
		}
		inCommand = strings.HasSuffix(line, "\\")
		for _, f := range strings.Fields(line) {
			if !strings.HasPrefix(f, "--") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
			name = strings.TrimRight(name, ",)")
			if fs.Lookup(name) == nil {
				t.Errorf("the example uses --%s, which lockbench run does not have", name)
			}
			seen++
		}
	}
	if seen < 8 {
		t.Errorf("found %d flags in the example, want the gate's command", seen)
	}
}

// TestGateNotFired: a run whose asked-for fault never fired (atomic has
// no lock holder for pause-holder to strike) is no pass: its verdict is
// inconclusive, the run and the gate exit 4 and say which fault never
// fired, never 0. atomic's sale is safe however loaded the machine.
func TestGateNotFired(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"run", nil},
		{"gate", []string{"--baseline=" + slackBaseline}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--impl=atomic", "--faults=pause-holder"}, smallSale...)
			code, out, errOut := lockbench(t, append(args, tt.args...)...)
			if code != exitInconclusive {
				t.Fatalf("exit %d, want %d (inconclusive)\n%s\n%s", code, exitInconclusive, out, errOut)
			}
			if all := out + errOut; !strings.Contains(all, "pause-holder never fired: the run is no pass of it") || !strings.Contains(strings.ToLower(all), "inconclusive") {
				t.Errorf("output does not say the run is inconclusive since pause-holder never fired:\n%s\n%s", out, errOut)
			}
		})
	}
}
