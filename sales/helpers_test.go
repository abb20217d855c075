package sales_test

import (
	"testing"

	"github.com/lockbench/lockbench/workload"
)

// embedded starts an embedded Redis for the test, closed when it ends.
func embedded(t *testing.T) *workload.Embedded {
	t.Helper()
	b, err := workload.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
