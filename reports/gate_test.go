package reports

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/golden"
)

// gateResult is a result of the passing fixture runs with the given
// figures for lua: purchase p99 (µs), sales per second, commands per sale.
func gateResult(t *testing.T, p99 int64, salesPerSec, cmdsPerSale float64) *Result {
	t.Helper()
	r := fixtureResult(t)
	// The gate compares lua; set-nx-ex failing is tested on its own.
	r.Runs = []Run{r.Runs[0], r.Runs[2]}
	r.Runs[0].Latency.Purchase.P99 = p99
	r.Runs[0].SalesPerSec = salesPerSec
	r.Runs[0].CommandsPerSale = cmdsPerSale
	return r
}

func TestGate(t *testing.T) {
	base := gateResult(t, 1000, 100, 10)
	failing := fixtureResult(t)
	failing.Runs[0].Latency.Purchase.P99, failing.Runs[0].SalesPerSec, failing.Runs[0].CommandsPerSale = 1000, 100, 10
	trimmed := make([]string, len(failing.Runs[1].Reasons))
	for i, r := range failing.Runs[1].Reasons {
		trimmed[i] = strings.TrimSuffix(r, ".")
	}
	tests := []struct {
		name    string
		current *Result
		want    []Regression
	}{
		{"same figures pass", gateResult(t, 1000, 100, 10), nil},
		{"within every threshold", gateResult(t, 4000, 60, 17.5), nil},
		{"better everywhere", gateResult(t, 10, 1000, 4), nil},
		{"p99 over the limit", gateResult(t, 4001, 100, 10), []Regression{
			{Impl: "lua", Metric: MetricP99, Baseline: 1000, Current: 4001, Limit: 4},
		}},
		{"throughput under the limit", gateResult(t, 1000, 59.9, 10), []Regression{
			{Impl: "lua", Metric: MetricThroughput, Baseline: 100, Current: 59.9, Limit: 0.6},
		}},
		{"commands over the limit", gateResult(t, 1000, 100, 17.6), []Regression{
			{Impl: "lua", Metric: MetricCommands, Baseline: 10, Current: 17.6, Limit: 1.75},
		}},
		{"all three", gateResult(t, 5000, 10, 40), []Regression{
			{Impl: "lua", Metric: MetricP99, Baseline: 1000, Current: 5000, Limit: 4},
			{Impl: "lua", Metric: MetricThroughput, Baseline: 100, Current: 10, Limit: 0.6},
			{Impl: "lua", Metric: MetricCommands, Baseline: 10, Current: 40, Limit: 1.75},
		}},
		{"a safety violation fails without a baseline run", failing, []Regression{
			{Impl: "set-nx-ex", Metric: MetricSafety, Detail: "data safety violated, lock safety violated: " + strings.Join(trimmed, "; ")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Gate(base, tt.current, DefaultThresholds)
			if !reflect.DeepEqual(g.Regressions, tt.want) {
				t.Errorf("regressions:\ngot  %+v\nwant %+v", g.Regressions, tt.want)
			}
			if g.Pass() != (len(tt.want) == 0) {
				t.Errorf("pass = %v with %d regressions", g.Pass(), len(tt.want))
			}
		})
	}
}

func TestGateFailingBaselineStillFails(t *testing.T) {
	// A baseline that failed the same way does not excuse a failure.
	f := fixtureResult(t)
	g := Gate(f, f, DefaultThresholds)
	if len(g.Regressions) != 1 || g.Regressions[0].Impl != "set-nx-ex" || g.Regressions[0].Metric != MetricSafety {
		t.Errorf("regressions = %+v, want one safety regression of set-nx-ex", g.Regressions)
	}
	// Without a baseline the gate still judges the verdicts.
	if g := Gate(nil, f, DefaultThresholds); len(g.Regressions) != 1 {
		t.Errorf("no baseline: regressions = %+v, want the safety one", g.Regressions)
	}
}

func TestGateLiveness(t *testing.T) {
	r := gateResult(t, 1000, 100, 10)
	r.Runs[0].Verdict, r.Runs[0].Liveness.Status = Fail, "violated"
	r.Runs[0].Reasons = []string{"liveness: 3 units unsold while 40 buyers gave up"}
	g := Gate(nil, r, DefaultThresholds)
	want := []Regression{{Impl: "lua", Metric: MetricLiveness, Detail: "liveness violated: liveness: 3 units unsold while 40 buyers gave up"}}
	if !reflect.DeepEqual(g.Regressions, want) {
		t.Errorf("regressions = %+v, want %+v", g.Regressions, want)
	}
}

// TestGateSafetyOrLiveness: a failing run counts against safety or
// liveness by its checks' statuses and the lock's fencing, whatever its
// reasons say.
func TestGateSafetyOrLiveness(t *testing.T) {
	tests := []struct {
		name       string
		data, lock checker.Status
		fencing    bool
		reason     string
		metric     string
		detail     string
	}{
		{"overlaps of a fenced store, liveness failed", checker.OK, checker.Violated, true,
			"liveness: 3 units unsold while 40 buyers gave up", MetricLiveness, "liveness violated: "},
		{"overlaps of an unfenced lock, the reasons silent on them", checker.OK, checker.Violated, false,
			"liveness: 3 units unsold while 40 buyers gave up", MetricSafety, "lock safety violated, liveness violated: "},
		{"no overlap, reasons that name mutual exclusion", checker.OK, checker.OK, false,
			"liveness: mutual exclusion held, 3 units unsold", MetricLiveness, "liveness violated: "},
		{"data undecided", checker.Unknown, checker.OK, false,
			"linearizability unknown: check timed out after 10s", MetricSafety, "data safety unknown, liveness violated: "},
		{"data violated under a fenced store", checker.Violated, checker.Violated, true,
			"oversold 1 unit", MetricSafety, "data safety violated, liveness violated: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gateResult(t, 1000, 100, 10)
			run := &r.Runs[0]
			run.Verdict, run.Reasons = Fail, []string{tt.reason}
			run.Data.Status, run.Lock.Status, run.Lock.Fencing, run.Liveness.Status = tt.data, tt.lock, tt.fencing, checker.Violated
			if tt.lock == checker.Violated {
				run.Lock.Overlaps = 1
			}
			g := Gate(nil, r, DefaultThresholds)
			want := []Regression{{Impl: "lua", Metric: tt.metric, Detail: tt.detail + tt.reason}}
			if !reflect.DeepEqual(g.Regressions, want) {
				t.Errorf("regressions:\ngot  %+v\nwant %+v", g.Regressions, want)
			}
		})
	}
}

