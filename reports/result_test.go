package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/golden"
)

func TestNewRun(t *testing.T) {
	tests := []struct {
		impl string
		want Run // the fields not taken from the report or the latency
	}{
		{
			impl: "lua",
			want: Run{
				Impl: "lua", Backend: "redis", Nodes: 2, Clients: 6, Stock: 4,
				Verdict: Pass, Attempts: 6, Commands: 26, DurationMS: 1000,
				// Four sold from the first arrival at 100ms to the last sale
				// at 400.29ms.
				SalesPerSec: 13.32, CommandsPerSale: 6.5, CommandsPerAttempt: 4.33,
			},
		},
		{
			impl: "set-nx-ex",
			want: Run{
				Impl: "set-nx-ex", Backend: "redis", Nodes: 2, Clients: 4, Stock: 2,
				Verdict: Fail, Attempts: 4, Commands: 23, DurationMS: 1400,
				SalesPerSec: 2.5, CommandsPerSale: 7.67, CommandsPerAttempt: 5.75,
			},
		},
		{
			impl: "atomic",
			want: Run{
				Impl: "atomic", Backend: "miniredis", Nodes: 2, Clients: 4, Stock: 3,
				Verdict: Pass, Attempts: 4, Commands: 4, DurationMS: 100,
				SalesPerSec: 149.25, CommandsPerSale: 1.33, CommandsPerAttempt: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.impl, func(t *testing.T) {
			h := loadHistory(t, tt.impl)
			rep := fixtureReports[tt.impl]
			got := NewRun(h, rep)

			if !reflect.DeepEqual(got.Reasons, nonNil(rep.Reasons)) || !reflect.DeepEqual(got.Notes, nonNil(rep.Notes)) {
				t.Errorf("reasons, notes = %q, %q, want %q, %q", got.Reasons, got.Notes, rep.Reasons, rep.Notes)
			}
			// The report's parts are the run's, the overlaps a list even
			// when there are none.
			wantLock := rep.Lock
			wantLock.Pairs = nonNil(wantLock.Pairs)
			if !reflect.DeepEqual(got.Data, rep.Data) || !reflect.DeepEqual(got.Lock, wantLock) || !reflect.DeepEqual(got.Liveness, rep.Liveness) {
				t.Errorf("checks = %+v, %+v, %+v, want the report's %+v, %+v, %+v", got.Data, got.Lock, got.Liveness, rep.Data, wantLock, rep.Liveness)
			}
			if got.Lock.Pairs == nil {
				t.Errorf("overlap pairs nil, want an empty list")
			}
			if got.Sold != rep.Data.Sold || got.FirstIllegal != rep.Data.Linearizability.FirstIllegal {
				t.Errorf("sold %d, first illegal %v: want the report's promoted, %d, %v", got.Sold, got.FirstIllegal, rep.Data.Sold, rep.Data.Linearizability.FirstIllegal)
			}
			if !reflect.DeepEqual([]history.Fault(got.Faults), nonNil(h.Faults)) {
				t.Errorf("faults = %+v, want %+v", got.Faults, h.Faults)
			}
			if got.Latency.Purchase.Count != int64(len(h.Ops)) {
				t.Errorf("purchase latency count = %d, want %d", got.Latency.Purchase.Count, len(h.Ops))
			}
			if (got.Latency.Acquire == nil) != h.Header.Lockless {
				t.Errorf("acquire latency = %+v for lockless %v", got.Latency.Acquire, h.Header.Lockless)
			}
			if got.Sales.BucketMS != 100 || len(got.Sales.Sold) != int(tt.want.DurationMS/100) {
				t.Errorf("sales = %+v, want %v buckets of 100ms", got.Sales, tt.want.DurationMS/100)
			}

			got.Reasons, got.Notes, got.Faults = nil, nil, nil
			got.Data, got.Lock, got.Liveness = checker.Data{}, checker.Lock{}, checker.Liveness{}
			got.Latency, got.Sales = Latency{}, Series{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NewRun:\ngot  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestNewRunNotFired: each fault the run was planned with and never
// struck gets a note after the report's own, naming the implementation;
// the report's notes are left as they were.
func TestNewRunNotFired(t *testing.T) {
	tests := []struct {
		name     string
		report   []string
		notFired []string
		want     []string
	}{
		{"every fault fired", nil, nil, []string{}},
		{"the report's notes alone", []string{"a note"}, nil, []string{"a note"}},
		{"one never fired", nil, []string{"pause-holder"},
			[]string{"pause-holder never fired: lua has no such window, or no holder reached it in time; the run is no pass of it"}},
		{"after the report's notes, in order", []string{"a note"}, []string{"pause-holder", "slow-holder"}, []string{
			"a note",
			"pause-holder never fired: lua has no such window, or no holder reached it in time; the run is no pass of it",
			"slow-holder never fired: lua has no such window, or no holder reached it in time; the run is no pass of it",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Impl: "lua"}}
			report := slices.Grow(slices.Clone(tt.report), 4) // room to append into
			got := NewRun(h, checker.Report{Notes: report}, tt.notFired...)
			if !reflect.DeepEqual(got.Notes, tt.want) {
				t.Errorf("notes = %q, want %q", got.Notes, tt.want)
			}
			if spare := report[len(report):cap(report)]; slices.ContainsFunc(spare, func(s string) bool { return s != "" }) {
				t.Errorf("the notes were appended into the report's array: %q", spare)
			}
		})
	}
}

// TestNewRunNotFiredVerdict: a run whose asked-for fault never fired is
// no pass of it: a run the checker passed is inconclusive, one it failed
// stays a failure; the gate notes it, never a pass, and JUnit skips it.
func TestNewRunNotFiredVerdict(t *testing.T) {
	tests := []struct {
		name     string
		report   checker.Report
		notFired []string
		want     string
	}{
		{"every fault fired, checks pass", checker.Report{Pass: true}, nil, Pass},
		{"a fault never fired, checks pass", checker.Report{Pass: true}, []string{"restart"}, Inconclusive},
		{"a fault never fired, a check failed", checker.Report{Reasons: []string{"oversold"}}, []string{"restart"}, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Impl: "redlock"}}
			got := NewRun(h, tt.report, tt.notFired...)
			if got.Verdict != tt.want || !slices.Equal(got.NotFired, tt.notFired) {
				t.Fatalf("verdict %q, not fired %q; want %q, %q", got.Verdict, got.NotFired, tt.want, tt.notFired)
			}
			if tt.want != Inconclusive {
				return
			}
			res := &Result{Runs: []Run{got}}
			g := Gate(nil, res, DefaultThresholds)
			if !strings.Contains(strings.Join(g.Notes, " "), "restart never fired") {
				t.Errorf("gate notes %q: want the fault that never fired named", g.Notes)
			}
			if line := NotFiredLine(&got); line != "inconclusive: restart never fired: the run is no pass of it" {
				t.Errorf("NotFiredLine = %q", line)
			}
		})
	}
}

func TestNewRunCutShort(t *testing.T) {
	tests := []struct {
		name           string
		header, report bool
	}{
		{"by the header", true, false},
		{"by the report", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{CutShort: tt.header}}
			got := NewRun(h, checker.Report{Liveness: checker.Liveness{CutShort: tt.report}})
			if !got.CutShort || got.Verdict != Fail {
				t.Errorf("cut short, verdict = %v, %q, want true, %q", got.CutShort, got.Verdict, Fail)
			}
		})
	}
}

func TestResultGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fixtureResult(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "result.golden.json", b.Bytes())
}

func TestRoundTrip(t *testing.T) {
	want := fixtureResult(t)
	// Keys and values that JSON must escape survive the indentation.
	want.Config.Extra = map[string]string{"pool": "64", `odd "key" <&>`: "line\nbreak \u2028"}
	var first bytes.Buffer
	if err := WriteJSON(&first, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Started.Equal(want.Started) {
		t.Errorf("started = %v, want %v", got.Started, want.Started)
	}
	got.Started = want.Started
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the result:\ngot  %+v\nwant %+v", got, want)
	}
	var second bytes.Buffer
	if err := WriteJSON(&second, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Errorf("writing what was read gives different JSON:\n%s\nthen\n%s", first.Bytes(), second.Bytes())
	}
}

// TestReadOlderResult reads a result written before Run embedded the
// checker's report (its keys in another order, without the
// linearizability check's figures, the latencies' scatter or the overlaps'
// causes): the runs are
// the same, those figures zero and the scatter absent.
func TestReadOlderResult(t *testing.T) {
	got, err := ReadFile(filepath.Join("testdata", "result.older.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureResult(t)
	for i := range want.Runs {
		lin := &want.Runs[i].Linearizability
		lin.Ops, lin.Segments, lin.Elapsed = 0, 0, 0
		// nor the binned scatter of the latencies
		want.Runs[i].Sales.Scatter = nil
		// nor the overlaps' causes
		want.Runs[i].Lock.Causes = nil
		for k := range want.Runs[i].Lock.Pairs {
			want.Runs[i].Lock.Pairs[k].Cause = ""
		}
	}
	got.Started = want.Started
	if len(got.Runs) != len(want.Runs) {
		t.Fatalf("%d runs, want %d", len(got.Runs), len(want.Runs))
	}
	for i := range want.Runs {
		if !reflect.DeepEqual(got.Runs[i], want.Runs[i]) {
			t.Errorf("run %s:\ngot  %+v\nwant %+v", want.Runs[i].Impl, got.Runs[i], want.Runs[i])
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("result:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestFiles(t *testing.T) {
	want := fixtureResult(t)
	path := filepath.Join(t.TempDir(), "result.json")
	if err := WriteFile(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != len(want.Runs) || got.Runs[1].Oversold != 1 {
		t.Errorf("read back %d runs, want %d", len(got.Runs), len(want.Runs))
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading a missing file: err = %v, want %v", err, os.ErrNotExist)
	}
}

func TestReadJSONRejects(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"not JSON", "lockbench"},
		{"wrong type", `{"schema": "one"}`},
		{"other schema", `{"schema": 2, "runs": []}`},
		{"no schema", `{"runs": []}`},
		{"bad duration", `{"schema": 1, "config": {"ttl": "soon"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tt.in))
			if !errors.Is(err, ErrFormat) {
				t.Errorf("err = %v, want %v", err, ErrFormat)
			}
		})
	}
}

func TestReadJSONIgnoresNewFields(t *testing.T) {
	got, err := ReadJSON(strings.NewReader(`{"schema": 1, "later": true, "runs": [{"impl": "lua", "later": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Runs[0].Impl != "lua" {
		t.Errorf("runs = %+v, want one run of lua", got.Runs)
	}
}

// TestSchemaPromises checks that result.json carries every field the
// schema promises its readers, on a pass and on a failure alike.
func TestSchemaPromises(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fixtureResult(t)); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "version", "started", "command", "config", "runs"} {
		if _, ok := top[k]; !ok {
			t.Errorf("result.json has no %q", k)
		}
	}
	var runs []map[string]json.RawMessage
	if err := json.Unmarshal(top["runs"], &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(fixtureOrder) {
		t.Fatalf("result.json has %d runs, want %d", len(runs), len(fixtureOrder))
	}
	runKeys := []string{
		"impl", "backend", "nodes", "clients", "stock", "sold", "oversold", "duplicate_orders",
		"unsold", "lock_overlaps", "linearizability", "sales_per_sec", "commands_per_sale",
		"commands_per_attempt", "verdict", "reasons", "notes", "lock_safety", "data_safety",
		"liveness", "overlap_pairs", "attempts", "commands", "duration_ms", "cut_short", "faults",
		"sales", "latency_us",
	}
	summaryKeys := []string{"p50", "p90", "p99", "p99_9", "max", "mean", "count", "spectrum"}
	for _, run := range runs {
		var impl string
		_ = json.Unmarshal(run["impl"], &impl)
		t.Run(impl, func(t *testing.T) {
			for _, k := range runKeys {
				if _, ok := run[k]; !ok {
					t.Errorf("run has no %q", k)
				}
			}
			if string(run["reasons"]) == "null" {
				t.Errorf("reasons is null, want a list")
			}
			var lat map[string]map[string]json.RawMessage
			if err := json.Unmarshal(run["latency_us"], &lat); err != nil {
				t.Fatal(err)
			}
			names := []string{"purchase"}
			if impl != "atomic" {
				names = append(names, "acquire")
			}
			for _, name := range names {
				for _, k := range summaryKeys {
					if _, ok := lat[name][k]; !ok {
						t.Errorf("latency_us.%s has no %q", name, k)
					}
				}
			}
		})
	}
}

// TestSchemaDocumented checks that SCHEMA.md names every JSON field of
// result.json, those of the nested checker and history types included, so
// that a new field cannot go undocumented.
func TestSchemaDocumented(t *testing.T) {
	doc, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_.]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	// check looks at typ's fields and, through an embedded struct (the
	// checker's parts of a Run), at the fields JSON lifts from it.
	var check func(typ reflect.Type)
	check = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				check(f.Type)
				continue
			}
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			if !documented[name] {
				t.Errorf("SCHEMA.md does not document %s's field `%s`", typ, name)
			}
		}
	}
	for _, v := range []any{
		Result{}, Config{}, Run{}, MatrixCell{}, Latency{}, Summary{}, Point{}, Series{},
		checker.Overlap{}, checker.OpRef{}, checker.Overtake{}, history.Fault{}, checker.Window{}, Repetition{}, CellSweep{}, SweepPoint{},
	} {
		check(reflect.TypeOf(v))
	}
}

// TestSchemaExample checks that the example in SCHEMA.md is a result this
// build reads, with no field it does not know.
func TestSchemaExample(t *testing.T) {
	doc, err := os.ReadFile("SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(doc), "```json\n")
	example, _, ok2 := strings.Cut(example, "```")
	if !ok || !ok2 {
		t.Fatal("SCHEMA.md has no json example")
	}
	dec := json.NewDecoder(strings.NewReader(example))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("the example does not decode: %v", err)
	}
	if r.Schema != SchemaVersion || len(r.Runs) != 2 || r.Runs[1].Verdict != Fail {
		t.Errorf("the example decodes to schema %d with %d runs", r.Schema, len(r.Runs))
	}
}
