package workload_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	"github.com/redis/go-redis/v9"
)

// claimConfig is a short atomic sale on prefix "claim:" of b.
func claimConfig(b servers.Backend, force bool) workload.Config {
	return workload.Config{
		Name: "atomic", Sale: sales.Atomic(), Servers: &servers.Set{Redis: b},
		Workload: workload.Workload{Prefix: "claim:", Force: force, Clients: 40, Nodes: 1, Workers: 4, Pool: 4, Stock: 20, Attempts: 1,
			Ramp: 300 * time.Millisecond, Timeout: time.Minute, CommandTimeout: time.Second},
	}
}

// TestPrefixClaimedOnce: two runs started at the same moment on one Redis
// and prefix: one runs, the other is refused (ErrPrefixInUse) naming the
// first, every time (issue 24, row 10: the guard that counted keys, then
// wrote, let both through in 2 of 12 tries, and both reported a safe lua
// as "illegal").
func TestPrefixClaimedOnce(t *testing.T) {
	b := redistest.Embedded(t)
	for try := range 12 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = workload.Run(t.Context(), claimConfig(b, false))
			}()
		}
		close(start)
		wg.Wait()
		ok, refused := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, workload.ErrPrefixInUse):
				refused++
				if want := fmt.Sprintf("in use by the run of pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
					t.Errorf("try %d: %v: does not name the first run (%q)", try, err, want)
				}
			default:
				t.Fatalf("try %d: %v", try, err)
			}
		}
		if ok != 1 || refused != 1 {
			t.Fatalf("try %d: %d runs, %d refused; want one each (%v)", try, ok, refused, errs)
		}
	}
}

// TestPrefixClaimOfAnother: a claim found on the prefix refuses the run
// naming its owner; a dead run's claim on this machine is recognised and
// reported, and taken over with Force; a claim is gone after its run.
func TestPrefixClaimOfAnother(t *testing.T) {
	b := redistest.Embedded(t)
	c := redis.NewClient(b.Options())
	t.Cleanup(func() { c.Close() })
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	claim := func(host string, pid int) string {
		v, _ := json.Marshal(map[string]any{"id": "0123abcd", "host": host, "pid": pid, "started": "2026-11-26T09:12:03Z"})
		return string(v)
	}
	tests := []struct {
		name    string
		claim   string
		force   bool
		refused []string // what the refusal says; none: the run goes ahead
	}{
		{"a live run elsewhere", claim("builder-7", 4242), false, []string{"in use by the run of pid 4242 on builder-7, started 2026-11-26 09:12:03 UTC", "choose another --prefix"}},
		{"a live run elsewhere, forced", claim("builder-7", 4242), true, []string{"in use by the run of pid 4242 on builder-7"}},
		{"a dead run here", claim(host, gone.Process.Pid), false, []string{fmt.Sprintf("pid %d on %s", gone.Process.Pid, host), "no longer running", "--force to take it over"}},
		{"a dead run here, forced", claim(host, gone.Process.Pid), true, nil},
		{"not lockbench's", "hello", false, []string{`claimed by "hello", which is no claim of lockbench's`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Set(t.Context(), "claim:atomic:claim", tt.claim, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Del(t.Context(), "claim:atomic:claim") })
			_, err := workload.Run(t.Context(), claimConfig(b, tt.force))
			if tt.refused == nil {
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := c.Exists(t.Context(), "claim:atomic:claim").Result(); n != 0 {
					t.Error("the claim is left after the run")
				}
				return
			}
			if !errors.Is(err, workload.ErrPrefixInUse) {
				t.Fatalf("Run: %v, want ErrPrefixInUse", err)
			}
			for _, w := range tt.refused {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
			if v, _ := c.Get(t.Context(), "claim:atomic:claim").Result(); v != tt.claim {
				t.Errorf("the other run's claim became %q", v)
			}
		})
	}
}
