package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// TestSaturation judges fixtures as if their harness had measured the
// given health: a saturated harness makes a liveness failure
// inconclusive, never a safety failure, and never touches a pass.
func TestSaturation(t *testing.T) {
	// A busy harness on a quiet machine: its threads wait for each
	// other (CPUWait), but no other process competes.
	healthy := history.Health{Node: -1, CPUs: 2, Cores: 2, CPUWait: 0.6, Others: 0.4}
	starved := healthy
	starved.Others, starved.CPUWait = 8.2, 0.8
	tests := []struct {
		name   string
		file   string
		lease  time.Duration
		health *history.Health
		// want: the verdict, the liveness status, and a word every
		// saturation sentence must hold (empty: no saturation).
		pass, inconclusive bool
		live               Status
		saturation         string
		reasons, unjudged  int
	}{
		{name: "timeout, no health recorded", file: "bad-timeout.jsonl", live: Violated, reasons: 2},
		{name: "timeout, healthy harness", file: "bad-timeout.jsonl", health: &healthy, live: Violated, reasons: 2},
		{name: "timeout, starved of CPU", file: "bad-timeout.jsonl", health: &starved, inconclusive: true, live: Inconclusive, saturation: "8.2 tasks", unjudged: 2},
		{name: "crashed holder, starved", file: "bad-unsold.jsonl", health: &starved, inconclusive: true, live: Inconclusive, saturation: "other processes", unjudged: 1},
		{name: "oversell stays a failure", file: "bad-overlap.jsonl", health: &starved, live: OK, saturation: "other processes", reasons: 3},
		{name: "refused writes stay a failure", file: "bad-refuse-all.jsonl", health: &starved, live: Violated, saturation: "other processes", reasons: 2},
		{name: "a pass stays a pass", file: "ok-sequential.jsonl", health: &starved, pass: true, live: OK, saturation: "other processes"},
		{name: "stall of a third of the lease", file: "bad-timeout.jsonl", lease: 30 * time.Millisecond, health: &history.Health{StallMax: 10 * ms, Others: -1}, inconclusive: true, live: Inconclusive, saturation: "stood still for 10ms", unjudged: 2},
		{name: "stall under a third of the lease", file: "bad-timeout.jsonl", lease: 30 * time.Millisecond, health: &history.Health{StallMax: 9 * ms, Others: -1}, live: Violated, reasons: 2},
		{name: "stall without a lease", file: "bad-timeout.jsonl", health: &history.Health{StallMax: 9000 * ms, Others: -1}, live: Violated, reasons: 2},
		{name: "scheduler latency of a third of the lease", file: "bad-timeout.jsonl", lease: 30 * time.Millisecond, health: &history.Health{SchedMax: 10 * ms, Others: -1}, inconclusive: true, live: Inconclusive, saturation: "scheduled", unjudged: 2},
		{name: "arrivals late", file: "bad-timeout.jsonl", health: &history.Health{LagP99: 100 * ms, Others: -1}, inconclusive: true, live: Inconclusive, saturation: "arrival schedule", unjudged: 2},
		{name: "arrivals nearly on time", file: "bad-timeout.jsonl", health: &history.Health{LagP99: 99 * ms, Others: -1}, live: Violated, reasons: 2},
		{name: "embedded server slow", file: "bad-timeout.jsonl", health: &history.Health{ServerPingMax: 1000 * ms, Others: -1}, inconclusive: true, live: Inconclusive, saturation: "embedded server", unjudged: 2},
		{name: "others unknown", file: "bad-timeout.jsonl", health: &history.Health{CPUWait: -1, Others: -1}, live: Violated, reasons: 2},
		{name: "others a core each", file: "bad-timeout.jsonl", health: &history.Health{Cores: 2, Others: 2}, inconclusive: true, live: Inconclusive, saturation: "2.0 tasks", unjudged: 2},
		{name: "others under a core each", file: "bad-timeout.jsonl", health: &history.Health{Cores: 2, Others: 1.9}, live: Violated, reasons: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := load(t, tt.file)
			h.Header.Lease = int64(tt.lease)
			h.Header.Health = tt.health
			r := Check(h, Options{})
			if r.Pass != tt.pass || r.Inconclusive != tt.inconclusive || r.Liveness.Status != tt.live {
				t.Errorf("pass %v, inconclusive %v, liveness %s; want %v, %v, %s (reasons %q, unjudged %q)",
					r.Pass, r.Inconclusive, r.Liveness.Status, tt.pass, tt.inconclusive, tt.live, r.Reasons, r.Unjudged)
			}
			if len(r.Reasons) != tt.reasons || len(r.Unjudged) != tt.unjudged {
				t.Errorf("%d reasons %q, %d unjudged %q; want %d and %d", len(r.Reasons), r.Reasons, len(r.Unjudged), r.Unjudged, tt.reasons, tt.unjudged)
			}
			if tt.saturation == "" && len(r.Saturation) > 0 {
				t.Errorf("saturation %q, want none", r.Saturation)
			}
			if tt.saturation != "" && !slices.ContainsFunc(r.Saturation, func(s string) bool { return strings.Contains(s, tt.saturation) }) {
				t.Errorf("saturation %q, want a sentence with %q", r.Saturation, tt.saturation)
			}
		})
	}
}

