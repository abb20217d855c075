package harness

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

func TestRegister(t *testing.T) {
	lua, _ := Lookup("lua")
	mine := lua
	mine.Name = "test-register"
	tests := []struct {
		name string
		im   Impl
		want error
	}{
		{"a new name", mine, nil},
		{"the same name again", mine, ErrDuplicate},
		{"a built-in name", lua, ErrDuplicate},
		{"no name", Impl{Sale: lua.Sale}, ErrImpl},
		{"all", Impl{Info: locks.Info{Name: "all"}, Sale: lua.Sale}, ErrImpl},
		{"no sale", Impl{Info: locks.Info{Name: "test-no-sale"}}, ErrImpl},
	}
	for _, tt := range tests {
		err := Register(tt.im)
		if (err == nil) != (tt.want == nil) || !errors.Is(err, tt.want) {
			t.Errorf("%s: Register = %v, want %v", tt.name, err, tt.want)
		}
	}
	if im, ok := Lookup("test-register"); !ok || !im.Locked {
		t.Errorf("Lookup after Register = %+v, %v", im, ok)
	}
	all := All()
	if all[len(all)-1].Name != "test-register" || all[0].Name != "none" {
		t.Errorf("All: built-ins first, then the registered ones; got %s ... %s", all[0].Name, all[len(all)-1].Name)
	}
}

// TestBuiltinOrder: the built-in implementations are listed in the sources'
// order, which `lockbench list`, the truth table and the docs' tables
// follow: none, the sources' locks, the lockless sales, then the designs
// beyond the sources.
func TestBuiltinOrder(t *testing.T) {
	want := []string{"none", "local", "setnx", "setnx-expire", "set-nx-ex", "owner-check", "lua", "lua-wait", "getset",
		"reentrant", "watchdog", "spin", "fair", "multi", "rw", "renew-naive", "redlock", "zookeeper", "zookeeper-seed002",
		"atomic", "mysql", "mysql-for-update", "mysql-version", "fenced", "redsync", "redislock",
		"etcd", "etcd-fenced", "etcd-txn", "pg-advisory", "pg-advisory-xact", "pg-for-update"}
	var got []string
	for _, im := range builtin() {
		got = append(got, im.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("built-in order:\n got %q\nwant %q", got, want)
	}
}

// TestCheckReentry: a nested acquire is refused of a lock that is not
// reentrant only.
func TestCheckReentry(t *testing.T) {
	tests := []struct {
		impl    string
		reentry int
		ok      bool
	}{
		{"lua", 0, true},
		{"lua", 2, false},
		{"reentrant", 2, true},
		{"none", 2, true},
	}
	for _, tt := range tests {
		im, _ := Lookup(tt.impl)
		err := im.CheckReentry(tt.reentry)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrPlan) {
			t.Errorf("%s.CheckReentry(%d) = %v, want ok %v (else ErrPlan)", tt.impl, tt.reentry, err, tt.ok)
		}
	}
}

// TestNeeds: each implementation asks for exactly the servers its sale
// runs on, so that a run opens no other.
func TestNeeds(t *testing.T) {
	tests := []struct {
		impl string
		want servers.Needs
	}{
		{"none", servers.Needs{servers.KindRedis}},
		{"atomic", servers.Needs{servers.KindRedis}},
		{"watchdog", servers.Needs{servers.KindRedis}},
		{"redlock", servers.Needs{servers.KindRedis, servers.KindRedisServers}},
		{"zookeeper", servers.Needs{servers.KindRedis, servers.KindZooKeeper}},
		{"mysql", servers.Needs{servers.KindMySQL}},
		{"mysql-version", servers.Needs{servers.KindMySQL}},
	}
	for _, tt := range tests {
		im, ok := Lookup(tt.impl)
		if !ok || !slices.Equal(im.Needs(), tt.want) {
			t.Errorf("%s needs %v, want %v", tt.impl, im.Needs(), tt.want)
		}
	}
}

