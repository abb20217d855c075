package cli

import (
	"strings"
	"testing"
)

// TestItemsCartReadsUsage: --items, --cart and --reads out of range, and a
// cart of several under a lock that takes one item at a time, are usage
// errors that name the flag.
func TestItemsCartReadsUsage(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"--items=0"}, "--items"},
		{[]string{"--items=1001"}, "--items"},
		{[]string{"--items=2", "--cart=3"}, "--cart"},
		{[]string{"--cart=0"}, "--cart"},
		{[]string{"--reads=-1"}, "--reads"},
		{[]string{"--reads=101"}, "--reads"},
		{[]string{"--impl=lua", "--items=3", "--cart=2"}, "needs multi"},
		{[]string{"--impl=atomic", "--items=3", "--cart=2"}, "needs multi"},
		{[]string{"--impl=mysql-version", "--mysql-dsn=root@tcp(127.0.0.1:1)/", "--items=2"}, "--items"},
	})
}

// TestItemsCartReadsRun: a small sale of three items, carts of up to two
// and a fifth of the buyers reading, under multi: it passes, the result
// records the flags and the reproduce line carries them; the same without
// a lock oversells, and the reasons name the items.
func TestItemsCartReadsRun(t *testing.T) {
	args := []string{"--items=3", "--cart=2", "--reads=20", "--clients=300", "--stock=60", "--workers=10", "--ramp=200ms", "--seed=5"}
	code, res := runJSON(t, append([]string{"--impl=multi"}, args...)...)
	if code != exitPass {
		t.Errorf("multi: exit %d, want %d: %v", code, exitPass, res.Runs)
	}
	if c := res.Config; c.Items != 3 || c.Cart != 2 || c.Reads != 20 {
		t.Errorf("config items %d cart %d reads %d, want 3, 2, 20", c.Items, c.Cart, c.Reads)
	}
	for _, f := range []string{"--items=3", "--cart=2", "--reads=20"} {
		if !strings.Contains(res.Command, f) {
			t.Errorf("reproduce line %q lacks %s", res.Command, f)
		}
	}
	if len(res.Runs) != 1 || res.Runs[0].Stock != 180 || res.Runs[0].Sold == 0 {
		t.Fatalf("runs %+v: want one, of 180 units, some sold", res.Runs)
	}

	code, res = runJSON(t, append([]string{"--impl=none", "--hold=2ms"}, args...)...)
	if code != exitFail {
		t.Errorf("none: exit %d, want %d", code, exitFail)
	}
	if len(res.Runs) != 1 || !strings.Contains(strings.Join(res.Runs[0].Reasons, "\n"), "item") {
		t.Errorf("none: reasons %q do not name the items", res.Runs[0].Reasons)
	}
}

// TestItemsList: lockbench list names multi and rw with their sources.
func TestItemsList(t *testing.T) {
	code, out, _ := lockbench(t, "list")
	if code != exitPass {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"multi", "RedissonMultiLock", "rw", "RedissonReadWriteLock"} {
		if !strings.Contains(out, s) {
			t.Errorf("list does not name %q", s)
		}
	}
}
