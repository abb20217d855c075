package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRead reads the histories named in $LOCKBENCH_BENCH_HISTORIES
// (a space-separated list of files that `lockbench --out` wrote; make
// bench records them), each under the name checker's BenchmarkRecorded
// gives its check, so that scripts/bench.sh sets reading beside checking;
// each is read as lockbench check reads it (ReadFileHeld).
func BenchmarkRead(b *testing.B) {
	files := strings.Fields(os.Getenv("LOCKBENCH_BENCH_HISTORIES"))
	if len(files) == 0 {
		b.Skip("LOCKBENCH_BENCH_HISTORIES names no recorded history (make bench records them)")
	}
	for _, f := range files {
		b.Run(filepath.Base(f), func(b *testing.B) {
			var ops int
			for b.Loop() {
				h, err := Key(nil).ReadFileHeld(f)
				if err != nil {
					b.Fatal(err)
				}
				ops = len(h.Ops)
			}
			b.ReportMetric(float64(ops), "ops")
		})
	}
}
