package containers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/testcontainers/testcontainers-go"
)

// errExited means a server's container exited before it served (a port
// taken meanwhile, most likely): the start is worth a retry on another.
var errExited = errors.New("exited before it served")

// server is what the container of a server (Redis, ZooKeeper, MariaDB)
// needs: the label that names it, the image and how to reach readiness.
type server struct {
	kind  string // Label's value: redis, zookeeper, mysql
	image string
	flag  string // the option that names the image, for the error
	local string // the image scripts/docker-images.sh builds
	cmd   []string
	env   map[string]string
	files []testcontainers.ContainerFile
	binds []string // host:container directories bind-mounted
	user  string   // uid:gid the server runs as, "" for the image's
	// ready probes the server from the host; nil once it serves.
	ready   func(ctx context.Context) error
	timeout time.Duration // bound on ready
}

// runServer creates and starts s's container with host networking and
// lockbench's labels, then waits until s.ready answers. On an error the
// container, if one was created, is removed: nothing is left running.
// Cancelling ctx does not interrupt the start (see StartRedis); the error
// is then ctx's.
func runServer(ctx context.Context, s server) (*testcontainers.DockerContainer, error) {
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pullTimeout)
	defer cancel()
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{Image: s.image},
		Started:          true,
	}
	opts := []testcontainers.CustomizeRequestOption{
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			hc.Binds = s.binds
		}),
		testcontainers.WithConfigModifier(func(c *container.Config) {
			if s.user != "" {
				c.User = s.user
			}
		}),
		testcontainers.WithLabels(map[string]string{Label: s.kind, PIDLabel: strconv.Itoa(os.Getpid())}),
	}
	if len(s.cmd) > 0 {
		opts = append(opts, testcontainers.WithCmd(s.cmd...))
	}
	if len(s.env) > 0 {
		opts = append(opts, testcontainers.WithEnv(s.env))
	}
	if len(s.files) > 0 {
		opts = append(opts, testcontainers.WithFiles(s.files...))
	}
	for _, opt := range opts {
		if err := opt.Customize(&req); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDocker, err)
		}
	}
	// testcontainers.Run would attach the container to Docker's default
	// bridge, or create a bridge network of its own where there is none
	// (dockerd --bridge=none): with the host network named the default,
	// it attaches to nothing and creates nothing.
	p, err := testcontainers.NewDockerProvider(testcontainers.WithDefaultBridgeNetwork("host"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDocker, err)
	}
	defer p.Close()
	c, err := p.RunContainer(startCtx, req.ContainerRequest)
	ctr, _ := c.(*testcontainers.DockerContainer)
	if err != nil {
		remove(ctr)
		if ctr != nil && ctr.GetContainerID() != "" {
			return nil, fmt.Errorf("%w: %s: %v", ErrDocker, s.image, err)
		}
		return nil, fmt.Errorf("%w: %s: %v (no registry? build a local image with scripts/docker-images.sh and pass %s=%s)", ErrDocker, s.image, err, s.flag, s.local)
	}
	if err := waitReady(startCtx, ctr, s); err != nil {
		remove(ctr)
		return nil, err
	}
	if ctx.Err() != nil {
		remove(ctr)
		return nil, ctx.Err()
	}
	return ctr, nil
}

// waitReady polls s.ready until it succeeds, the container exits or
// s.timeout runs out; the error then carries the end of the container's
// log.
func waitReady(ctx context.Context, ctr *testcontainers.DockerContainer, s server) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		last = s.ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		if st, err := ctr.State(ctx); err == nil && !st.Running {
			return fmt.Errorf("%w: %s: the %s container %w (exit code %d): %s", ErrDocker, s.image, s.kind, errExited, st.ExitCode, logTail(ctr))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %s did not serve within %v: %v; its log: %s", ErrDocker, s.image, s.kind, s.timeout, last, logTail(ctr))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the end of the container's log, for an error message.
func logTail(ctr *testcontainers.DockerContainer) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := ctr.Logs(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// kill kills ctr's server (docker stop without a grace period: SIGKILL)
// and starts the container again, as it was: the restart of a server.
func kill(ctx context.Context, ctr *testcontainers.DockerContainer) error {
	grace := time.Duration(0)
	if err := ctr.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("%w: restart: stop: %v", ErrDocker, err)
	}
	// Stopped, it must start again whatever becomes of ctx (a fault's,
	// which ends with the sale), within a bound of its own.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	if err := ctr.Start(sctx); err != nil {
		return fmt.Errorf("%w: restart: start: %v", ErrDocker, err)
	}
	return nil
}

// closeServer removes ctr, an error naming it when that fails.
func closeServer(ctr *testcontainers.DockerContainer) error {
	if err := remove(ctr); err != nil {
		return fmt.Errorf("%w: remove %s: %v", ErrDocker, ctr.GetContainerID(), err)
	}
	return nil
}
