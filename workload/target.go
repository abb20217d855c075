package workload

import (
	"errors"
	"fmt"

	"github.com/lockbench/lockbench/servers"
)

// ErrTarget means a service under test broke the protocol: an answer
// lockbench cannot read where one was due (reset, state).
var ErrTarget = errors.New("workload: the service broke the protocol")

// protocolError is the error of a run in which buyers tried and the
// service under test answered no purchase in the protocol: nothing it did
// can be judged, and a sale that sold nothing because nothing was
// answered or understood is no pass.
func (r *run) protocolError() error {
	bad := r.firstBad.Load()
	if bad == nil || r.answered.Load() > 0 {
		return nil
	}
	return fmt.Errorf("%w: %s answered no purchase in lockbench's protocol (docs/target-protocol.md); the first: %s", ErrTarget, r.cfg.Servers.Endpoints, *bad)
}

// relay starts the relays of a service's Redis links (Servers.TargetVia)
// before its inventory is made: the reset already goes through them.
func (r *run) relay() error {
	if r.cfg.Sale.Needs().Store() != servers.KindTarget {
		return nil
	}
	for i, via := range r.cfg.Servers.TargetVia {
		relay, ok := r.cfg.Injector.(Relay)
		if !ok || r.cfg.Servers.Redis == nil {
			return fmt.Errorf("%w: relaying %s to the service's Redis needs the fault injector and the Redis", servers.ErrUnsupported, via)
		}
		if err := relay.Relay(i, via, r.cfg.Servers.Redis.Options().Addr); err != nil {
			return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
		}
	}
	return nil
}
