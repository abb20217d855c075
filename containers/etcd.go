package containers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/servers"
	"github.com/testcontainers/testcontainers-go"
)

// EtcdImage is the image StartEtcd runs when given none: etcd's own
// image of its 3.5 release.
const EtcdImage = "gcr.io/etcd-development/etcd:v3.5.17"

// EtcdImageEnv names the environment variable that overrides EtcdImage
// (--etcd-image's default), for machines that cannot pull it.
const EtcdImageEnv = "LOCKBENCH_ETCD_IMAGE"

// EtcdBinary is where etcd's image keeps the server, and the local image
// (scripts/docker-images.sh) too: the command each member's container
// runs, in either.
const EtcdBinary = "/usr/local/bin/etcd"

// etcdStartTimeout bounds a member's start until it serves: the members
// of a new cluster serve once a majority of them has started.
const etcdStartTimeout = 60 * time.Second

// etcdMembers runs the members of an etcd cluster in containers, one each,
// with the host's network: the servers.EtcdHost of the cluster StartEtcd
// returns.
type etcdMembers struct {
	image string
	dir   string // the members' data, on the host: /var/lib/etcd in each container
	ctrs  []*testcontainers.DockerContainer
	addrs []string // the members' client addresses, in ctrs' order
	cli   *testcontainers.DockerClient
}

// StartEtcd starts servers.EtcdMembers etcd members, each in a container
// of image (EtcdImage when empty) with host networking, their client and
// peer addresses on free 127.0.0.1 ports, lockbench's timings
// (servers.EtcdMemberArgs), and their data in a directory of the host's
// in memory (servers.MemoryDir, bind-mounted; the members run as
// lockbench's own user, who removes it after), and returns
// the cluster once every member serves and names a leader. Its levers act
// on the containers: a pause is docker pause of the leader's (or of two
// members', for quorum loss), a restart kills a member's container and
// starts it again on its data. As StartRedis, it leaves nothing running
// on an error and does not let a cancelled ctx interrupt a start.
func StartEtcd(ctx context.Context, image string) (*servers.Etcd, error) {
	if image == "" {
		image = EtcdImage
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	var errs []error
	// A free port is only free when asked: a cluster one of whose members
	// exited before it served is started again on new ports.
	for range 3 {
		m, err := startEtcd(ctx, image)
		if err == nil {
			m.cli = cli
			e, err := servers.EtcdIn(ctx, m.addrs, m)
			if err != nil {
				m.Close()
			}
			return e, err
		}
		errs = append(errs, err)
		if ctx.Err() != nil || !errors.Is(err, errExited) {
			break
		}
	}
	cli.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, errors.Join(errs...)
}

// startEtcd starts the members' containers, then waits until each serves;
// the returned members have no Docker client yet.
func startEtcd(ctx context.Context, image string) (*etcdMembers, error) {
	dir, err := servers.MemoryDir("lockbench-etcd-docker-")
	if err != nil {
		return nil, fmt.Errorf("%w: etcd data directory: %v", ErrDocker, err)
	}
	m := &etcdMembers{image: image, dir: dir}
	var names, clients, peers []string
	for i := range servers.EtcdMembers {
		client, err1 := loopback.FreePort()
		peer, err2 := loopback.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			m.remove()
			return nil, fmt.Errorf("loopback: no free port: %w", err)
		}
		names = append(names, "m"+strconv.Itoa(i))
		clients = append(clients, net.JoinHostPort("127.0.0.1", strconv.Itoa(client)))
		peers = append(peers, net.JoinHostPort("127.0.0.1", strconv.Itoa(peer)))
	}
	var cluster []string
	for i, name := range names {
		cluster = append(cluster, name+"=http://"+peers[i])
	}
	// The token is the first client port: another cluster's members, a
	// run's own or another's, never take one of this cluster's for theirs.
	token := "lockbench-" + strings.ReplaceAll(clients[0], ":", "-")
	// Every container is started before any is waited for: no member
	// serves until a majority runs.
	for i, name := range names {
		args := servers.EtcdMemberArgs(name, "/var/lib/etcd/"+name, clients[i], peers[i], strings.Join(cluster, ","), token, "new")
		ctr, err := runServer(ctx, m.member(i, append([]string{EtcdBinary}, args...), func(context.Context) error { return nil }))
		if err != nil {
			m.remove()
			return nil, err
		}
		m.ctrs = append(m.ctrs, ctr)
		m.addrs = append(m.addrs, clients[i])
	}
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), etcdStartTimeout)
	defer cancel()
	for i, ctr := range m.ctrs {
		if err := waitReady(startCtx, ctr, m.serving(i)); err != nil {
			m.remove()
			return nil, err
		}
	}
	if ctx.Err() != nil {
		m.remove()
		return nil, ctx.Err()
	}
	return m, nil
}

