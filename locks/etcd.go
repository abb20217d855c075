package locks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// etcdSessionTTL is concurrency.NewSession's default TTL: 60 s.
const etcdSessionTTL = 60 * time.Second

// errNoEtcd is returned by New when the run has no etcd.
var errNoEtcd = errors.New("locks: this implementation needs an etcd cluster (--etcd)")

// etcdRoot is the prefix of lockbench's lock keys in etcd; the lock's
// own key follows it.
const etcdRoot = "/lockbench-locks/"

// etcdLock is one node's etcd lock: its client, and the sessions its
// buyers lock with. concurrency.Mutex keys a waiter by its session's
// lease, so two buyers of one session would share one key, and the
// second would take the first's holding as its own: each buyer locks
// with a session no other buyer is using, taken from the node's free
// ones or granted anew. fenced hands out the lock key's create revision
// as the fencing token.
type etcdLock struct {
	env    Env
	ttl    int // seconds
	pfx    string
	fenced bool
	client *clientv3.Client
	link   *gateLink

	mu   sync.Mutex
	free []*concurrency.Session
}

func newEtcd(fenced bool) func(context.Context, Env) (Locker, error) {
	return func(_ context.Context, env Env) (Locker, error) {
		if env.Remote == nil || len(env.Remote.Addrs) == 0 {
			return nil, errNoEtcd
		}
		// Each node has its own client, as each service instance would;
		// its connections wait at the node's pause, the lease keep-alives
		// included.
		link := &gateLink{wait: env.Remote.Wait}
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   env.Remote.Addrs,
			DialTimeout: 5 * time.Second,
			// A member that stops answering (paused, or cut off) is left
			// for another after a keep-alive timeout.
			DialKeepAliveTime:    2 * time.Second,
			DialKeepAliveTimeout: 2 * time.Second,
			Logger:               zap.NewNop(),
			DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				d, _ := ctx.Deadline()
				return link.dial("tcp", addr, max(time.Until(d), 0))
			})},
		})
		if err != nil {
			return nil, fmt.Errorf("locks: etcd at %s: %w", strings.Join(env.Remote.Addrs, ","), err)
		}
		return &etcdLock{
			env:    env,
			ttl:    etcdTTL(cmpOr(env.TTL, etcdSessionTTL)),
			pfx:    etcdRoot + strings.ReplaceAll(env.Key, "/", "_"),
			fenced: fenced,
			client: c,
			link:   link,
		}, nil
	}
}

// etcdTTL is a lease in whole seconds, rounded up: etcd grants no less
// (and raises a TTL below its minimum, 1.5 election timeouts).
func etcdTTL(d time.Duration) int {
	return int(min(math.Ceil(d.Seconds()), math.MaxInt32))
}

// session takes a live session of the node no buyer is using, or grants
// a new lease for one (bounded by ctx: with no quorum, no lease is
// granted).
func (l *etcdLock) session(ctx context.Context) (*concurrency.Session, error) {
	l.mu.Lock()
	for len(l.free) > 0 {
		s := l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		select {
		case <-s.Done(): // expired (a pause past its TTL): dropped
		default:
			l.mu.Unlock()
			return s, nil
		}
	}
	l.mu.Unlock()
	g, err := l.client.Grant(ctx, int64(l.ttl))
	if err != nil {
		return nil, err
	}
	return concurrency.NewSession(l.client, concurrency.WithLease(g.ID), concurrency.WithTTL(l.ttl))
}

// put gives a session back to the node's free ones.
func (l *etcdLock) put(s *concurrency.Session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = append(l.free, s)
}

