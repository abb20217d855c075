package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
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
	// Seed seeds every random choice of the run (--seed).
	Seed int64 `json:"seed"`
	// Timeout bounds each implementation's run (--timeout).
	Timeout Duration `json:"timeout"`
	// Faults lists the faults injected (--faults), empty for none.
	Faults []string `json:"faults,omitempty"`
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
// Times inside the nested history and checker types (OverlapPairs, Faults)
// are nanoseconds since the run's start, as recorded.
type Run struct {
	// Impl is the lock implementation that guarded the sale.
	Impl string `json:"impl"`
	// Backend names the server that held the inventory.
	Backend string `json:"backend"`
	// Nodes is the number of simulated service instances.
	Nodes int `json:"nodes"`
	// Clients is the number of buyers.
	Clients int `json:"clients"`
	// Stock is the initial inventory.
	Stock int64 `json:"stock"`

	// Verdict is Pass or Fail.
	Verdict string `json:"verdict"`
	// Reasons say why the verdict is fail, one sentence each; empty on a
	// pass.
	Reasons []string `json:"reasons"`
	// Notes say what is worth knowing but did not fail the run (a fenced
	// implementation's lock overlaps, for one).
	Notes []string `json:"notes"`
	// DataSafety is the status of the data-safety check: ok, violated,
	// illegal or unknown.
	DataSafety checker.Status `json:"data_safety"`
	// LockSafety is the status of the lock-safety check: ok, violated, or
	// n/a for an implementation without a lock.
	LockSafety checker.Status `json:"lock_safety"`
	// Liveness is the status of the liveness check: ok or violated.
	Liveness checker.Status `json:"liveness"`
	// Linearizability is the status of the porcupine check of the
	// inventory: ok, illegal, or unknown when the search ran out of time.
	Linearizability checker.Status `json:"linearizability"`

	// Sold counts attempts that told their buyer the unit was theirs.
	Sold int64 `json:"sold"`
	// Orders is the number of orders the store recorded.
	Orders int64 `json:"orders"`
	// FinalStock is the inventory counter's value after the run.
	FinalStock int64 `json:"final_stock"`
	// Oversold counts orders not backed by stock.
	Oversold int64 `json:"oversold"`
	// LostOrders counts confirmed sales whose order the store lost.
	LostOrders int64 `json:"lost_orders"`
	// DuplicateOrders counts orders beyond a user's first.
	DuplicateOrders int64 `json:"duplicate_orders"`
	// DuplicateSales counts users the history shows sold more than once
	// while the store shows one order.
	DuplicateSales int64 `json:"duplicate_sales"`
	// Mismatched counts answers that contradict the stock their attempt
	// read (sold after reading none, "sold out" after reading a unit).
	Mismatched int64 `json:"mismatched"`
	// Unsold is the stock left when buyers were sent away (zero otherwise).
	Unsold int64 `json:"unsold"`
	// GaveUp counts buyers whose last attempt ended without an answer on
	// the stock.
	GaveUp int `json:"gave_up"`
	// Refused counts writes the store refused with no newer fencing token
	// taken before.
	Refused int `json:"refused"`
	// SentAway counts buyers left without a unit while the sale may have
	// had one: gave up, refused with no newer token, or told "sold out"
	// after reading a unit.
	SentAway int `json:"sent_away"`
	// LostReleases counts releases that found the lock no longer held.
	LostReleases int `json:"lost_releases"`
	// Indeterminate counts attempts whose write outcome is unknown.
	Indeterminate int `json:"indeterminate"`
	// LockOverlaps counts critical sections that began while a different
	// owner still held the lock.
	LockOverlaps int `json:"lock_overlaps"`
	// OverlapPairs names the first few overlaps.
	OverlapPairs []checker.Overlap `json:"overlap_pairs"`
	// Overtakes counts the buyers granted the lock before one who had
	// asked for it more than checker.FairnessMargin earlier and was still
	// waiting (0 for a sale without a lock).
	Overtakes int64 `json:"overtakes"`

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
	// CutShort is true when --timeout or an interrupt ended the run.
	CutShort bool `json:"cut_short"`
	// CutBy says what cut the run short: timeout or interrupt; empty
	// when nothing did.
	CutBy string `json:"cut_by,omitempty"`
	// Faults lists the faults injected while the run went on.
	Faults []history.Fault `json:"faults"`
	// Sales is units sold over time.
	Sales Series `json:"sales"`
	// History is the path of the saved history file, relative to the
	// directory of result.json; empty when the history was not kept.
	History string `json:"history,omitempty"`
	// FirstIllegal bounds the first segment of the inventory history that
	// the linearizability check proved illegal (ns since the run's start);
	// nil unless Linearizability is illegal.
	FirstIllegal *checker.Window `json:"first_illegal,omitempty"`
	// Visualization is the path of porcupine's HTML view of the first
	// illegal segment, relative to the directory of result.json; empty
	// when none was written.
	Visualization string `json:"visualization,omitempty"`
	// Repetitions holds each repetition's figures when --repeat ran the
	// implementation more than once (see CombineRepetitions); empty
	// otherwise.
	Repetitions []Repetition `json:"repetitions,omitempty"`
}

