package reports

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
)

// SchemaVersion is the version of the result.json format written by this
// build. It changes when a field changes meaning or goes away, not when one
// is added.
const SchemaVersion = 1

// The verdicts of a run.
const (
	// Pass means the checker found the run safe and live.
	Pass = "pass"
	// Fail means it did not; the run's reasons say why.
	Fail = "fail"
	// Inconclusive means no check failed, but the run is no pass: liveness
	// could not be judged, the harness itself being saturated
	// (Run.Saturation says how) while liveness did not hold (Run.Unjudged
	// says what it found); or a fault the run asked for never fired
	// (Run.NotFired), so the run tested nothing of it.
	Inconclusive = "inconclusive"
	// Interrupted means no check failed on what was recorded, but the
	// run was cut short by something other than the lock: an interrupt
	// (Ctrl-C) or a server lost during the sale (Liveness.CutBy).
	// Liveness was not judged; a note says why.
	Interrupted = "interrupted"
)

// ErrFormat reports a result file this build cannot read.
var ErrFormat = errors.New("reports: bad format")

// Result is the content of result.json: what was run, with which flags,
// and one Run per implementation.
type Result struct {
	// Schema is the format's version, SchemaVersion when written by this
	// build.
	Schema int `json:"schema"`
	// Version is lockbench's version.
	Version string `json:"version"`
	// Started is when the benchmark began (RFC 3339).
	Started time.Time `json:"started"`
	// Command is the command line that reproduces the benchmark, quoted
	// for a POSIX shell.
	Command string `json:"command"`
	// Config holds the flags in force.
	Config Config `json:"config"`
	// Runs holds one entry per implementation, in the order they ran.
	Runs []Run `json:"runs"`
	// Matrix holds the cells of `lockbench matrix`, absent otherwise.
	Matrix []MatrixCell `json:"matrix,omitempty"`
	// Incomplete, when set, says why the matrix holds fewer cells than
	// were chosen: still running (the file is rewritten after each cell),
	// interrupted, or ended by an error. Empty for a matrix that ran
	// every cell, and for every other command.
	Incomplete string `json:"incomplete,omitempty"`
	// NotRun lists the implementations chosen that never ran, because
	// the run was interrupted, or a server lost, before their turn.
	NotRun []string `json:"not_run,omitempty"`
}

// Config is the flags a benchmark ran with. Its JSON keys are the flags'
// names, so that a result can be read beside the command line.
type Config struct {
	// Impls lists the implementations run (--impl).
	Impls []string `json:"impl"`
	// Backend names the server that held the inventory (--backend).
	Backend string `json:"backend"`
	// MySQL names the MySQL server and its version when the mysql
	// implementations ran (--mysql-dsn).
	MySQL string `json:"mysql,omitempty"`
	// Nodes is the number of simulated service instances (--nodes).
	Nodes int `json:"nodes"`
	// NodeMode says where the nodes ran (--node-mode): process, docker or
	// remote; empty for goroutines of lockbench's process (inproc).
	NodeMode string `json:"node_mode,omitempty"`
	// Clients is the number of buyers (--clients).
	Clients int `json:"clients"`
	// Stock is the initial inventory (--stock).
	Stock int64 `json:"stock"`
	// Attempts is how many purchase attempts each buyer may make
	// (--attempts).
	Attempts int `json:"attempts"`
	// Ramp is the span over which buyers arrive (--ramp); zero with Rate.
	Ramp Duration `json:"ramp"`
	// Rate is buyers per second of an open arrival model (--rate), zero
	// when they arrived over Ramp.
	Rate float64 `json:"rate,omitempty"`
	// TTL is the lock's lease (--ttl).
	TTL Duration `json:"ttl"`
	// Hold is how long a buyer stays in its critical section (--hold).
	Hold Duration `json:"hold"`
	// Workers is the size of each node's worker pool (--workers).
	Workers int `json:"workers"`
	// Pipeline is the most buyers' commands allowed to share a round trip
	// (--pipeline), zero when each had its own.
	Pipeline int `json:"pipeline,omitempty"`
	// Seed seeds every random choice of the run (--seed).
	Seed int64 `json:"seed"`
	// Timeout bounds each implementation's run (--timeout).
	Timeout Duration `json:"timeout"`
	// Faults lists the faults injected (--faults), empty for none.
	Faults []string `json:"faults,omitempty"`
	// Items is how many products were on sale (--items), zero for one.
	Items int `json:"items,omitempty"`
	// Cart is the most items one buyer took (--cart), zero for one.
	Cart int `json:"cart,omitempty"`
	// Reads is the percentage of buyers who only read (--reads).
	Reads int `json:"reads,omitempty"`
	// Extra holds any other flag in force, by name, with its value as
	// typed; it keeps a new flag on record before it earns a field.
	Extra map[string]string `json:"extra,omitempty"`
}

