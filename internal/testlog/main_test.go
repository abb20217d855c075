package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	const p = `"Package":"example.com/p"`
	tests := []struct {
		name      string
		in        []string
		wantOut   string
		wantSkips []skip
		wantTally tally
	}{
		{
			name: "pass prints the package line only",
			in: []string{
				`{"Action":"run",` + p + `,"Test":"TestA"}`,
				`{"Action":"output",` + p + `,"Test":"TestA","Output":"=== RUN   TestA\n"}`,
				`{"Action":"output",` + p + `,"Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}`,
				`{"Action":"pass",` + p + `,"Test":"TestA"}`,
				`{"Action":"output",` + p + `,"Output":"PASS\n"}`,
				`{"Action":"output",` + p + `,"Output":"ok  \texample.com/p\t0.01s\n"}`,
				`{"Action":"pass",` + p + `}`,
			},
			wantOut:   "ok  \texample.com/p\t0.01s\n",
			wantTally: tally{passed: 1},
		},
		{
			name: "a failure prints its output, a skip its reason",
			in: []string{
				`{"Action":"output",` + p + `,"Test":"TestA","Output":"=== RUN   TestA\n"}`,
				`{"Action":"output",` + p + `,"Test":"TestA","Output":"    a_test.go:9: boom\n"}`,
				`{"Action":"output",` + p + `,"Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}`,
				`{"Action":"fail",` + p + `,"Test":"TestA"}`,
				`{"Action":"output",` + p + `,"Test":"TestB","Output":"=== RUN   TestB\n"}`,
				`{"Action":"output",` + p + `,"Test":"TestB","Output":"    b_test.go:3: no redis-server on PATH\n"}`,
				`{"Action":"output",` + p + `,"Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}`,
				`{"Action":"skip",` + p + `,"Test":"TestB"}`,
				`{"Action":"output",` + p + `,"Output":"FAIL\n"}`,
				`{"Action":"output",` + p + `,"Output":"FAIL\texample.com/p\t0.01s\n"}`,
				`{"Action":"fail",` + p + `}`,
			},
			wantOut:   "    a_test.go:9: boom\n--- FAIL: TestA (0.00s)\nFAIL\nFAIL\texample.com/p\t0.01s\n",
			wantSkips: []skip{{"example.com/p", "TestB", "no redis-server on PATH"}},
			wantTally: tally{failed: 1},
		},
		{
			name: "a test cut short by its package's failure is shown",
			in: []string{
				`{"Action":"output",` + p + `,"Test":"TestC","Output":"panic: test timed out\n"}`,
				`{"Action":"output",` + p + `,"Output":"FAIL\texample.com/p\t600s\n"}`,
				`{"Action":"fail",` + p + `}`,
			},
			wantOut: "FAIL\texample.com/p\t600s\npanic: test timed out\n",
		},
		{
			name:    "the go command's own lines pass through",
			in:      []string{`# example.com/p`, `p.go:1: syntax error`},
			wantOut: "# example.com/p\np.go:1: syntax error\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			var tl tally
			skips, err := summary(strings.NewReader(strings.Join(tt.in, "\n")+"\n"), &out, &tl)
			if err != nil {
				t.Fatal(err)
			}
			if tl != tt.wantTally {
				t.Errorf("tally %+v, want %+v", tl, tt.wantTally)
			}
			if out.String() != tt.wantOut {
				t.Errorf("output:\n%q\nwant:\n%q", out.String(), tt.wantOut)
			}
			if len(skips) != len(tt.wantSkips) {
				t.Fatalf("skips %v, want %v", skips, tt.wantSkips)
			}
			for i := range skips {
				if skips[i] != tt.wantSkips[i] {
					t.Errorf("skip %d: %v, want %v", i, skips[i], tt.wantSkips[i])
				}
			}
		})
	}
}

func TestReport(t *testing.T) {
	tests := []struct {
		skips []skip
		want  string
	}{
		{nil, "skipped: none\ntests: 3 passed, 1 failed, 0 skipped\n"},
		{[]skip{{"github.com/lockbench/lockbench/cli", "TestX", "-short"}}, "skipped: 1 test\n  cli TestX: -short\ntests: 3 passed, 1 failed, 1 skipped\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		report(&b, tt.skips, tally{passed: 3, failed: 1})
		if b.String() != tt.want {
			t.Errorf("report(%v) = %q, want %q", tt.skips, b.String(), tt.want)
		}
	}
}
