package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/reports"
)

// TestDockerServers runs the headline command on a small sale:
// --backend=docker starts five Redis (redlock), a ZooKeeper and a MariaDB
// in containers; a holder paused past its lease lets a second one in for
// lua, zookeeper and redlock, while mysql's conditional UPDATE, which holds
// no lock, has no holder to pause: the fault never fires, and the run is
// no pass of it (inconclusive), its data safe all the same; the summary
// names every server with its version, and no container is left.
func TestDockerServers(t *testing.T) {
	redis, zk, mysql := dockertest.RedisImage(t), dockertest.ZooKeeperImage(t), dockertest.MySQLImage(t)
	code, res := runJSON(t, "--backend=docker", "--redis-image="+redis, "--zk-image="+zk, "--mysql-image="+mysql,
		"--impl=lua,zookeeper,mysql,redlock", "--faults=pause-holder", "--clients=200", "--stock=150", "--seed=1")
	if code != exitFail {
		t.Errorf("exit %d, want %d (lua, zookeeper and redlock break)", code, exitFail)
	}
	want := map[string]bool{"lua": false, "zookeeper": false, "mysql": true, "redlock": false} // safe, its fault never fired
	for _, r := range res.Runs {
		pass, ok := want[r.Impl]
		if !ok {
			t.Errorf("unexpected run %s", r.Impl)
			continue
		}
		delete(want, r.Impl)
		switch {
		case pass && (r.Verdict != reports.Inconclusive || len(r.NotFired) == 0 || r.Data.Status != checker.OK):
			t.Errorf("%s: verdict %s, data %s, not fired %v, reasons %v; want inconclusive, the fault never fired, the data safe", r.Impl, r.Verdict, r.Data.Status, r.NotFired, r.Reasons)
		case !pass && (r.Verdict == reports.Pass || r.Lock.Overlaps == 0):
			t.Errorf("%s: verdict %s with %d overlaps; want a failure with overlapping holders", r.Impl, r.Verdict, r.Lock.Overlaps)
		}
	}
	if len(want) > 0 {
		t.Errorf("runs missing: %v", want)
	}
	for _, s := range []string{"5 × redis 7.", "in docker (" + redis + ")", "zookeeper 3.", "in docker (" + zk + ")"} {
		if !strings.Contains(res.Config.Backend, s) {
			t.Errorf("backend %q lacks %q", res.Config.Backend, s)
		}
	}
	if m := res.Config.MySQL; !strings.HasPrefix(m, "MariaDB ") || !strings.HasSuffix(m, "in docker ("+mysql+")") {
		t.Errorf("mysql %q, want MariaDB ... in docker (%s)", m, mysql)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after the run: %v", ids)
	}
}

// TestDockerSQLServerPause: the MariaDB and the PostgreSQL
// --backend=docker starts are paused by server-pause (docker pause), as
// its Redis is; the SQL sales keep their data safe through the unknown
// outcomes.
func TestDockerSQLServerPause(t *testing.T) {
	tests := []struct {
		name  string
		image func(testing.TB) string
		flag  string                       // the image's
		impls string                       // --impl
		where func(*reports.Result) string // what names the server
	}{
		{"mysql", dockertest.MySQLImage, "--mysql-image", "mysql,mysql-for-update", func(r *reports.Result) string { return r.Config.MySQL }},
		{"postgres", dockertest.PostgresImage, "--pg-image", "pg-for-update", func(r *reports.Result) string { return r.Config.Backend }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			image := tt.image(t)
			_, res := runJSON(t, "--backend=docker", tt.flag+"="+image, "--impl="+tt.impls,
				"--faults=server-pause", "--command-timeout=500ms", "--clients=200", "--stock=150", "--ramp=1s", "--seed=1")
			if want := len(strings.Split(tt.impls, ",")); len(res.Runs) != want {
				t.Fatalf("%d runs, want %d", len(res.Runs), want)
			}
			for _, r := range res.Runs {
				if len(r.Faults) != 1 || r.Faults[0].Name != "server-pause" {
					t.Errorf("%s: faults %+v, want one server-pause", r.Impl, r.Faults)
				}
				if r.Data.Status != checker.OK || r.Oversold > 0 {
					t.Errorf("%s: data safety %s, oversold %d; want the data safe\n%s", r.Impl, r.Data.Status, r.Oversold, strings.Join(r.Reasons, "\n"))
				}
			}
			if w := tt.where(res); !strings.HasSuffix(w, "in docker ("+image+")") {
				t.Errorf("server %q, want ... in docker (%s)", w, image)
			}
			if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
				t.Errorf("containers left after the run: %v", ids)
			}
		})
	}
}

// TestDockerEtcdPostgres: --backend=docker starts etcd's three members
// and PostgreSQL in containers of the images --etcd-image and --pg-image
// name, for the implementations that need them, and only those: etcd-txn
// (its inventory in etcd) and pg-for-update (its inventory in
// PostgreSQL) sell safely, as the truth table expects of them without a
// fault; the summary says where each server runs, and no container is
// left.
func TestDockerEtcdPostgres(t *testing.T) {
	etcd, pg := dockertest.EtcdImage(t), dockertest.PostgresImage(t)
	code, res := runJSON(t, "--backend=docker", "--etcd-image="+etcd, "--pg-image="+pg,
		"--impl=etcd-txn,pg-for-update", "--clients=200", "--stock=150", "--seed=1")
	if code != exitPass {
		t.Errorf("exit %d, want %d", code, exitPass)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Verdict != reports.Pass || r.Sold != r.Stock || r.Oversold > 0 || r.Lock.Overlaps > 0 {
			t.Errorf("%s: verdict %s, sold %d/%d, oversold %d, overlaps %d; want a pass that sells out\n%s", r.Impl, r.Verdict, r.Sold, r.Stock, r.Oversold, r.Lock.Overlaps, strings.Join(r.Reasons, "\n"))
		}
	}
	for _, s := range []string{"etcd cluster of 3 members", "in docker (" + etcd + ")", "PostgreSQL 15", "in docker (" + pg + ")"} {
		if !strings.Contains(res.Config.Backend, s) {
			t.Errorf("backend %q lacks %q", res.Config.Backend, s)
		}
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after the run: %v", ids)
	}
}
