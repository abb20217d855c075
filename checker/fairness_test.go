package checker

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

func TestCheckFairness(t *testing.T) {
	ms := int64(time.Millisecond)
	// acq is an acquisition that asked at call and got the lock at got (ms).
	acq := func(client int32, call, got int64) history.Op {
		return history.Op{Client: client, Arrival: call * ms, AcquireCall: call * ms, Acquired: got * ms, Stock: history.NoStock}
	}
	tests := []struct {
		name     string
		lockless bool
		ops      []history.Op
		want     int64
		behind   int32 // the first overtake's later buyer
	}{
		{"in asking order", false, []history.Op{acq(0, 1, 10), acq(1, 2, 20), acq(2, 3, 30)}, 0, 0},
		{"one goes ahead of one", false, []history.Op{acq(0, 1, 40), acq(1, 15, 30), acq(2, 16, 50)}, 1, 1},
		{"one goes ahead of two", false, []history.Op{acq(0, 1, 40), acq(1, 2, 50), acq(2, 30, 35)}, 2, 2},
		{"asks within the margin may swap", false, []history.Op{acq(0, 10, 20), acq(1, 15, 18)}, 0, 0},
		{"never acquired: not a waiter", false, []history.Op{{Client: 0, AcquireCall: ms, Stock: history.NoStock}, acq(1, 25, 26)}, 0, 0},
		{"no lock", true, []history.Op{acq(0, 1, 40), acq(1, 25, 30)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Lockless: tt.lockless, Duration: 100 * ms}, Ops: tt.ops}
			n, first := checkFairness(h, 0)
			if n != tt.want {
				t.Errorf("overtakes = %d, want %d", n, tt.want)
			}
			if (first != nil) != (tt.want > 0) || first != nil && first.Behind.Client != tt.behind {
				t.Errorf("first overtake %+v, want buyer %d going ahead", first, tt.behind)
			}
		})
	}
}
