package workload

import "time"

// arrival is client i's scheduled arrival: evenly spread over the ramp,
// starting one millisecond after the run's base so that no instant is zero.
func (r *run) arrival(i int) int64 {
	return int64(time.Millisecond) + int64(r.cfg.Ramp)*int64(i)/int64(r.cfg.Clients)
}
