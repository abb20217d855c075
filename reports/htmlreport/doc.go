// Package htmlreport renders saved results as one self-contained HTML
// page: per result its verdicts (pass green, FAIL red, inconclusive
// amber), and per implementation the latency spectrum, latency and sales
// over the run with the faults shaded and the spans in which the harness
// was starved hatched, a lock-holder timeline around each overlap, and,
// when the harness was saturated, how and its health figures; several
// results side by side with their changes against the first; a matrix's
// truth table as a grid.
//
// It reads what package reports defines and writes: a Source is one
// result.json (reports.Result) and the histories saved beside it, and
// Write draws it. The dependency points one way, htmlreport → reports →
// checker: the result schema knows nothing of its renderings.
//
// The page's template, style and script are embedded with go:embed, and
// the charts are SVG drawn here, so the page fetches nothing and opens from
// file:// as it does from a CI system's artifact store.
package htmlreport
