package locks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkSourceSession is source 002's sessionTimeout: 40000 ms.
const zkSourceSession = 40 * time.Second

// errNoZooKeeper is returned by New when the run has no ZooKeeper.
var errNoZooKeeper = errors.New("locks: this implementation needs a ZooKeeper server (--zk)")

// errProcessDied is what an operation returns when a crash killed the
// node's session under it: the caller's process is dead, and no catch
// block of its runs.
var errProcessDied = errors.New("locks: the node's ZooKeeper session died with a crashed holder")

// zkRoot is source 002's ROOT_PATH; the lock's children are NUMBER-prefixed.
const (
	zkRoot   = "/zk-locks"
	zkNumber = "number-"
)

// zkLock is one node's ZooKeeper lock: the node's session, and the lock's
// directory, under which each acquirer creates an ephemeral sequential
// child. faithful selects source 002's lock() and unlock() as written.
type zkLock struct {
	env      Env
	ttl      time.Duration
	dir      string
	faithful bool

	mu   sync.Mutex
	cur  *zkSession // nil after a crash, until the next Acquire
	dead sync.WaitGroup

	// wakeups counts the watch events that woke a waiter: with no herd,
	// one per predecessor that went away.
	wakeups atomic.Int64
}

func newZooKeeper(faithful bool) func(context.Context, Env) (Locker, error) {
	return func(ctx context.Context, env Env) (Locker, error) {
		if env.Remote == nil || len(env.Remote.Addrs) == 0 {
			return nil, errNoZooKeeper
		}
		l := &zkLock{
			env:      env,
			ttl:      cmpOr(env.TTL, zkSourceSession),
			dir:      zkRoot + "/" + strings.ReplaceAll(env.Key, "/", "_"),
			faithful: faithful,
		}
		s, err := l.session(ctx)
		if err != nil {
			return nil, err
		}
		if err := s.ensure(l.dir); err != nil {
			l.Close()
			return nil, fmt.Errorf("locks: zookeeper at %s: creating %s: %w", env.Remote.Addrs[0], l.dir, err)
		}
		return l, nil
	}
}

func cmpOr(d, dflt time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return dflt
}

// session returns the node's live session, opening one if a crash killed
// the last (the service instance restarted). It waits until the session
// is established, or ctx ends.
func (l *zkLock) session(ctx context.Context) (*zkSession, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		return l.cur, nil
	}
	s, err := dialZK(ctx, l.env.Remote, l.ttl)
	if err != nil {
		return nil, err
	}
	l.cur = s
	return s, nil
}

// crash kills session s as a process death would: its connections drop
// and it never reconnects, so it sends no heartbeat and no closeSession.
// The server expires it after the session timeout, which deletes its
// ephemeral nodes. The node's later buyers get a fresh session.
func (l *zkLock) crash(s *zkSession) {
	l.mu.Lock()
	if l.cur == s {
		l.cur = nil
	}
	l.mu.Unlock()
	s.link.kill()
	l.dead.Add(1)
	l.env.Spawn(func() {
		defer l.dead.Done()
		s.conn.Close()
	})
}

// Close ends the node's session cleanly (its ephemeral nodes go at once)
// and waits for crashed ones to be torn down.
func (l *zkLock) Close() error {
	l.mu.Lock()
	s := l.cur
	l.cur = nil
	l.mu.Unlock()
	if s != nil {
		// The lock's directory goes with the last node that leaves it.
		s.conn.Delete(l.dir, -1)
		s.conn.Close()
		s.link.kill()
	}
	l.dead.Wait()
	return nil
}

// Acquire implements Locker.
func (l *zkLock) Acquire(ctx context.Context, owner string) (Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return nil, err
	}
	var path string
	if l.faithful {
		path, err = l.lockAsWritten(ctx, s, owner)
	} else {
		path, err = l.lock(ctx, s, owner)
	}
	if err != nil {
		if s.link.isDead() && ctx.Err() == nil {
			return nil, errProcessDied
		}
		return nil, err
	}
	le := &zkLease{l: l, s: s, path: path, sid: s.conn.SessionID()}
	// A holder whose context ends before it releases has died: its
	// process, and with it the node's session, is gone.
	le.stop = context.AfterFunc(ctx, func() { l.crash(s) })
	return le, nil
}

