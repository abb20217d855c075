// Package reports turns recorded histories and the checker's verdicts into
// what a person or a later tool reads: result.json (a Result holding one Run
// per implementation, documented in SCHEMA.md), the terminal summary table,
// the regression gate, JUnit XML, and the matrix's cells and grid. The HTML
// report is drawn from these types by package reports/htmlreport, which
// imports this one; nothing here imports it.
//
// A Run embeds the checker's report (checker.Data, checker.Liveness and
// checker.Lock) rather than copying it field by field: the checker's types
// carry result.json's keys, and what a result says of safety is read from
// their statuses and counts, never from the words of the reasons.
//
// Latencies are measured with HdrHistogram at microsecond resolution and
// counted from each attempt's scheduled arrival rather than from when a
// worker picked it up, so that time spent queueing in front of a busy node
// is part of the figure (no coordinated omission).
//
// Like the checker, this package reads histories only and knows nothing of
// Redis or of the lock implementations. Its functions are pure; writers take
// an io.Writer and the file helpers beside them only open the file.
package reports
