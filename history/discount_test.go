package history

import (
	"cmp"
	"reflect"
	"testing"
	"time"
)

func TestDiscount(t *testing.T) {
	const (
		ms    = int64(time.Millisecond)
		tick  = 5 * ms
		p99   = 6 * ms
		pause = 2000 * ms
	)
	tests := []struct {
		name        string
		stallMax    int64
		p99         int64 // StallP99; p99 when zero
		starved     []Span
		stops       []Span
		wantMax     int64
		wantStarved []Span
	}{{
		name:     "a stop covers the only stall",
		stallMax: pause,
		starved:  []Span{{From: 97 * ms, To: 2104 * ms}},
		stops:    []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:  p99,
	}, {
		name:        "a real stall before the stop stays",
		stallMax:    pause + 300*ms,
		starved:     []Span{{From: -200 * ms, To: 2104 * ms}},
		stops:       []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:     295 * ms,
		wantStarved: []Span{{From: -200 * ms, To: 95 * ms}},
	}, {
		name:        "a real stall after the continue stays",
		stallMax:    pause + 400*ms,
		starved:     []Span{{From: 97 * ms, To: 2500 * ms}},
		stops:       []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:     395 * ms,
		wantStarved: []Span{{From: 2105 * ms, To: 2500 * ms}},
	}, {
		name:     "a piece under StarvedAt is no span, but the stall it stands for",
		stallMax: pause + 30*ms,
		starved:  []Span{{From: 97 * ms, To: 2135 * ms}},
		stops:    []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:  30 * ms,
	}, {
		name:        "a stall between two stops stays",
		stallMax:    pause,
		starved:     []Span{{From: 97 * ms, To: 5104 * ms}},
		stops:       []Span{{From: 3100 * ms, To: 5100 * ms}, {From: 100 * ms, To: 2100 * ms}},
		wantMax:     990 * ms,
		wantStarved: []Span{{From: 2105 * ms, To: 3095 * ms}},
	}, {
		name:        "a stall no stop explains keeps StallMax",
		stallMax:    pause,
		starved:     []Span{{From: 97 * ms, To: 2104 * ms}, {From: 3000 * ms, To: 3400 * ms}},
		stops:       []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:     400 * ms,
		wantStarved: []Span{{From: 3000 * ms, To: 3400 * ms}},
	}, {
		name:        "a longer stall elsewhere than the stop counts whole",
		stallMax:    3 * pause,
		starved:     []Span{{From: 97 * ms, To: 2104 * ms}, {From: 3000 * ms, To: 9000 * ms}},
		stops:       []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:     3 * pause,
		wantStarved: []Span{{From: 3000 * ms, To: 9000 * ms}},
	}, {
		name:        "a stall the span list did not keep counts whole",
		stallMax:    5 * pause,
		starved:     []Span{{From: 97 * ms, To: 2104 * ms}},
		stops:       []Span{{From: 100 * ms, To: 2100 * ms}},
		wantMax:     5 * pause,
		wantStarved: []Span{},
	}, {
		name:     "stops a percent of the wake-ups or more: StallP99 is a stop's, StarvedAt bounds it",
		p99:      pause,
		stallMax: pause,
		starved:  []Span{{From: 97 * ms, To: 2104 * ms}, {From: 2197 * ms, To: 4204 * ms}},
		stops:    []Span{{From: 100 * ms, To: 2100 * ms}, {From: 2200 * ms, To: 4200 * ms}},
		wantMax:  int64(StarvedAt),
	}, {
		name:        "no stop overlaps: nothing changes",
		stallMax:    pause,
		starved:     []Span{{From: 97 * ms, To: 2104 * ms}},
		stops:       []Span{{From: 3000 * ms, To: 4000 * ms}},
		wantMax:     pause,
		wantStarved: []Span{{From: 97 * ms, To: 2104 * ms}},
	}, {
		name:        "no stops: nothing changes (a Ctrl-Z of the whole run)",
		stallMax:    pause,
		starved:     []Span{{From: 97 * ms, To: 2104 * ms}},
		wantMax:     pause,
		wantStarved: []Span{{From: 97 * ms, To: 2104 * ms}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Health{StallMax: tt.stallMax, StallP99: cmp.Or(tt.p99, p99), SchedMax: pause, Starved: tt.starved}
			h.Discount(tt.stops, tick)
			if h.StallMax != tt.wantMax {
				t.Errorf("StallMax = %v, want %v", time.Duration(h.StallMax), time.Duration(tt.wantMax))
			}
			if len(h.Starved) != len(tt.wantStarved) || len(h.Starved) > 0 && !reflect.DeepEqual(h.Starved, tt.wantStarved) {
				t.Errorf("Starved = %v, want %v", h.Starved, tt.wantStarved)
			}
			if h.StallP99 > h.StallMax {
				t.Errorf("StallP99 %v above StallMax %v", h.StallP99, h.StallMax)
			}
			if h.SchedMax != pause {
				t.Errorf("SchedMax = %v, changed", h.SchedMax)
			}
		})
	}
}

// TestMerge: a node's health folds into the run's as the worst of both,
// its arrival lag too (a node that keeps its buyers' schedule measures
// it; its coordinator hands out none), its starved spans in order, and
// the node listed.
func TestMerge(t *testing.T) {
	const ms = int64(time.Millisecond)
	h := Health{Node: -1, StallMax: 9 * ms, LagP99: 1 * ms, LagMax: 2 * ms, Starved: []Span{{From: 500 * ms, To: 560 * ms}}}
	node := Health{Node: 0, StallMax: 3 * ms, LagP99: 120 * ms, LagMax: 150 * ms, Starved: []Span{{From: 100 * ms, To: 170 * ms}}}
	h.Merge(node)
	want := Health{Node: -1, StallMax: 9 * ms, LagP99: 120 * ms, LagMax: 150 * ms,
		Starved: []Span{{From: 100 * ms, To: 170 * ms}, {From: 500 * ms, To: 560 * ms}}, Nodes: []Health{node}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("merged:\n%+v\nwant\n%+v", h, want)
	}
}
