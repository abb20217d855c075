package matrix_test

import (
	"testing"

	"github.com/lockbench/lockbench/matrix"
)

// TestCellNames: a cell is named by its implementation and fault, with
// its variant when it has one, and no two cells of the truth table share
// a name (a cell of one implementation and fault with other parameters
// carries them in its name).
func TestCellNames(t *testing.T) {
	tests := []struct {
		cell matrix.Cell
		want string
	}{
		{matrix.Cell{Impl: "lua"}, "lua/none"},
		{matrix.Cell{Impl: "lua", Fault: "pause-holder", Params: "for=1s"}, "lua/pause-holder"},
		{matrix.Cell{Impl: "local", Nodes: 2}, "local/none@2nodes"},
		{matrix.Cell{Impl: "redlock", Fault: "pause-holder", Variant: "at=acquiring", Params: "at=acquiring"}, "redlock/pause-holder:at=acquiring"},
	}
	for _, tt := range tests {
		if got := tt.cell.Name(); got != tt.want {
			t.Errorf("%+v: Name() = %q, want %q", tt.cell, got, tt.want)
		}
	}
	seen := map[string]bool{}
	for _, c := range matrix.Truth() {
		if seen[c.Name()] {
			t.Errorf("two cells named %s", c.Name())
		}
		seen[c.Name()] = true
	}
	if c, ok := matrix.Lookup("redlock/pause-holder:at=acquiring"); !ok || c.Entry() != "pause-holder:at=acquiring" {
		t.Errorf("Lookup(redlock/pause-holder:at=acquiring) = %+v, %v", c, ok)
	}
}