// lock is source 002's algorithm done right: an ephemeral sequential child
// (created with go-zookeeper's protected create, so that a create whose
// reply is lost is found again instead of left behind), the lowest child
// holds the lock, each waiter watches only the child just below its own,
// and on a wake-up it reads the children again rather than assuming it is
// now the lowest (the one below may have left without ever holding).
func (l *zkLock) lock(ctx context.Context, s *zkSession, owner string) (string, error) {
	path, err := s.conn.CreateProtectedEphemeralSequential(l.dir+"/"+zkNumber, []byte(owner), zk.WorldACL(zk.PermAll))
	if err != nil {
		return "", err
	}
	mine := path[strings.LastIndexByte(path, '/')+1:]
	for {
		children, _, err := s.conn.Children(l.dir)
		if err != nil {
			return "", l.abandon(s, path, err)
		}
		slices.SortFunc(children, func(a, b string) int { return compareSeq(a, b) })
		i := slices.Index(children, mine)
		switch {
		case i < 0:
			// Our node is gone: the session expired under us.
			return "", fmt.Errorf("%w: %s vanished while waiting (session expired)", ErrNotObtained, path)
		case i == 0:
			return path, nil
		}
		ok, _, events, err := s.conn.ExistsW(l.dir + "/" + children[i-1])
		if err != nil {
			return "", l.abandon(s, path, err)
		}
		if !ok {
			continue // gone between the two reads: look again
		}
		select {
		case ev := <-events:
			l.wakeups.Add(1)
			if ev.Err != nil {
				return "", l.abandon(s, path, ev.Err)
			}
		case <-ctx.Done():
			return "", l.abandon(s, path, context.Cause(ctx))
		}
	}
}

// abandon gives up a wait: the waiter's own node is deleted in the
// background (best effort: a dead session takes it anyway) so that its
// successor is not held up, and err is returned.
func (l *zkLock) abandon(s *zkSession, path string, err error) error {
	if !s.link.isDead() {
		l.env.Spawn(func() { s.conn.Delete(path, -1) })
	}
	return err
}

// lockAsWritten is source 002's ZookeeperLock.lock() as written. Any exception is
// caught, logged and swallowed, and lock() returns normally: the caller
// goes on into its critical section without the lock. The path it
// records (threadLocalPath) is the one unlock() deletes; an exception
// before it is set leaves nothing to delete.
func (l *zkLock) lockAsWritten(ctx context.Context, s *zkSession, owner string) (string, error) {
	var currentLock string
	err := func() error {
		// client.create().creatingParentsIfNeeded()
		//     .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(ROOT_PATH + mutex + NUMBER)
		p, err := s.conn.Create(l.dir+"/"+zkNumber, []byte(owner), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			return err
		}
		index := p[strings.LastIndexByte(p, '/')+1:]
		brotherNodes, _, err := s.conn.Children(l.dir)
		if err != nil {
			return err
		}
		slices.Sort(brotherNodes) // Collections.sort: by name
		prevNode := ""
		for i := len(brotherNodes) - 1; i >= 0; i-- {
			if brotherNodes[i] < index {
				prevNode = l.dir + "/" + brotherNodes[i]
				break
			}
		}
		currentLock = p // threadLocalPath.set(currentLock)
		if prevNode == "" {
			return nil
		}
		// new NodeCache(client, prevNode).start(true) reads the node and
		// watches it; its listener counts the latch down on any change,
		// deletion included. The source never reads the children again: it
		// takes the predecessor's going as its turn.
		latch := make(chan struct{}, 1)
		countDown := func() {
			select {
			case latch <- struct{}{}:
			default:
			}
		}
		_, _, events, err := s.conn.GetW(prevNode)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			// NodeCache on a missing node watches for its creation: the
			// watch is set with exists, and nothing counts down...
			_, _, events, err = s.conn.ExistsW(prevNode)
		}
		if err != nil {
			return err
		}
		l.env.Spawn(func() {
			if _, ok := <-events; ok {
				countDown()
			}
		})
		// ...which is the article's "bug": it checks again after adding
		// the listener, and catches (and only logs) an exception here.
		if ok, _, err := s.conn.Exists(prevNode); err == nil && !ok {
			countDown()
		}
		// latch.await(): the source waits with no bound; the harness stops
		// waiting when the client's context ends.
		select {
		case <-latch:
			l.wakeups.Add(1)
			return nil
		case <-ctx.Done():
			// The harness abandons the wait (the run is over): the node
			// goes, as it would with the source's process.
			err := l.abandon(s, currentLock, context.Cause(ctx))
			currentLock = ""
			return err
		}
	}()
	if err != nil && ctx.Err() == nil && !s.link.isDead() {
		// catch (Exception e) { logger.error("获取zookeeper锁异常: " + ...) }
		return currentLock, nil
	}
	return currentLock, err
}

// compareSeq orders lock children by their sequence number, the ten
// digits ZooKeeper appends, whatever their protected-create prefix.
func compareSeq(a, b string) int {
	return strings.Compare(a[max(0, len(a)-10):], b[max(0, len(b)-10):])
}

// zkLease is one holding of a ZooKeeper lock: the holder's child node.
type zkLease struct {
	l    *zkLock
	s    *zkSession
	path string
	sid  int64 // the session the node was created in
	stop func() bool
}

// Token implements Lease; ZooKeeper's sequence numbers could fence, but
// the source uses none.
func (le *zkLease) Token() uint64 { return 0 }

// Release implements Lease: the holder deletes its own node, which wakes
// the one waiter watching it. A node already gone (the session expired)
// is ErrNotHeld. Source 002's unlock() checks that the node exists, deletes
// it, and swallows every error, so it never reports anything.
func (le *zkLease) Release(ctx context.Context) error {
	if !le.stop() {
		return ErrNotHeld // died first: the crash took the session
	}
	if le.l.faithful {
		if le.path != "" {
			if ok, _, err := le.s.conn.Exists(le.path); err == nil && ok {
				le.s.conn.Delete(le.path, -1)
			}
		}
		return nil
	}
	return le.delete(ctx)
}

