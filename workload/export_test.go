package workload

import "context"

// NoFaults is an injector that injects nothing: a sale under it runs as
// one under faults does (probes, acknowledged starts, each buyer handed
// to its node by the coordinator).
type NoFaults struct{}

// Probe implements Injector.
func (NoFaults) Probe(context.Context, *Controls, Site) error { return nil }

// Run implements Injector.
func (NoFaults) Run(context.Context, *Controls) {}
