package workload

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

func TestSmoke2(t *testing.T) {
	var b Backend
	if a := os.Getenv("REDIS"); a != "" {
		x, err := DialRedis(context.Background(), a, "")
		if err != nil {
			t.Fatal(err)
		}
		b = x
	} else {
		e, err := StartEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		b = e
	}
	for _, name := range strings.Split(os.Getenv("IMPLS"), ",") {
		im, _ := locks.Lookup(name)
		start := time.Now()
		h, err := Run(context.Background(), Config{Impl: im, Backend: b, Prefix: "lb:", Clients: 20000, Nodes: 2, Workers: 200, Pool: 64, Stock: 5000, Attempts: 1, Ramp: time.Second, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[history.Outcome]int{}
		var lastSale int64
		for _, o := range h.Ops {
			counts[o.Outcome]++
			if o.Outcome == history.Sold && o.End > lastSale {
				lastSale = o.End
			}
		}
		t.Logf("%s: final=%+v cmds/att=%.2f lastsale=%v dur=%v wall=%v counts=%v", name, h.Final, float64(h.Header.Commands)/20000, time.Duration(lastSale), time.Duration(h.Header.Duration), time.Since(start), counts)
	}
}