// Duration is a time.Duration that reads and writes in JSON as Go's
// duration syntax ("1.5s", "30ms"), the syntax of the flags it records.
type Duration time.Duration

// String returns the duration in Go's syntax.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText encodes the duration in Go's syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText decodes a duration in Go's syntax.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Run is the outcome of one implementation's run: the workload, the
// checker's verdict, and the performance measured from the history.
//
// The checker's report is embedded rather than copied: its Data, Liveness
// and Lock parts are fields of Run (r.Oversold, r.Lock.Overlaps), and
// their JSON keys are the run's own, so result.json stays one flat object
// per run. Times inside the checker types (OverlapPairs, FirstIllegal) and
// the faults are nanoseconds since the run's start, as recorded.
type Run struct {
	// Impl is the lock implementation that guarded the sale.
	Impl string `json:"impl"`
	// Backend names the server that held the inventory.
	Backend string `json:"backend"`
	// Nodes is the number of simulated service instances.
	Nodes int `json:"nodes"`
	// Clients is the number of buyers.
	Clients int `json:"clients"`
	// Stock is the initial inventory, every item's units together.
	Stock int64 `json:"stock"`

	// Verdict is Pass, Fail or Inconclusive.
	Verdict string `json:"verdict"`
	// Reasons say why the verdict is fail, one sentence each; empty on a
	// pass.
	Reasons []string `json:"reasons"`
	// Notes say what is worth knowing but did not fail the run (a fenced
	// implementation's lock overlaps, for one).
	Notes []string `json:"notes"`

	// Data is the data-safety check: its status (data_safety), the
	// linearizability check of the inventory, and the audit of the orders
	// and the stock.
	checker.Data
	// Liveness is the liveness check: its status, the buyers sent away,
	// the refused writes, whether the run was cut short and by what.
	checker.Liveness
	// Lock is the lock-safety check: its status, the overlapping critical
	// sections, lost releases and overtakes.
	checker.Lock
	// ClockError is the checker's blind spot (checker.Report.ClockError):
	// the clock error ε, in nanoseconds, of a history whose nodes ran on
	// clocks of their own; overlaps no longer than 2ε cannot be seen, and
	// the instants the checks name are on the timeline widened by ε. Zero,
	// and left out, when every timestamp came from one clock.
	ClockError int64 `json:"clock_error_ns,omitempty"`
	// Saturation says how the harness was saturated beyond what the
	// workload tolerates, one sentence each with its measurement and
	// bound (checker.Report.Saturation); empty when it was healthy. The
	// run's performance figures are then not the lock's: the gate
	// compares none of them.
	Saturation []string `json:"saturation,omitempty"`
	// Unjudged are the liveness findings set aside because the harness
	// was saturated (checker.Report.Unjudged).
	Unjudged []string `json:"unjudged,omitempty"`
	// Health is what the harness measured of itself during the run
	// (history.Health); nil for a history that did not record it.
	Health *history.Health `json:"health,omitempty"`

	// Latency holds the latency distributions, in microseconds.
	Latency Latency `json:"latency_us"`
	// SalesPerSec is units sold per second, from the first arrival to the
	// last sale, rounded to 0.01; zero when nothing sold.
	SalesPerSec float64 `json:"sales_per_sec"`
	// CommandsPerSale is server commands over units sold, rounded to 0.01;
	// zero when nothing sold. Buyers who found the stock empty count too,
	// so it is bounded below by the workload's shape.
	CommandsPerSale float64 `json:"commands_per_sale"`
	// CommandsPerAttempt is server commands over purchase attempts,
	// rounded to 0.01; the figure to compare with the design's minimum.
	CommandsPerAttempt float64 `json:"commands_per_attempt"`
	// Attempts counts purchase attempts a worker picked up.
	Attempts int64 `json:"attempts"`
	// Commands counts the server commands the buyers sent.
	Commands int64 `json:"commands"`
	// DurationMS is the run's length in milliseconds, to the microsecond.
	DurationMS float64 `json:"duration_ms"`
	// Faults lists the faults injected while the run went on.
	Faults FaultWindows `json:"faults"`
	// NotFired names the faults the run asked for that never fired
	// (harness.Result.NotFired): a run that would otherwise pass is then
	// inconclusive, not a pass of those faults.
	NotFired []string `json:"not_fired,omitempty"`
	// Sales is units sold over time.
	Sales Series `json:"sales"`
	// History is the path of the saved history file, relative to the
	// directory of result.json; empty when the history was not kept.
	History string `json:"history,omitempty"`
	// Visualization is the path of porcupine's HTML view of the first
	// illegal segment, relative to the directory of result.json; empty
	// when none was written.
	Visualization string `json:"visualization,omitempty"`
	// Repetitions holds each repetition's figures when --repeat ran the
	// implementation more than once (see CombineRepetitions); empty
	// otherwise.
	Repetitions []Repetition `json:"repetitions,omitempty"`
}

