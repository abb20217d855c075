package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// TestCellReproduceLines: for every built-in cell of the truth table, the
// reproduce line the matrix prints, parsed back by the run's own flags,
// gives the plan the matrix ran: the same workload (lease, timeouts,
// workers, nodes, buyers, stock, arrivals, items...), the same faults
// with their parameters, seed, node mode and servers. A flag the matrix
// sets that the line drops makes the cell fail here.
func TestCellReproduceLines(t *testing.T) {
	variants := []struct {
		name string
		args []string
	}{
		{"defaults", []string{"--seed=3"}},
		{"flags of its own", []string{"--seed=4", "--hold=5ms", "--attempts=3", "--pool=8", "--ttl=300ms", "--timeout=20s",
			"--command-timeout=700ms", "--workers=12", "--clients=250", "--stock=120", "--check-timeout=90s", "--clock-error=1ms"}},
		{"a real Redis and nodes in processes", []string{"--seed=5", "--redis=127.0.0.1:6390", "--node-mode=process", "--prefix=x:", "--force"}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			for _, cell := range matrix.Truth() {
				t.Run(cell.Name(), func(t *testing.T) {
					args := append(serverArgs(cell), v.args...)
					if strings.Contains(strings.Join(v.args, " "), "node-mode=process") && workload.SupportsNodes("process", cell.Impl, mustImpl(t, cell.Impl).Sale, nil) != nil {
						t.Skip("a sale nodes in processes cannot run")
					}
					if sentinelOnly(cell) && (strings.Contains(strings.Join(v.args, " "), "--redis=") || strings.Contains(strings.Join(v.args, " "), "--node-mode=process")) {
						t.Skip("the failover cells run on --backend=sentinel, nodes in lockbench's process")
					}
					var mo runOpts
					mfs := matrixFlags(&mo)
					if err := mfs.Parse(append([]string{"--impl=" + cell.Impl, "--faults=" + faultName(cell)}, args...)); err != nil {
						t.Fatal(err)
					}
					only := mo.faults
					mo.faults = ""
					if _, err := mo.validate(mfs); err != nil {
						t.Fatalf("matrix flags %q: %v", args, err)
					}
					mo.faults = only
					base := mo.plan(mustImpl(t, cell.Impl), nil)
					base.Faults = nil
					want, err := cell.Plan(base, cell.Entry())
					if err != nil {
						t.Fatal(err)
					}
					line := mo.cellCommand(reports.MatrixCell{Cell: cell.Name(), Impl: cell.Impl, Fault: cell.Entry()})
					words := shellWords(t, line)
					if len(words) < 1 || words[0] != Program {
						t.Fatalf("reproduce line %q does not start with %q", line, Program)
					}
					var ro runOpts
					rfs := runFlags(&ro)
					if err := rfs.Parse(words[1:]); err != nil {
						t.Fatalf("reproduce line %q: %v", line, err)
					}
					impls, err := ro.validate(rfs)
					if err != nil {
						t.Fatalf("reproduce line %q: %v", line, err)
					}
					if len(impls) != 1 || impls[0].Name != cell.Impl {
						t.Fatalf("reproduce line %q runs %d implementations, want %s", line, len(impls), cell.Impl)
					}
					got := ro.plan(impls[0], nil)
					if !reflect.DeepEqual(got.Workload, want.Workload) {
						t.Errorf("reproduce line %q\n  workload %+v\n  matrix ran %+v", line, got.Workload, want.Workload)
					}
					if g, w := specStrings(got.Faults), specStrings(want.Faults); !reflect.DeepEqual(g, w) {
						t.Errorf("reproduce line %q: faults %q, matrix ran %q", line, g, w)
					}
					if got.Seed != want.Seed || got.CheckTimeout != want.CheckTimeout || got.Impl.Name != want.Impl.Name {
						t.Errorf("reproduce line %q: seed %d, check timeout %v, impl %s; matrix ran %d, %v, %s",
							line, got.Seed, got.CheckTimeout, got.Impl.Name, want.Seed, want.CheckTimeout, want.Impl.Name)
					}
					if ro.nodeMode != mo.nodeMode || ro.clockError != mo.clockError {
						t.Errorf("reproduce line %q: node mode %s, clock error %v; matrix ran %s, %v", line, ro.nodeMode, ro.clockError, mo.nodeMode, mo.clockError)
					}
					if g, w := ro.serverOptions(), mo.serverOptions(); !reflect.DeepEqual(g, w) {
						t.Errorf("reproduce line %q: servers %+v, matrix ran %+v", line, g, w)
					}
				})
			}
		})
	}
}

// serverArgs are the flags that give a cell's implementation the servers
// it needs beyond Redis (addresses only: nothing is dialled here).
func serverArgs(c matrix.Cell) []string {
	var out []string
	if sentinelOnly(c) {
		out = append(out, "--backend=sentinel")
	}
	needs := mustImplNoT(c.Impl).Needs()
	if needs.Has(servers.KindZooKeeper) {
		out = append(out, "--zk=127.0.0.1:2181")
	}
	if needs.Has(servers.KindMySQL) {
		out = append(out, "--mysql-dsn=lockbench:PASSWORD@tcp(127.0.0.1:3306)/lockbench")
	}
	return out
}

// sentinelOnly reports whether a cell needs the Sentinel topology: its
// fault is a failover, or its lock waits for a replica.
func sentinelOnly(c matrix.Cell) bool {
	f, ok := faults.Lookup(c.Fault)
	return ok && f.Name() == "failover" || mustImplNoT(c.Impl).Needs().Has(servers.KindRedisReplica)
}

// faultName is the cell's column, as --faults narrows the matrix to it.
func faultName(c matrix.Cell) string {
	if c.Fault == "" {
		return "none"
	}
	return c.Fault
}

// shellWords splits a line quoted for a POSIX shell (harness.CommandLine)
// into its words: plain words and single-quoted parts.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var w strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			w.WriteByte(ch)
		case ch == '\'':
			quoted, in = true, true
		case ch == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			in = true
		case ch == ' ':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(ch)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// mustImpl is the registered implementation called name.
func mustImpl(t *testing.T, name string) harness.Impl {
	t.Helper()
	im, ok := harness.Lookup(name)
	if !ok {
		t.Fatalf("no implementation %s", name)
	}
	return im
}

// mustImplNoT is mustImpl outside a test's goroutine: the zero Impl when
// there is none (the test then fails on its flags).
func mustImplNoT(name string) harness.Impl {
	im, _ := harness.Lookup(name)
	return im
}