// delete removes the holder's node. While the connection is down it
// tries again (Curator's guaranteed delete), until the delete lands or
// the session is known to have expired, which took the node with it.
func (le *zkLease) delete(ctx context.Context) error {
	deadline := time.Now().Add(2*le.l.ttl + 5*time.Second)
	for {
		if le.s.conn.SessionID() != le.sid {
			return ErrNotHeld // expired and replaced: the node went with it
		}
		err := le.s.conn.Delete(le.path, -1)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrSessionExpired):
			return ErrNotHeld
		case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer):
			if le.s.link.isDead() || time.Now().After(deadline) || sleep(ctx, 20*time.Millisecond) != nil {
				return fmt.Errorf("locks: zookeeper delete %s: %w", le.path, err)
			}
		default:
			return fmt.Errorf("locks: zookeeper delete %s: %w", le.path, err)
		}
	}
}

// zkSession is one ZooKeeper session of a node and the link it runs on.
type zkSession struct {
	conn *zk.Conn
	link *gateLink
}

// dialZK opens a session to z with the given timeout, waiting until the
// server has granted it or ctx ends.
func dialZK(ctx context.Context, z *Remote, timeout time.Duration) (*zkSession, error) {
	link := &gateLink{wait: z.Wait}
	granted := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect(z.Addrs, timeout,
		zk.WithDialer(link.dial),
		zk.WithLogger(quietLog{}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				once.Do(func() { close(granted) })
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("locks: zookeeper at %s: %w", strings.Join(z.Addrs, ","), err)
	}
	t := time.NewTimer(max(5*time.Second, 2*timeout))
	defer t.Stop()
	select {
	case <-granted:
		return &zkSession{conn: conn, link: link}, nil
	case <-t.C:
		err = errors.New("no session granted")
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	link.kill()
	conn.Close()
	return nil, fmt.Errorf("locks: zookeeper at %s: %w", strings.Join(z.Addrs, ","), err)
}

// ensure creates dir and its parent as persistent nodes if missing
// (Curator's creatingParentsIfNeeded).
func (s *zkSession) ensure(dir string) error {
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, err := s.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}

// gateLink dials a session's connections: each read and write waits at the
// node's pause, and once killed it drops them all and dials no more.
type gateLink struct {
	wait  func(context.Context) error
	mu    sync.Mutex
	dead  bool
	conns []net.Conn
}

var errLinkDead = errors.New("locks: link killed")

func (k *gateLink) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	k.pass()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return nil, errLinkDead
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	k.conns = slices.DeleteFunc(k.conns, func(c net.Conn) bool { return c.(*gatedConn).closed.Load() })
	gc := &gatedConn{Conn: c, link: k}
	k.conns = append(k.conns, gc)
	return gc, nil
}

func (k *gateLink) pass() {
	if k.wait != nil {
		k.wait(context.Background())
	}
}

func (k *gateLink) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	for _, c := range k.conns {
		c.Close()
	}
	k.conns = nil
}

func (k *gateLink) isDead() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dead
}

// gatedConn is a connection whose reads and writes wait at the node's
// gate: a paused node neither hears nor speaks.
type gatedConn struct {
	net.Conn
	link   *gateLink
	closed atomic.Bool
}

func (c *gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.link.pass()
	return n, err
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.link.pass()
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// The registry's notes on the two ZooKeeper implementations.
const (
	zookeeperNotes = "The lock lives in ZooKeeper, the inventory in Redis. Each node has its own session (the source's one client per JVM); --ttl is the session timeout (default the source's 40 s), which the server may raise to its minSessionTimeout (2 x tickTime: 4 s with Debian's default tickTime=2000). " +
		"A waiter re-reads the children when its predecessor goes, instead of assuming its turn, and creates its node with go-zookeeper's protected create. " +
		"A node paused past the session timeout loses its session and its node: a second holder enters while the first still believes it holds (overlap). " +
		"A crashed holder is a dead process: the node's session stops heartbeating without a closeSession, the server expires it after the session timeout and deletes its node, and the lock recovers; the node's later buyers get a fresh session (the instance restarted)."
	zookeeper002Notes = "As written in the article: create EPHEMERAL_SEQUENTIAL, getChildren sorted by name, watch the previous child (NodeCache, then the article's exists re-check), and wait for any change of it, never re-reading the children. " +
		"Every exception of lock() is caught and logged, and lock() returns: on a lost connection (a partition) the caller enters its critical section without the lock. unlock() deletes the node if it exists and swallows errors, so a lost lock is never reported. " +
		"Curator's ExponentialBackoffRetry(5000, 5) is not reproduced: each call is tried once (a retry only delays the same exception when the cut outlasts it). Sessions, crash and pause as for zookeeper."
)
