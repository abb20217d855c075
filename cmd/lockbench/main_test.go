package main

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs four subtests at once (the default is one per core): the
// truth table's cells spend most of their time waiting on faults and
// leases, not on the processor.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == f.DefValue {
		f.Value.Set("4")
	}
	os.Exit(m.Run())
}
