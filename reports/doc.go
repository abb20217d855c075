// Package reports turns recorded histories and the checker's verdicts into
// what a person or a later tool reads: result.json (a Result holding one Run
// per implementation, documented in SCHEMA.md) and the terminal summary
// table.
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
