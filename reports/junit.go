package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
)

// JUnitCase is one test case of a JUnit report: an implementation's run,
// or one cell of a fault matrix.
type JUnitCase struct {
	// Name names the case (the implementation, or the matrix cell).
	Name string
	// ClassName groups cases in a CI system's view ("lockbench.run").
	ClassName string
	// Time is how long the case took.
	Time time.Duration
	// Failure says why the case failed, one finding a line; empty when it
	// passed. Its first line becomes the failure's message attribute.
	Failure string
	// Skipped says why the case was neither passed nor failed (an
	// inconclusive run); empty otherwise. JUnit readers show it skipped.
	Skipped string
}

// JUnitSuite is a named group of cases.
type JUnitSuite struct {
	// Name names the suite ("lockbench").
	Name string
	// Cases are the suite's cases, in order.
	Cases []JUnitCase
}

// The XML shapes of the JUnit format as CI systems read it (the Ant
// schema, the common subset of Jenkins, GitLab and GitHub reporters).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		ClassName string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		Skipped   *junitSkipped `xml:"skipped,omitempty"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes suites as one JUnit XML document, so that a CI system
// shows each case, and each failure with its message, on its own.
func WriteJUnit(w io.Writer, suites ...JUnitSuite) error {
	doc := junitSuites{Name: "lockbench"}
	var total time.Duration
	for _, s := range suites {
		js := junitSuite{Name: s.Name, Tests: len(s.Cases)}
		var st time.Duration
		for _, c := range s.Cases {
			jc := junitCase{Name: c.Name, ClassName: c.ClassName, Time: seconds3(c.Time)}
			if c.Failure != "" {
				msg, _, _ := strings.Cut(c.Failure, "\n")
				jc.Failure = &junitFailure{Message: msg, Type: "lockbench", Text: c.Failure}
				js.Failures++
			} else if c.Skipped != "" {
				jc.Skipped = &junitSkipped{Message: c.Skipped}
				js.Skipped++
			}
			st += c.Time
			js.Cases = append(js.Cases, jc)
		}
		js.Time = seconds3(st)
		doc.Tests += js.Tests
		doc.Failures += js.Failures
		total += st
		doc.Suites = append(doc.Suites, js)
	}
	doc.Time = seconds3(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds3 writes d in seconds with three decimals, as JUnit's time
// attributes are read.
func seconds3(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// GateCases returns one JUnit case per run of r, failed with the run's
// regressions in g (its reasons when it failed its checks). With a zero
// GateReport, a run's case fails exactly when its verdict does.
func GateCases(r *Result, g GateReport) []JUnitCase {
	cases := make([]JUnitCase, 0, len(r.Runs))
	for i := range r.Runs {
		run := &r.Runs[i]
		c := JUnitCase{
			Name:      run.Impl,
			ClassName: "lockbench.run",
			Time:      time.Duration(run.DurationMS * float64(time.Millisecond)),
		}
		var lines []string
		for _, reg := range g.For(run.Impl) {
			lines = append(lines, reg.String())
		}
		switch {
		case len(lines) > 0:
		case run.Verdict == Inconclusive && len(run.NotFired) > 0:
			c.Skipped = run.Impl + ": " + NotFiredLine(run)
		case run.Verdict == Inconclusive:
			c.Skipped = run.Impl + ": inconclusive: " + SaturationLine(run)
		case run.Verdict == Interrupted:
			c.Skipped = run.Impl + ": interrupted: the run was cut short before its end (an interrupt, or a server lost): liveness not judged"
		case run.Verdict != Pass:
			lines = append(lines, run.Impl+": verdict "+run.Verdict)
			for _, reason := range run.Reasons {
				lines = append(lines, run.Impl+": "+reason)
			}
		}
		c.Failure = strings.Join(lines, "\n")
		cases = append(cases, c)
	}
	for _, impl := range r.NotRun {
		cases = append(cases, JUnitCase{Name: impl, ClassName: "lockbench.run", Skipped: impl + ": never ran: the run was interrupted, or a server lost, before its turn"})
	}
	return cases
}
