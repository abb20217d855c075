package containers_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/redis/go-redis/v9"
)

// TestRedis checks the backend's levers on a real container: a paused
// container answers nothing and then everything again with its data, a
// restarted one answers with none, and Close leaves no container.
func TestRedis(t *testing.T) {
	image := dockertest.RedisImage(t)
	ctx := t.Context()
	r, err := containers.StartRedis(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			r.Close()
		}
	})
	if got, want := r.Name(), "in docker ("+image+")"; !strings.HasPrefix(got, "redis 7.") || !strings.HasSuffix(got, want) {
		t.Errorf("Name() = %q, want redis 7.x ... %q", got, want)
	}
	if !strings.HasPrefix(r.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want loopback", r.Addr())
	}
	c := redis.NewClient(r.Options())
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// Paused: a PING gets no answer within its deadline.
	const pause = 2 * time.Second
	start := time.Now()
	if err := r.Pause(ctx, pause); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = c.Ping(pctx).Err()
	cancel()
	if !timedOut(err) {
		t.Errorf("PING during the pause: %v, want a timeout", err)
	}
	// Thawed: it answers again, not before the pause is over, with its data.
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Errorf("GET after the pause: %q, %v; want v", got, err)
	}
	if d := time.Since(start); d < pause-100*time.Millisecond || d > pause+5*time.Second {
		t.Errorf("the server answered %v after a %v pause", d, pause)
	}

	// Restarted: the same address, no data.
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET after the restart: %v, want redis.Nil (no persistence)", err)
	}

	// A pause in progress does not keep Close from removing the container.
	if err := r.Pause(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	closed = true
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close of a paused container took %v", d)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}

// timedOut reports whether err is a deadline that ran out, of the context
// or of the connection.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// TestMissingImage: an image that is neither local nor pullable is an
// error that says how to build a local one, and leaves nothing behind.
func TestMissingImage(t *testing.T) {
	dockertest.RedisImage(t)
	_, err := containers.StartRedis(t.Context(), "lockbench/no-such-image:local")
	if !errors.Is(err, containers.ErrDocker) || !strings.Contains(err.Error(), "scripts/docker-images.sh") {
		t.Errorf("StartRedis of a missing image: %v, want ErrDocker naming scripts/docker-images.sh", err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left: %v", ids)
	}
}
