package reports

import "fmt"

// MatrixCell is one measured cell of `lockbench matrix`: an implementation
// under one fault, what the catalog's truth table expects, and what the run
// showed.
type MatrixCell struct {
	// Cell names the cell, "impl/fault" ("impl/none" without a fault).
	Cell string `json:"cell"`
	// Impl is the implementation.
	Impl string `json:"impl"`
	// Fault is the fault injected, empty for none.
	Fault string `json:"fault,omitempty"`
	// Nodes is the node count the cell ran with.
	Nodes int `json:"nodes"`
	// Expected is the truth table's verdict: safe, overlap, oversell,
	// overlap, oversell, deadlock or data safe.
	Expected string `json:"expected"`
	// Measured is what the run showed, in the same words.
	Measured string `json:"measured"`
	// Match is true when the measured verdict meets the expectation.
	Match bool `json:"match"`
	// Why explains a cell whose expectation departs from the catalog.
	Why string `json:"why,omitempty"`
	// Run is the cell's run, with its checks and figures.
	Run Run `json:"run"`
}

// Differing counts the cells whose measured verdict missed the expectation.
func Differing(cells []MatrixCell) int {
	n := 0
	for _, c := range cells {
		if !c.Match {
			n++
		}
	}
	return n
}

// MatrixSummary is the truth table's one-line tally, as the terminal and
// the report print it: "92 cells, 92 as expected, 0 differ".
func MatrixSummary(cells []MatrixCell) string {
	d := Differing(cells)
	return fmt.Sprintf("%d cells, %d as expected, %d differ", len(cells), len(cells)-d, d)
}