// member is the server runServer starts for member i with cmd, ready
// once ready says so.
func (m *etcdMembers) member(i int, cmd []string, ready func(context.Context) error) server {
	return server{
		kind:    "etcd",
		image:   m.image,
		flag:    "--etcd-image",
		local:   "lockbench/etcd:local",
		cmd:     cmd,
		binds:   []string{m.dir + ":/var/lib/etcd"},
		user:    strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()),
		ready:   ready,
		timeout: etcdStartTimeout,
	}
}

// serving is member i as waitReady waits for it: until it serves and
// names a leader.
func (m *etcdMembers) serving(i int) server {
	addr := m.addrs[i]
	return m.member(i, nil, func(ctx context.Context) error { return servers.EtcdServes(ctx, addr) })
}

// remove removes every member's container and their data.
func (m *etcdMembers) remove() {
	for _, ctr := range m.ctrs {
		remove(ctr)
	}
	os.RemoveAll(m.dir)
}

// Where implements servers.EtcdHost.
func (m *etcdMembers) Where() string { return "in docker (" + m.image + ")" }

// Stop implements servers.EtcdHost with docker pause of each member's
// container; resume unpauses them.
func (m *etcdMembers) Stop(ctx context.Context, members []int) (resume func(), err error) {
	var paused []string
	resume = func() {
		ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
		defer cancel()
		for _, id := range paused {
			m.cli.ContainerUnpause(ctx, id)
		}
	}
	for _, i := range members {
		if i < 0 || i >= len(m.ctrs) {
			resume()
			return nil, fmt.Errorf("%w: etcd member %d of %d", ErrDocker, i, len(m.ctrs))
		}
		id := m.ctrs[i].GetContainerID()
		if err := m.cli.ContainerPause(ctx, id); err != nil {
			resume()
			return nil, fmt.Errorf("%w: pause: %v", ErrDocker, err)
		}
		paused = append(paused, id)
	}
	return resume, nil
}

// Restart implements servers.EtcdHost: member i's container is killed
// and started again on its data, and Restart returns
// once the member serves again.
func (m *etcdMembers) Restart(ctx context.Context, i int) error {
	if i < 0 || i >= len(m.ctrs) {
		return fmt.Errorf("%w: etcd member %d of %d", ErrDocker, i, len(m.ctrs))
	}
	if err := kill(ctx, m.ctrs[i]); err != nil {
		return err
	}
	return waitReady(ctx, m.ctrs[i], m.serving(i))
}

// Close implements servers.EtcdHost: every member's container is stopped
// and removed, and their data with them.
func (m *etcdMembers) Close() error {
	var errs []error
	for _, ctr := range m.ctrs {
		errs = append(errs, closeServer(ctr))
	}
	errs = append(errs, os.RemoveAll(m.dir))
	m.cli.Close()
	return errors.Join(errs...)
}

// Interface check.
var _ servers.EtcdHost = (*etcdMembers)(nil)
