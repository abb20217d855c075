package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// proxies puts a toxiproxy proxy, run in process, between chosen nodes and
// each server they use (Redis, and ZooKeeper when the lock lives there).
// Toxics on a node's proxies slow or cut only that node's links, all of
// them at once, as a node's network would.
type proxies struct {
	mu     sync.Mutex
	server *toxiproxy.ApiServer
	all    bool         // every node wants a proxy
	nodes  map[int]bool // the nodes that want one
	byNode map[int][]*toxiproxy.Proxy
}

func newProxies() *proxies {
	return &proxies{
		server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		nodes:  map[int]bool{},
		byNode: map[int][]*toxiproxy.Proxy{},
	}
}

// want asks for a proxy in front of node, or of every node when node < 0.
func (px *proxies) want(node int) {
	px.mu.Lock()
	defer px.mu.Unlock()
	if node < 0 {
		px.all = true
		return
	}
	px.nodes[node] = true
}

func (px *proxies) wants(node int) bool {
	if px == nil {
		return false
	}
	px.mu.Lock()
	defer px.mu.Unlock()
	return px.all || px.nodes[node]
}

// start runs a proxy from node to upstream on a free loopback port and
// returns its address.
func (px *proxies) start(node int, upstream string) (string, error) {
	if err := px.startAt(node, "127.0.0.1:0", upstream); err != nil {
		return "", err
	}
	px.mu.Lock()
	defer px.mu.Unlock()
	ps := px.byNode[node]
	return ps[len(ps)-1].Listen, nil
}

// startAt runs a proxy from node to upstream listening at listen.
func (px *proxies) startAt(node int, listen, upstream string) error {
	px.mu.Lock()
	defer px.mu.Unlock()
	p := toxiproxy.NewProxy(px.server, fmt.Sprintf("node%d-%d", node, len(px.byNode[node])), listen, upstream)
	if err := p.Start(); err != nil {
		return fmt.Errorf("faults: proxy for node %d at %s: %w", node, listen, err)
	}
	px.byNode[node] = append(px.byNode[node], p)
	return nil
}

func (px *proxies) proxy(node int) ([]*toxiproxy.Proxy, error) {
	px.mu.Lock()
	defer px.mu.Unlock()
	ps, ok := px.byNode[node]
	if !ok {
		return nil, fmt.Errorf("faults: node %d has no proxy", node)
	}
	return ps, nil
}

// add puts a toxic on node's links, in both directions or downstream only.
func (px *proxies) add(node int, name, typ string, attrs string, both bool) error {
	ps, err := px.proxy(node)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := addToxic(p, node, name, typ, attrs, both); err != nil {
			return err
		}
	}
	return nil
}

func addToxic(p *toxiproxy.Proxy, node int, name, typ string, attrs string, both bool) error {
	streams := []string{"downstream"}
	if both {
		streams = append(streams, "upstream")
	}
	for _, st := range streams {
		js := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{%s}}`, name+"_"+st, typ, st, attrs)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("faults: %s on node %d: %w", typ, node, err)
		}
	}
	return nil
}

// slow delays every reply on node's link.
func (px *proxies) slow(node int, delay, jitter time.Duration) error {
	return px.add(node, "latency", "latency", fmt.Sprintf(`"latency":%d,"jitter":%d`, delay.Milliseconds(), jitter.Milliseconds()), false)
}

// cut drops everything on node's link, both ways, until mend.
func (px *proxies) cut(node int) error {
	return px.add(node, "partition", "timeout", `"timeout":0`, true)
}

// mend removes every toxic from node's link.
func (px *proxies) mend(node int) {
	ps, err := px.proxy(node)
	if err != nil {
		return
	}
	for _, p := range ps {
		p.Toxics.ResetToxics(context.Background())
	}
}

// heal mends every link.
func (px *proxies) heal() {
	px.mu.Lock()
	nodes := make([]int, 0, len(px.byNode))
	for n := range px.byNode {
		nodes = append(nodes, n)
	}
	px.mu.Unlock()
	for _, n := range nodes {
		px.mend(n)
	}
}

// close stops every proxy and its connections.
func (px *proxies) close() {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, ps := range px.byNode {
		for _, p := range ps {
			p.Stop()
		}
	}
	px.byNode = map[int][]*toxiproxy.Proxy{}
}