func TestGateNotes(t *testing.T) {
	// A baseline that sold nothing has no throughput or commands per sale
	// to compare with, and atomic is not in it.
	base := gateResult(t, 1000, 100, 10)
	base.Runs = base.Runs[:1] // lua only
	base.Runs[0].SalesPerSec, base.Runs[0].CommandsPerSale = 0, 0
	cur := gateResult(t, 1000, 100, 10)
	cur.Runs[0].SalesPerSec = 1
	g := Gate(base, cur, DefaultThresholds)
	if want := []string{"atomic: not in the baseline, not compared"}; !g.Pass() || !reflect.DeepEqual(g.Notes, want) {
		t.Errorf("regressions %+v, notes %q; want none, %q", g.Regressions, g.Notes, want)
	}

	// A baseline of another workload: its figures are not compared (a p99
	// ten times worse is no regression), safety still is, and the gate,
	// having compared nothing, does not pass.
	other := gateResult(t, 1000, 100, 10)
	other.Config.Clients, other.Config.Faults = 20000, nil
	slow := gateResult(t, 10_000, 100, 10)
	g = Gate(other, slow, DefaultThresholds)
	want := "the baseline ran another workload (clients 20000 vs 6; faults none vs pause-holder): performance not compared, safety and liveness judged"
	if g.Pass() || len(g.Regressions) > 0 || g.Uncompared != want {
		t.Errorf("pass %v, regressions %+v, uncompared:\ngot  %q\nwant %q", g.Pass(), g.Regressions, g.Uncompared, want)
	}
	failing := fixtureResult(t)
	failing.Config.Clients = 20000
	if g := Gate(other, failing, DefaultThresholds); g.Pass() {
		t.Error("a failing run passed the gate against a baseline of another workload")
	}
}