// NewRun builds the Run of history h judged by rep. History is left empty:
// only the caller knows where the history was saved.
func NewRun(h *history.History, rep checker.Report) Run {
	m := measure(h)
	verdict := Fail
	if rep.Pass {
		verdict = Pass
	}
	return Run{
		Impl:    h.Header.Impl,
		Backend: h.Header.Backend,
		Nodes:   h.Header.Nodes,
		Clients: h.Header.Clients,
		Stock:   h.Header.Stock,

		Verdict:         verdict,
		Reasons:         nonNil(rep.Reasons),
		Notes:           nonNil(rep.Notes),
		DataSafety:      rep.Data.Status,
		LockSafety:      rep.Lock.Status,
		Liveness:        rep.Liveness.Status,
		Linearizability: rep.Data.Linearizability.Status,

		Sold:            m.sold,
		Orders:          rep.Data.Orders,
		FinalStock:      rep.Data.FinalStock,
		Oversold:        rep.Data.Oversold,
		LostOrders:      rep.Data.LostOrders,
		DuplicateOrders: rep.Data.DuplicateOrders,
		DuplicateSales:  rep.Data.DuplicateSales,
		Mismatched:      rep.Data.Mismatched,
		Unsold:          rep.Liveness.Unsold,
		GaveUp:          rep.Liveness.GaveUp,
		Refused:         rep.Liveness.Refused,
		SentAway:        rep.Liveness.SentAway,
		LostReleases:    rep.Lock.Lost,
		Indeterminate:   rep.Data.Indeterminate,
		LockOverlaps:    rep.Lock.Overlaps,
		OverlapPairs:    nonNil(rep.Lock.Pairs),
		Overtakes:       rep.Lock.Overtakes,

		Latency:            m.latency,
		SalesPerSec:        m.salesPerSec,
		CommandsPerSale:    m.cmdsPerSale,
		CommandsPerAttempt: m.cmdsPerAttempt,
		Attempts:           m.attempts,
		Commands:           h.Header.Commands,
		DurationMS:         math.Round(float64(h.Header.Duration)/1e3) / 1e3,
		CutShort:           h.Header.CutShort || rep.Liveness.CutShort,
		CutBy:              string(h.Header.CutBy),
		Faults:             nonNil(h.Faults),
		Sales:              m.sales,
		FirstIllegal:       rep.Data.Linearizability.FirstIllegal,
	}
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
// ignored, so that an older build reads a newer file of the same schema.
func ReadJSON(r io.Reader) (*Result, error) {
	var res Result
	if err := json.NewDecoder(r).Decode(&res); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if res.Schema != SchemaVersion {
		return nil, fmt.Errorf("%w: schema %d, this build reads %d", ErrFormat, res.Schema, SchemaVersion)
	}
	return &res, nil
}

// WriteFile writes r to path as WriteJSON does.
func WriteFile(path string, r *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJSON(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads the result at path.
func ReadFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
