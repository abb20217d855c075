package harness

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/workload"
)

func TestRegister(t *testing.T) {
	lua, _ := Lookup("lua")
	mine := lua
	mine.Name = "test-register"
	tests := []struct {
		name string
		im   Impl
		ok   bool
	}{
		{"a new name", mine, true},
		{"the same name again", mine, false},
		{"a built-in name", lua, false},
		{"no name", Impl{Sale: lua.Sale}, false},
		{"all", Impl{Name: "all", Sale: lua.Sale}, false},
		{"no sale", Impl{Name: "test-no-sale"}, false},
	}
	for _, tt := range tests {
		err := Register(tt.im)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrImpl)) {
			t.Errorf("%s: Register = %v, want ok %v (else ErrImpl)", tt.name, err, tt.ok)
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

// TestNeeds: each implementation asks for exactly the servers its sale
// runs on, so that a run opens no other.
func TestNeeds(t *testing.T) {
	tests := []struct {
		impl string
		want workload.Needs
	}{
		{"none", workload.NeedsRedis},
		{"atomic", workload.NeedsRedis},
		{"watchdog", workload.NeedsRedis},
		{"redlock", workload.NeedsRedis | workload.NeedsRedisServers},
		{"zookeeper", workload.NeedsRedis | workload.NeedsZooKeeper},
		{"mysql", workload.NeedsMySQL},
		{"mysql-version", workload.NeedsMySQL},
	}
	for _, tt := range tests {
		im, ok := Lookup(tt.impl)
		if !ok || im.Needs() != tt.want {
			t.Errorf("%s needs %v, want %v", tt.impl, im.Needs(), tt.want)
		}
	}
}

func TestOpenOnlyWhatIsNeeded(t *testing.T) {
	s, err := Open(t.Context(), ServerOptions{}, workload.NeedsRedis)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Redis == nil || s.ZooKeeper != nil || s.MySQL != nil {
		t.Errorf("Open(Redis) = %+v, want a Redis alone", s.Servers)
	}
	if _, err := Open(t.Context(), ServerOptions{}, workload.NeedsZooKeeper); !errors.Is(err, ErrServers) || !strings.Contains(err.Error(), "--zk") {
		t.Errorf("Open(ZooKeeper) with none given: %v, want ErrServers naming --zk", err)
	}
	if _, err := Open(t.Context(), ServerOptions{Backend: BackendRedis, Redis: []string{"127.0.0.1:1"}}, workload.NeedsRedis|workload.NeedsRedisServers); !errors.Is(err, ErrServers) {
		t.Errorf("Open(several Redis) with one address: %v, want ErrServers", err)
	}
}

// TestAvailable: the one place that decides whether a fault can strike an
// implementation on the servers.
func TestAvailable(t *testing.T) {
	s, err := Open(t.Context(), ServerOptions{}, workload.NeedsRedis)
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
		if err := Available(&s.Servers, tt.im, specs); (err == nil) != tt.ok {
			t.Errorf("%s with %s: %v, want ok %v", tt.im.Name, tt.faults, err, tt.ok)
		}
	}
	if _, _, err := Run(t.Context(), &s.Servers, Plan{Impl: mysql, Workload: Defaults()}); !errors.Is(err, ErrPlan) {
		t.Errorf("Run of mysql with no MySQL: %v, want ErrPlan", err)
	}
}

// TestRunRefusesBadRate: a rate that is not a number of buyers per second
// is a bad plan, refused before anything runs.
func TestRunRefusesBadRate(t *testing.T) {
	s, err := Open(t.Context(), ServerOptions{}, workload.NeedsRedis)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lua, _ := Lookup("lua")
	for _, rate := range []float64{-1, math.NaN(), math.Inf(1)} {
		w := Defaults()
		w.Rate = rate
		if _, _, err := Run(t.Context(), &s.Servers, Plan{Impl: lua, Workload: w}); !errors.Is(err, ErrPlan) {
			t.Errorf("Run at a rate of %v: %v, want ErrPlan", rate, err)
		}
	}
}
