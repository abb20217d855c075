package locks

import (
	"context"
	"sync"
)

// localLock is one node's in-process reentrant mutex: Java's synchronized
// or ReentrantLock in the sources. It excludes the node's own clients and no
// one else's, which is the sources' point: it works on one node, not on two.
type localLock struct {
	sem   chan struct{} // holds a token while the lock is held
	mu    sync.Mutex    // guards owner and depth
	owner string
	depth int
}

func newLocal(context.Context, Env) (Locker, error) {
	return &localLock{sem: make(chan struct{}, 1)}, nil
}

func (l *localLock) Acquire(ctx context.Context, owner string) (Lease, error) {
	l.mu.Lock()
	if l.depth > 0 && l.owner == owner {
		l.depth++
		l.mu.Unlock()
		return &localLease{l: l, owner: owner}, nil
	}
	l.mu.Unlock()
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	l.mu.Lock()
	l.owner, l.depth = owner, 1
	l.mu.Unlock()
	return &localLease{l: l, owner: owner}, nil
}

type localLease struct {
	l     *localLock
	owner string
}

func (*localLease) Token() uint64 { return 0 }

func (s *localLease) Release(context.Context) error {
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.depth == 0 || l.owner != s.owner {
		return ErrNotHeld
	}
	l.depth--
	if l.depth == 0 {
		l.owner = ""
		<-l.sem
	}
	return nil
}
