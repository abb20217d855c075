package backends

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lockbench/lockbench/sentinels"
	"github.com/lockbench/lockbench/servers"
)

func TestOpenOnlyWhatIsNeeded(t *testing.T) {
	s, err := Open(t.Context(), Options{}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Redis == nil || len(s.Others()) > 0 {
		t.Errorf("Open(Redis) = %+v, want a Redis alone", s.Set)
	}
	if _, err := Open(t.Context(), Options{}, servers.Needs{servers.KindZooKeeper}); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "--zk") {
		t.Errorf("Open(ZooKeeper) with none given: %v, want ErrMissing naming --zk", err)
	}
	if _, err := Open(t.Context(), Options{Backend: BackendRedis, Redis: []string{"127.0.0.1:1"}}, servers.Needs{servers.KindRedis, servers.KindRedisServers}); !errors.Is(err, ErrMissing) {
		t.Errorf("Open(several Redis) with one address: %v, want ErrMissing", err)
	}
}

// fakeDocker is a Docker whose Redis servers are embedded ones and whose
// ZooKeeper fails to start: it records what it was asked to start and
// what was closed.
type fakeDocker struct {
	mu      sync.Mutex
	images  []string // the image of every start, in order
	started int      // Redis servers started
	closed  int      // Redis servers closed
}

var errNoZooKeeper = errors.New("fake: no ZooKeeper")

// fakeRedis is an embedded server that tells its Docker when it closes.
type fakeRedis struct {
	*servers.Embedded
	d *fakeDocker
}

func (r fakeRedis) Close() error {
	r.d.mu.Lock()
	r.d.closed++
	r.d.mu.Unlock()
	return r.Embedded.Close()
}

func (d *fakeDocker) StartRedis(_ context.Context, image string) (servers.Backend, error) {
	e, err := servers.StartEmbedded()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.images = append(d.images, image)
	d.started++
	return fakeRedis{e, d}, nil
}

func (d *fakeDocker) StartZooKeeper(_ context.Context, image string) (servers.Addressed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.images = append(d.images, image)
	return nil, errNoZooKeeper
}

var (
	errNoEtcd     = errors.New("fake: no etcd")
	errNoPostgres = errors.New("fake: no PostgreSQL")
)

// refuse records the start of image, and fails it with err.
func (d *fakeDocker) refuse(image string, err error) (servers.Server, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.images = append(d.images, image)
	return nil, err
}

func (d *fakeDocker) StartEtcd(_ context.Context, image string) (servers.Server, error) {
	return d.refuse(image, errNoEtcd)
}

func (d *fakeDocker) StartPostgres(_ context.Context, image string) (servers.Server, error) {
	return d.refuse(image, errNoPostgres)
}

func (d *fakeDocker) StartMySQL(context.Context, string) (MySQLContainer, error) {
	return nil, errors.New("fake: no MySQL")
}

func (d *fakeDocker) SentinelStarter(context.Context, string) (sentinels.Starter, error) {
	return nil, errors.New("fake: no Sentinel")
}

// TestOpenDocker: servers in containers come from Options.Docker, with
// the images the options name; none is refused with ErrMissing, and a
// start that fails leaves none of the containers started before it.
func TestOpenDocker(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		needs   servers.Needs
		want    error    // nil: Open succeeds
		images  []string // what the Docker was asked to start
		servers int      // Redis servers the Redis backend is made of
	}{
		{"no Docker", Options{Backend: BackendDocker}, servers.Needs{servers.KindRedis}, ErrMissing, nil, 0},
		{"no Docker for the Sentinel topology", Options{Backend: BackendSentinel, SentinelDocker: true}, servers.Needs{servers.KindRedis}, ErrMissing, nil, 0},
		{"one Redis", Options{Backend: BackendDocker, RedisImage: "my/redis:7"}, servers.Needs{servers.KindRedis}, nil, []string{"my/redis:7"}, 1},
		{"the Docker's own image", Options{Backend: BackendDocker}, servers.Needs{servers.KindRedis}, nil, []string{""}, 1},
		{"several Redis", Options{Backend: BackendDocker, RedlockServers: 3}, servers.Needs{servers.KindRedis, servers.KindRedisServers}, nil, []string{"", "", ""}, 3},
		{"a ZooKeeper that fails after the Redis", Options{Backend: BackendDocker, ZooKeeperImage: "my/zk"}, servers.Needs{servers.KindRedis, servers.KindZooKeeper}, errNoZooKeeper, []string{"", "my/zk"}, 0},
		{"an etcd that fails after the Redis", Options{Backend: BackendDocker, EtcdImage: "my/etcd"}, servers.Needs{servers.KindRedis, servers.KindEtcd}, errNoEtcd, []string{"", "my/etcd"}, 0},
		{"a PostgreSQL in a container, not on this machine", Options{Backend: BackendDocker, PostgresImage: "my/pg"}, servers.Needs{servers.KindPostgres}, errNoPostgres, []string{"my/pg"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &fakeDocker{}
			o := tt.o
			if tt.images != nil {
				o.Docker = d
			}
			s, err := Open(t.Context(), o, tt.needs)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
			if !slices.Equal(d.images, tt.images) {
				t.Errorf("started %q, want %q", d.images, tt.images)
			}
			if err != nil {
				if d.closed != d.started {
					t.Errorf("Open failed with %d of %d started servers still running", d.started-d.closed, d.started)
				}
				return
			}
			if len(s.Set.Missing(tt.needs)) > 0 {
				t.Errorf("the servers lack %s", s.Set.Missing(tt.needs))
			}
			s.Close()
			if d.closed != tt.servers || d.started != tt.servers {
				t.Errorf("started %d, closed %d Redis servers; want %d, all closed", d.started, d.closed, tt.servers)
			}
		})
	}
}