// NewRun builds the Run of history h judged by rep. notFired names the
// faults the run was planned with that h records no injection of
// (harness.Result.NotFired): each gets a note, since a verdict under such
// a fault rests on no fault at all, and a run that would pass is
// inconclusive instead: a fault that never fired was not passed. History
// is left empty: only the caller knows where the history was saved.
func NewRun(h *history.History, rep checker.Report, notFired ...string) Run {
	m := measure(h)
	verdict := Fail
	switch {
	case rep.Pass && len(notFired) > 0:
		verdict = Inconclusive
	case rep.Pass:
		verdict = Pass
	case rep.Interrupted && len(rep.Reasons) == 0:
		verdict = Interrupted
	case rep.Inconclusive:
		verdict = Inconclusive
	}
	r := Run{
		Impl:    h.Header.Impl,
		Backend: h.Header.Backend,
		Nodes:   h.Header.Nodes,
		Clients: h.Header.Clients,
		Stock:   h.Header.Stock * int64(h.Header.ItemCount()),

		Verdict:  verdict,
		Reasons:  nonNil(rep.Reasons),
		Notes:    nonNil(notes(rep.Notes, h.Header.Impl, notFired)),
		Data:     rep.Data,
		Liveness: rep.Liveness,
		Lock:     rep.Lock,

		ClockError: rep.ClockError,
		Saturation: rep.Saturation,
		Unjudged:   rep.Unjudged,
		Health:     h.Header.Health,

		Latency:            m.latency,
		SalesPerSec:        m.salesPerSec,
		CommandsPerSale:    m.cmdsPerSale,
		CommandsPerAttempt: m.cmdsPerAttempt,
		Attempts:           m.attempts,
		Commands:           h.Header.Commands,
		DurationMS:         math.Round(float64(h.Header.Duration)/1e3) / 1e3,
		Faults:             nonNil(h.Faults),
		NotFired:           slices.Clip(notFired),
		Sales:              m.sales,
	}
	r.Lock.Pairs = nonNil(r.Lock.Pairs)
	// The history's word on a cut stands even against a report that
	// missed it.
	if h.Header.CutShort {
		r.CutShort, r.CutBy = true, cmp.Or(r.CutBy, h.Header.CutBy)
	}
	return r
}