// Acquire implements Locker: concurrency.Mutex's Lock on a session of
// the buyer's own. A lease lost while waiting is ErrNotObtained.
func (l *etcdLock) Acquire(ctx context.Context, owner string) (Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return nil, err
	}
	m := concurrency.NewMutex(s, l.pfx)
	if err := m.Lock(ctx); err != nil {
		// Lock deleted its key on a failed wait.
		l.put(s)
		if errors.Is(err, concurrency.ErrSessionExpired) {
			return nil, fmt.Errorf("%w: %v", ErrNotObtained, err)
		}
		return nil, err
	}
	le := &etcdLease{l: l, s: s, m: m}
	if l.fenced {
		// The lock key's create revision, which the Mutex compares in
		// IsOwner: each holder's is above its predecessor's (Jepsen's
		// advice for etcd 3.4.3).
		own := m.IsOwner()
		le.token = uint64(own.GetCompare().GetCreateRevision())
	}
	// A holder whose context ends before it releases has died: its
	// session stops its keep-alives, and the lease runs out on the
	// server after its TTL, taking the key with it.
	le.stop = context.AfterFunc(ctx, func() { s.Orphan() })
	return le, nil
}

// Close revokes the node's free sessions and closes its client.
func (l *etcdLock) Close() error {
	l.mu.Lock()
	free := l.free
	l.free = nil
	l.mu.Unlock()
	for _, s := range free {
		s.Close()
	}
	l.link.kill()
	return l.client.Close()
}

// etcdLease is one holding of an etcd lock.
type etcdLease struct {
	l     *etcdLock
	s     *concurrency.Session
	m     *concurrency.Mutex
	token uint64
	stop  func() bool
}

// EtcdLease is a holding of an etcd lock, for a store in etcd itself
// that writes only while the lock is still the holder's (etcd-txn).
type EtcdLease interface {
	Lease
	// Owner compares the lock key's create revision with the holder's: a
	// transaction's If that holds only while the lock is held.
	Owner() clientv3.Cmp
	// KV is the holder's node's client, through its fault proxy and
	// behind its pause.
	KV() clientv3.KV
}

// Owner implements EtcdLease: concurrency.Mutex's IsOwner.
func (le *etcdLease) Owner() clientv3.Cmp { return le.m.IsOwner() }

// KV implements EtcdLease.
func (le *etcdLease) KV() clientv3.KV { return le.l.client }

// Token implements Lease: the lock key's create revision for etcd-fenced,
// zero for etcd.
func (le *etcdLease) Token() uint64 { return le.token }

// Release implements Lease: the holder's key is deleted if it is still
// the holder's (the Mutex's IsOwner compared in the same transaction);
// a key its lease took with it is ErrNotHeld.
func (le *etcdLease) Release(ctx context.Context) error {
	if !le.stop() {
		return ErrNotHeld // died first
	}
	resp, err := le.l.client.Txn(ctx).If(le.m.IsOwner()).Then(clientv3.OpDelete(le.m.Key())).Commit()
	if err != nil {
		// Unknown: the session is not used again; its lease runs out.
		le.s.Orphan()
		return fmt.Errorf("locks: etcd release of %s: %w", le.m.Key(), err)
	}
	le.l.put(le.s)
	if !resp.Succeeded {
		return ErrNotHeld
	}
	return nil
}

// The registry's notes on the etcd implementations.
const (
	etcdNotes = "The lock lives in etcd, the inventory in Redis: etcd's own client, concurrency.Mutex on a session (a lease kept alive by the client) with --ttl as its TTL (default the client's 60 s; etcd grants whole seconds, at least 1.5 election timeouts: 2 s on lockbench's cluster). " +
		"Each node has its own client; each buyer locks with a session no other buyer of the node is using (one Mutex per session: two buyers on one session would share a key and both hold). " +
		"A node paused past the TTL stops keeping its lease alive: the lease expires, its key goes, the next waiter holds, and the paused holder, when it resumes, goes on writing without knowing (Jepsen, etcd 3.4.3, 2020: etcd's locks are not safe for mutual exclusion on their own). " +
		"A crashed holder's session stops its keep-alives without revoking its lease; the lock recovers after the TTL. Release deletes the key only while it is the holder's (IsOwner in a transaction): a lease lost is reported as not held."
	etcdFencedNotes = "etcd's lock as for etcd, and the lock key's create revision (the Mutex's IsOwner revision) handed to the fenced store as the fencing token, as Jepsen recommends: a holder paused past its TTL still overlaps the next (reported), but its stale token's writes are refused, so data stays safe."
)
