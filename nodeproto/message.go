package nodeproto

import (
	"fmt"

	"github.com/lockbench/lockbench/history"
)

// Kind is what a Message is; its number is its value on the wire.
type Kind uint8

// The kinds of message, in the order of the package's protocol.
const (
	// Hello is a node's first message: its index and its token.
	Hello Kind = iota + 1
	// Ping asks the node for its clock's reading (T0 is the sending).
	Ping
	// Pong answers a Ping with the node's clock in T1.
	Pong
	// Setup gives a node its part of the sale (Message.Setup).
	Setup
	// Ready says the node's clients and locks are up (Err if not).
	Ready
	// Go starts the sale at T0, on the node's clock.
	Go
	// Buyer hands the node a buyer (Client), when faults are injected
	// (Assignment.Probes); without, the node hands its buyers to itself
	// at their scheduled arrivals.
	Buyer
	// Start says a buyer begins an attempt at T0; the coordinator
	// answers with an Ack when faults are injected (Assignment.Probes).
	Start
	// Probe reports a probe point (Point) with the attempt's records so
	// far (Ops); the coordinator answers with a ProbeReply.
	Probe
	// ProbeReply answers a Probe: Err empty to go on, or why not.
	ProbeReply
	// Done reports a buyer answered, with its records whole (Ops).
	Done
	// Pause freezes the node until Resume; the node answers with an Ack.
	Pause
	// Ack answers a Start or a Pause.
	Ack
	// Through lets one buyer (Client) of a paused node through.
	Through
	// Resume ends a Pause.
	Resume
	// Skew sets the node's clock skew (T0).
	Skew
	// Stats reports the node's counters while the sale runs.
	Stats
	// Stop ends the sale on the node.
	Stop
	// End is the node's last message: its counters and its Health.
	End
	// Die kills the node's process at once, as a crash would.
	Die
	// Challenge is the coordinator's first message: the nonce (Nonce) a
	// node's hello proves the run's secret with (see Accept).
	Challenge
	// Panicked says a goroutine of the node panicked (Err: the panic and
	// its stack): the node's bug, or its lock's, which ends the run as an
	// internal error.
	Panicked
)

// kindNames are the kinds' names, by value.
var kindNames = [...]string{
	Hello: "hello", Ping: "ping", Pong: "pong", Setup: "setup", Ready: "ready",
	Go: "go", Buyer: "buyer", Start: "start", Probe: "probe", ProbeReply: "probe reply",
	Done: "done", Pause: "pause", Ack: "ack", Through: "through", Resume: "resume",
	Skew: "skew", Stats: "stats", Stop: "stop", End: "end", Die: "die",
	Challenge: "challenge", Panicked: "panicked",
}

// Valid reports whether k is a kind of this protocol.
func (k Kind) Valid() bool { return k >= Hello && k <= Panicked }

// String is the kind's name, or its number when it has none.
func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// Message is every message of the node protocol; a kind uses some fields.
type Message struct {
	// Kind says which fields mean something.
	Kind Kind
	// ID pairs a call with its answer (ping and pong, probe and its
	// reply, pause and its ack).
	ID uint64
	// Node is a hello's node index.
	Node int
	// Token is a hello's token, "" for a node the coordinator did not
	// start.
	Token string
	// Nonce is a challenge's nonce.
	Nonce []byte
	// Proof is a hello's proof of the run's secret (see Accept).
	Proof []byte
	// Client is the buyer a message is about.
	Client int32
	// Attempt is the buyer's attempt a start or a probe is about.
	Attempt int16
	// Point is a probe's probe point.
	Point string
	// T0 and T1 are instants: a ping's sending and the node's clock in
	// its pong; an attempt's start; the sale's base; a skew.
	T0, T1 int64
	// Ops are an attempt's records (a probe) or a buyer's (done).
	Ops []history.Op
	// Setup is a setup's part of the sale.
	Setup *Assignment
	// Err is why a setup or a probe's answer failed, "" when none did.
	Err string
	// Commands is a node's count of commands sent, in stats and end.
	Commands int64
	// Unread is true when a node saw a record it could not read.
	Unread bool
	// Health is a node's own health, in its end.
	Health *history.Health
}

// Assignment is what a node needs to run its part of the sale.
type Assignment struct {
	// Node is the node's index, of Nodes.
	Node, Nodes int
	// UUID names the node in the history.
	UUID string
	// Impl is the implementation's name, which the node looks up.
	Impl string
	// Clients is the sale's number of buyers, on every node.
	Clients int
	// Workload is the sale's shape as the engine encodes it (gob of a
	// workload.Workload): the protocol carries it without reading it, so
	// that it does not depend on the engine.
	Workload []byte
	// Redis is the address the node's clients dial (the coordinator's
	// fault proxy, when it routes the node), nil without Redis.
	Redis *Redis
	// Servers are the sale's other servers, by kind (a servers.Kind):
	// the addresses the node dials, routed through the coordinator's
	// fault proxy and joined by commas, or a whole spec (a DSN, password
	// and all: a PostgreSQL's with the routed address in it, a MySQL's
	// reached directly). The node rebuilds each with its kind's Node.
	Servers map[string]string
	// Probes is true when faults are injected: the node sends each probe
	// point to the coordinator and waits for its answer, waits for the
	// coordinator's ack of each attempt's start (a fault may kill the
	// node, and the coordinator must know which buyers had begun), and is
	// handed each buyer (Buyer), so that a node started again after a
	// kill serves those yet to begin. False, the node sends each start
	// ahead of the attempt, unanswered, and hands its own buyers (those
	// whose index modulo Nodes is Node) to itself at their scheduled
	// arrivals (the Workload's), from the sale's start (Go).
	Probes bool
}

// Redis is how a node reaches a Redis.
type Redis struct {
	// Addr is the server's host:port.
	Addr string
	// Username and Password are its credentials, "" for none.
	Username, Password string
	// DB is the database the node selects.
	DB int
}
