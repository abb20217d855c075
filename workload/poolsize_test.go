package workload_test

import (
	"testing"

	"github.com/lockbench/lockbench/workload"
)

func TestPoolSize(t *testing.T) {
	tests := []struct {
		name          string
		pool, workers int
		want          int
	}{
		{"given", 8, 200, 8},
		{"one per worker", 0, 200, 200},
		{"a goroutine per buyer", 0, 0, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := workload.Workload{Pool: tt.pool, Workers: tt.workers}
			if got := w.PoolSize(); got != tt.want {
				t.Errorf("PoolSize() = %d, want %d", got, tt.want)
			}
		})
	}
}
