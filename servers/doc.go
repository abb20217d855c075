// Package servers are the servers a sale runs on: what a server is
// (Server) and can do (Pauser, Restarter, QuorumLoser, Addressed,
// Routable, Portable), the kinds
// of server a sale can need (Kind, Needs) and the registry that says, for
// each kind but Redis, how the command line gives one, how lockbench
// reaches or starts it and how a node in a process of its own rebuilds it
// (KindInfo, Register). A run's servers are a Set.
//
// Redis is the engine's own store and has the most shapes: the embedded
// server (Embedded, miniredis in process), a server reached by address
// (External), several independent ones for a lock on many (Cluster), and
// a primary with its replica through Sentinel (Sentinel, whose Levers the
// failover fault pulls). The other kinds are a file each: zookeeper.go,
// mysql.go, etcd.go, postgres.go; the service under test is Endpoints. An
// etcd cluster or a PostgreSQL lockbench starts elsewhere than as its own
// processes (in containers) is run by a host (EtcdHost, PostgresHost;
// hosted.go), through which its levers act. Adding a kind of server
// is one file here that registers its KindInfo; the engine (package
// workload) routes an Addressed server's links through its fault proxy
// (a Routable one's whole spec with the proxy's address in it, SpecAt)
// and sends a Portable server's Spec to its nodes without knowing the
// kind.
//
// This package imports nothing of lockbench's engine; package backends
// opens a run's servers from the command line's options, and package
// workload runs sales on them.
package servers
