package sentinels

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
)

// relay stands in front of one redis-server: clients, Sentinels and the
// replica all reach the server through it, and it passes every byte on.
// It knows one thing of what it carries: which connections are a
// replica's replication link (the connections that sent PSYNC or SYNC).
// While held, the server's side of those links is not read any further,
// so the replication stream waits, in the relay's buffer, the kernel's
// and the server's replica output buffer, to be delivered whole when the
// hold ends: nothing is dropped, the replica is only late.
//
// Toxiproxy (faults/proxy.go) cannot do this: its toxics act on every
// connection of a proxy, and a replica told to replicate from a proxy of
// its own, at an address Sentinel does not know as the primary's, is put
// back on the primary's address by Sentinel (+fix-slave-config).
type relay struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	held  chan struct{} // closed when the hold ends; nil while not held
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
}

// newRelay listens on a free loopback port; start begins relaying to
// upstream.
func newRelay() (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &relay{ln: ln, conns: map[net.Conn]struct{}{}}, nil
}

// Addr is the relay's address: the server's address for everyone.
func (r *relay) Addr() string { return r.ln.Addr().String() }

// port is the relay's port.
func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// start relays the connections it accepts to upstream.
func (r *relay) start(upstream string) {
	r.upstream = upstream
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := r.ln.Accept()
			if err != nil {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.serve(c)
			}()
		}
	}()
}

// track adds (or removes) a connection to close on close; false when the
// relay is closing.
func (r *relay) track(c net.Conn, add bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !add {
		delete(r.conns, c)
		return true
	}
	if r.done {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) serve(client net.Conn) {
	defer client.Close()
	if !r.track(client, true) {
		return
	}
	defer r.track(client, false)
	server, err := net.Dial("tcp", r.upstream)
	if err != nil {
		return
	}
	defer server.Close()
	if !r.track(server, true) {
		return
	}
	defer r.track(server, false)
	var replication atomic.Bool
	var both sync.WaitGroup
	both.Add(1)
	go func() {
		defer both.Done()
		r.copyUp(server, client, &replication)
		closeWrite(server)
	}()
	r.copyDown(client, server, &replication)
	closeWrite(client)
	both.Wait()
}

// sniff is how many bytes of what a client sends are looked at for PSYNC:
// a replica sends it fourth in its handshake, after PING and two
// REPLCONF.
const sniff = 4096

// copyUp passes what the client sends to the server, marking the
// connection as a replication link when it asks for the stream.
func (r *relay) copyUp(dst, src net.Conn, replication *atomic.Bool) {
	buf := make([]byte, 32<<10)
	seen := 0
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if seen < sniff {
				up := bytes.ToUpper(buf[:n])
				if bytes.Contains(up, []byte("\r\nPSYNC\r\n")) || bytes.Contains(up, []byte("\r\nSYNC\r\n")) || bytes.HasPrefix(up, []byte("PSYNC ")) || bytes.HasPrefix(up, []byte("SYNC")) {
					replication.Store(true)
				}
				seen += n
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// copyDown passes what the server sends to the client; on a replication
// link it waits while the relay holds replication.
func (r *relay) copyDown(dst, src net.Conn, replication *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if replication.Load() {
				r.waitHold()
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitHold returns once replication is not held.
func (r *relay) waitHold() {
	r.mu.Lock()
	h := r.held
	r.mu.Unlock()
	if h != nil {
		<-h
	}
}

// hold stops (true) or resumes (false) the replication streams.
func (r *relay) hold(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case on && r.held == nil:
		r.held = make(chan struct{})
	case !on && r.held != nil:
		close(r.held)
		r.held = nil
	}
}

// close stops listening, ends the hold and closes every connection.
func (r *relay) close() {
	r.ln.Close()
	r.hold(false)
	r.mu.Lock()
	r.done = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// closeWrite half-closes c, so that the other side sees the end of what
// was sent.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}