// TestStuckIsNotStarved: a run cut by --timeout after a stretch without
// progress far longer than any stall the harness measured failed its
// liveness whatever the machine: the lock was stuck, not the harness slow.
func TestStuckIsNotStarved(t *testing.T) {
	tests := []struct {
		name     string
		duration time.Duration // the cut, long after the last step (at 30 ms)
		stall    time.Duration
		stuck    bool
	}{
		{"5s idle, stalls of 100ms", 5 * time.Second, 100 * time.Millisecond, true},
		{"5s idle, stalls of 2s", 5 * time.Second, 2 * time.Second, false},
		{"0.5s idle: under a second", 500 * time.Millisecond, time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := load(t, "bad-timeout.jsonl")
			h.Header.Duration = int64(tt.duration)
			h.Header.Health = &history.Health{Others: 8, Cores: 2, StallMax: int64(tt.stall)}
			r := Check(h, Options{})
			if len(r.Saturation) == 0 {
				t.Fatal("not saturated")
			}
			if r.Inconclusive == tt.stuck || (r.Liveness.Status == Violated) != tt.stuck {
				t.Errorf("inconclusive %v, liveness %s, reasons %q, notes %q; want stuck %v", r.Inconclusive, r.Liveness.Status, r.Reasons, r.Notes, tt.stuck)
			}
			noted := slices.ContainsFunc(r.Notes, func(s string) bool { return strings.Contains(s, "the lock was stuck") })
			if noted != tt.stuck {
				t.Errorf("notes %q: stuck note %v, want %v", r.Notes, noted, tt.stuck)
			}
		})
	}
}

// TestSaturationItems judges a sale of several items cut by --timeout
// while its harness was starved: the liveness finding is set aside, and
// the verdict is inconclusive, as for one item.
func TestSaturationItems(t *testing.T) {
	for _, starved := range []bool{false, true} {
		h := load(t, "ok-items.jsonl")
		h.Header.CutShort, h.Header.CutBy = true, history.CutTimeout
		h.Header.Health = &history.Health{Others: 0.1, Cores: 2}
		if starved {
			h.Header.Health.Others = 9
		}
		r := Check(h, Options{})
		if r.Pass || r.Inconclusive != starved || (len(r.Unjudged) > 0) != starved || (len(r.Reasons) > 0) == starved {
			t.Errorf("starved %v: pass %v, inconclusive %v, reasons %q, unjudged %q", starved, r.Pass, r.Inconclusive, r.Reasons, r.Unjudged)
		}
		if (len(r.Saturation) > 0) != starved {
			t.Errorf("starved %v: saturation %q", starved, r.Saturation)
		}
	}
}
