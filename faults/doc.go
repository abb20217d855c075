// Package faults makes the failures of lockbench's catalog
// (docs/catalog.md, and the fault table of docs/faults.md) happen on demand: a GC
// pause of the node holding the lock, a business step longer than the
// lease, a stall between an owner check and its DEL, a lock key
// that vanishes, a holder that dies, a clock that runs ahead, a server
// that stops answering, a slow or cut link.
//
// It follows the failpoint shape of etcd's robustness tests: each fault is
// a Fault (name, parameters, availability on a workload.Reach), listed in a
// registry (All, Lookup, Names); Parse reads the --faults syntax; New turns the
// chosen faults into an Injector that a workload run drives.
//
// Faults strike at the moment that matters rather than at random instants:
// an injection is armed at a scheduled time (a pure function of the seed)
// and fires at the next probe point a lock holder passes (inside its
// critical section, between an owner check and a DEL, between SETNX and
// EXPIRE). Where a failure needs a second client to walk into the window
// (a lock deleted under its holder), the injector waits for one, so that
// each seeded bug shows in every run, not by luck.
package faults
