package workload

import (
	"context"
	"errors"
	"testing"

	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/servers"
)

// oneCommandSale is a Pipeliner that is never run: setup refuses its
// workload first, or the test ends before the sale.
type oneCommandSale struct{}

func (oneCommandSale) Needs() servers.Needs             { return servers.Needs{servers.KindRedis} }
func (oneCommandSale) Guard() Guard                     { return Guard{} }
func (oneCommandSale) Inventory(Env) (Inventory, error) { return nil, errors.New("not run") }
func (oneCommandSale) Pipelines()                       {}
func (oneCommandSale) StartNode(context.Context, *Node) (Seller, error) {
	return nil, errors.New("not run")
}

// TestNodeChecksItsWorkload: a node checks the workload its coordinator
// sends as the coordinator checks its flags, so that a bound out of range
// (a pipeline's queue, the items) is refused before anything is made of
// it.
func TestNodeChecksItsWorkload(t *testing.T) {
	for _, w := range []Workload{{Pipeline: MaxPipeline + 1}, {Pipeline: -1}, {Items: MaxItems + 1}} {
		ns := &nodeSide{opts: NodeOptions{Sale: func(string) (Sale, error) { return oneCommandSale{}, nil }}}
		err := ns.setup(t.Context(), &nodeproto.Assignment{Impl: "one", Nodes: 2, Clients: 10, Workload: encodeWorkload(w)})
		if !errors.Is(err, ErrWorkload) {
			t.Errorf("setup with %+v: %v, want ErrWorkload", w, err)
		}
	}
}