func TestRegressionString(t *testing.T) {
	tests := []struct {
		r    Regression
		want string
	}{
		{Regression{Impl: "lua", Metric: MetricP99, Baseline: 528_000, Current: 1_200_000, Limit: 1.5}, "lua: p99 latency 528ms → 1.20s (×2.27, limit ×1.50)"},
		{Regression{Impl: "lua", Metric: MetricThroughput, Baseline: 2485, Current: 1200, Limit: 0.8}, "lua: sales/s 2485.0 → 1200.0 (×0.48, limit ×0.80)"},
		{Regression{Impl: "lua", Metric: MetricCommands, Baseline: 20, Current: 30, Limit: 1.25}, "lua: commands per sale 20.00 → 30.00 (×1.50, limit ×1.25)"},
		{Regression{Impl: "none", Metric: MetricSafety, Detail: "data safety violated: oversold"}, "none: safety failed: data safety violated: oversold"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestWriteJUnit(t *testing.T) {
	base := gateResult(t, 1000, 100, 10)
	cur := fixtureResult(t)
	cur.Runs[0].Latency.Purchase.P99 = 5000
	cur.Runs[0].SalesPerSec, cur.Runs[0].CommandsPerSale = 100, 10
	g := Gate(base, cur, DefaultThresholds)
	cells := []JUnitCase{
		{Name: "watchdog × pause-holder", ClassName: "lockbench.matrix", Time: 1500e6},
		{Name: "set-nx-ex × pause-holder", ClassName: "lockbench.matrix", Time: 2e9, Failure: "oversold 1 unit <&> \"quoted\""},
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, JUnitSuite{Name: "lockbench run", Cases: GateCases(cur, g)}, JUnitSuite{Name: "lockbench matrix", Cases: cells}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "junit.golden.xml", b.Bytes())

	// What a CI system reads back: one case per run, failed as the gate says.
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tests != 5 || doc.Failures != 3 || len(doc.Suites) != 2 {
		t.Fatalf("tests %d, failures %d, suites %d; want 5, 3, 2", doc.Tests, doc.Failures, len(doc.Suites))
	}
	run := doc.Suites[0].Cases
	wantFailed := map[string]string{"lua": "lua: p99 latency 1.00ms → 5.00ms", "set-nx-ex": "set-nx-ex: safety failed", "atomic": ""}
	for _, c := range run {
		want := wantFailed[c.Name]
		switch {
		case want == "" && c.Failure != nil:
			t.Errorf("%s: failed with %q, want a pass", c.Name, c.Failure.Message)
		case want != "" && (c.Failure == nil || !strings.HasPrefix(c.Failure.Message, want)):
			t.Errorf("%s: failure %+v, want a message starting %q", c.Name, c.Failure, want)
		}
	}
	if f := doc.Suites[1].Cases[1].Failure; f == nil || f.Text != `oversold 1 unit <&> "quoted"` {
		t.Errorf("matrix cell failure = %+v, want the text escaped and read back", f)
	}
}

func TestGateCasesWithoutGate(t *testing.T) {
	cases := GateCases(fixtureResult(t), GateReport{})
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3", len(cases))
	}
	for _, c := range cases {
		if failed := c.Failure != ""; failed != (c.Name == "set-nx-ex") {
			t.Errorf("%s: failure %q", c.Name, c.Failure)
		}
	}
	if !strings.Contains(cases[1].Failure, "oversold 1 unit") {
		t.Errorf("set-nx-ex failure %q does not give the reasons", cases[1].Failure)
	}
	if cases[1].Time.Milliseconds() != 1400 {
		t.Errorf("set-nx-ex time = %v, want its 1.4s run", cases[1].Time)
	}
}

// TestBackendKind: a baseline on another version or address of the same
// kind of server compares; another kind of server does not.
func TestBackendKind(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"embedded (miniredis)", "embedded (miniredis)"},
		{"redis 7.0.15 at 127.0.0.1:6391", "redis"},
		{"redis 7.2.4 at [::1]:7000", "redis"},
		{"redis 7.0.15 in docker (lockbench/redis:local)", "redis in docker (lockbench/redis:local)"},
		{"5 × redis 7.0.15 at 127.0.0.1:6390", "5 × redis"},
		{"service at http://127.0.0.1:8081,http://127.0.0.1:8082", "service"},
		{"MariaDB 10.11.19-MariaDB-0+deb12u1 at 127.0.0.1:3306/lockbench", "MariaDB"},
		{"", ""},
	} {
		if got := BackendKind(tc.name); got != tc.want {
			t.Errorf("BackendKind(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	a := Config{Backend: "redis 7.0.15 at 127.0.0.1:6391"}
	b := Config{Backend: "redis 7.2.4 at 127.0.0.1:7000"}
	if d := WorkloadDiffs(a, b); len(d) != 0 {
		t.Errorf("another version and port of Redis is another workload: %q", d)
	}
	b.Backend = "embedded (miniredis)"
	if d := WorkloadDiffs(a, b); len(d) != 1 {
		t.Errorf("a real Redis and the embedded one: diffs %q, want the backend", d)
	}
}

// TestWorkloadDiffs: the settings that make a workload are compared, the
// arrival process among them: a baseline at another rate, or over a ramp
// where the run came at a rate, ran another workload.
func TestWorkloadDiffs(t *testing.T) {
	base := Config{Backend: "embedded", Nodes: 2, Clients: 100, Stock: 50, Attempts: 1, Ramp: Duration(time.Second), Workers: 20}
	with := func(f func(*Config)) Config {
		c := base
		f(&c)
		return c
	}
	tests := []struct {
		name string
		b    Config
		want []string
	}{
		{"same", base, nil},
		{"hold is not the workload", with(func(c *Config) { c.Hold = Duration(time.Second) }), nil},
		{"ramp", with(func(c *Config) { c.Ramp = Duration(2 * time.Second) }), []string{"ramp 1s vs 2s"}},
		{"a rate where a ramp was", with(func(c *Config) { c.Ramp, c.Rate = 0, 500 }), []string{"ramp 1s vs 0s", "rate none vs 500/s"}},
		{"another rate", with(func(c *Config) { c.Ramp, c.Rate = 0, 250.5 }), []string{"ramp 1s vs 0s", "rate none vs 250.5/s"}},
		{"pipelined", with(func(c *Config) { c.Pipeline = 64 }), []string{"pipeline 0 vs 64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkloadDiffs(base, tt.b); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("workloadDiffs = %q, want %q", got, tt.want)
			}
		})
	}
	a, b := with(func(c *Config) { c.Ramp, c.Rate = 0, 500 }), with(func(c *Config) { c.Ramp, c.Rate = 0, 600 })
	if got, want := WorkloadDiffs(a, b), []string{"rate 500/s vs 600/s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("two rates: workloadDiffs = %q, want %q", got, want)
	}
}