// notes are the report's notes, then one for each fault of notFired.
func notes(report []string, impl string, notFired []string) []string {
	out := slices.Clip(report)
	for _, name := range notFired {
		out = append(out, fmt.Sprintf("%s never fired: %s has no such window, or no holder reached it in time; the run is no pass of it", name, impl))
	}
	return out
}

// nonNil returns s, or an empty slice when s is nil, so that a list is
// written as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteJSON writes r as indented JSON, with each list of numbers (a
// spectrum point, the sales series) on one line.
func WriteJSON(w io.Writer, r *Result) error {
	compact, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := indentJSON(&b, compact, 0); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err = w.Write(b.Bytes())
	return err
}

// ReadJSON reads a Result written by WriteJSON. Fields it does not know are
// ignored, so that an older build reads a newer file of the same schema;
// figures no run could have (a sales series whose parts disagree, a
// length beyond any run) are ErrFormat, before anything is drawn from
// them.
func ReadJSON(r io.Reader) (*Result, error) {
	var res Result
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if res.Schema != SchemaVersion {
		return nil, fmt.Errorf("%w: schema %d, this build reads %d", ErrFormat, res.Schema, SchemaVersion)
	}
	if err := res.checkRuns(); err != nil {
		return nil, err
	}
	return &res, nil
}

// WriteFile writes r to path as WriteJSON does, atomically: to a
// temporary file beside path, then renamed over it, so that a reader (or
// a run killed while writing) finds the old file or the new one, never
// half of one.
func WriteFile(path string, r *Result) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := WriteJSON(f, r); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	// CreateTemp makes the file 0600; result.json is read by others.
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ReadFile reads the result at path, which must be a regular file of
// no more than 256 MiB.
func ReadFile(path string) (*Result, error) {
	f, size, err := history.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > maxResultSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than any result (%d at most)", path, ErrFormat, size, maxResultSize)
	}
	r, err := ReadJSON(io.LimitReader(f, maxResultSize))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// FaultWindows are a run's fault injections as result.json writes them:
// each instant's unit in its key (start_ns, end_ns). A result written
// before the keys said so (start, end) still reads.
type FaultWindows []history.Fault

// faultJSON is a fault window in result.json; Start and End are the
// older keys, read only.
type faultJSON struct {
	Name    string `json:"name"`
	Node    int    `json:"node"`
	Client  int32  `json:"client"`
	StartNS int64  `json:"start_ns"`
	EndNS   int64  `json:"end_ns,omitempty"`
	Params  string `json:"params,omitempty"`
	Start   *int64 `json:"start,omitempty"`
	End     *int64 `json:"end,omitempty"`
}

// MarshalJSON writes the windows with start_ns and end_ns, [] for none.
func (fw FaultWindows) MarshalJSON() ([]byte, error) {
	out := make([]faultJSON, len(fw))
	for i, f := range fw {
		out[i] = faultJSON{Name: f.Name, Node: f.Node, Client: f.Client, StartNS: f.Start, EndNS: f.End, Params: f.Params}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the windows under either pair of keys.
func (fw *FaultWindows) UnmarshalJSON(b []byte) error {
	var in []faultJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*fw = make(FaultWindows, len(in))
	for i, f := range in {
		start, end := f.StartNS, f.EndNS
		if f.Start != nil && start == 0 {
			start = *f.Start
		}
		if f.End != nil && end == 0 {
			end = *f.End
		}
		(*fw)[i] = history.Fault{Name: f.Name, Node: f.Node, Client: f.Client, Start: start, End: end, Params: f.Params}
	}
	return nil
}