// TestAvailable: the one place that decides whether a fault can strike an
// implementation on the servers.
func TestAvailable(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lua, _ := Lookup("lua")
	mysql, _ := Lookup("mysql")
	tests := []struct {
		im     Impl
		faults string
		ok     bool
	}{
		{lua, "server-pause,restart,partition,latency", true},
		{mysql, "pause-holder", false}, // no MySQL among the servers
	}
	for _, tt := range tests {
		specs, err := faults.Parse(tt.faults)
		if err != nil {
			t.Fatal(err)
		}
		if err := Available(&s.Set, tt.im, specs, Nodes{}); (err == nil) != tt.ok {
			t.Errorf("%s with %s: %v, want ok %v", tt.im.Name, tt.faults, err, tt.ok)
		}
	}
	if _, err := Run(t.Context(), &s.Set, Plan{Impl: mysql, Workload: Defaults()}); !errors.Is(err, ErrPlan) {
		t.Errorf("Run of mysql with no MySQL: %v, want ErrPlan", err)
	}
	// A pipeline sends buyers' commands from shared connections, which
	// a fault on one buyer cannot reach.
	atomic, _ := Lookup("atomic")
	w := Defaults()
	w.Pipeline = 8
	pause, _ := faults.Parse("server-pause")
	if err := Check(&s.Set, Plan{Impl: atomic, Workload: w, Faults: pause}); !errors.Is(err, ErrPlan) {
		t.Errorf("a pipeline under faults: %v, want ErrPlan", err)
	}
	if err := Check(&s.Set, Plan{Impl: atomic, Workload: w}); err != nil {
		t.Errorf("a pipeline without faults: %v", err)
	}
}

// TestRunAll: every plan is checked before the first sale, so that one
// that cannot run stops RunAll before anything is handed on; plans that
// can run are run in order, each handed on.
func TestRunAll(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := Defaults()
	w.Clients, w.Stock, w.Ramp, w.Workers = 50, 20, 0, 10
	plan := func(name, spec string) Plan {
		im, ok := Lookup(name)
		if !ok {
			t.Fatalf("no implementation %s", name)
		}
		specs, err := faults.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return Plan{Impl: im, Workload: w, Faults: specs, Seed: 1}
	}
	tests := []struct {
		name  string
		plans []Plan
		want  error // nil: every plan runs
	}{
		{"every plan runs, in order", []Plan{plan("atomic", ""), plan("lua", ""), plan("atomic", "")}, nil},
		{"the last plan needs a server the others do not", []Plan{plan("atomic", ""), plan("mysql", "")}, ErrPlan},
		{"the last plan's fault cannot strike", []Plan{plan("atomic", ""), plan("lua", "pause-instance")}, faults.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := RunAll(t.Context(), &s.Set, tt.plans, func(p Plan, res Result) error {
				if res.History == nil {
					t.Fatalf("handed on %s's plan with no history", p.Impl.Name)
				}
				if impl := res.History.Header.Impl; impl != p.Impl.Name {
					t.Errorf("handed on %s's result with %s's plan", impl, p.Impl.Name)
				}
				got = append(got, res.History.Header.Impl)
				return nil
			})
			if tt.want != nil {
				if !errors.Is(err, tt.want) || len(got) > 0 {
					t.Errorf("RunAll = %v after handing on %q; want %v before any sale", err, got, tt.want)
				}
				return
			}
			var want []string
			for _, p := range tt.plans {
				want = append(want, p.Impl.Name)
			}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("RunAll = %v, handed on %q; want nil, %q", err, got, want)
			}
		})
	}
}

// TestRunRefusesBadRate: a rate that is not a number of buyers per second
// is a bad plan, refused before anything runs.
func TestRunRefusesBadRate(t *testing.T) {
	s, err := backends.Open(t.Context(), backends.Options{}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lua, _ := Lookup("lua")
	for _, rate := range []float64{-1, math.NaN(), math.Inf(1)} {
		w := Defaults()
		w.Rate = rate
		if _, err := Run(t.Context(), &s.Set, Plan{Impl: lua, Workload: w}); !errors.Is(err, ErrPlan) {
			t.Errorf("Run at a rate of %v: %v, want ErrPlan", rate, err)
		}
	}
}
