package sales

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdSalesRoot is the prefix of the inventories kept in etcd; the run's
// key prefix follows it.
const etcdSalesRoot = "/lockbench-sales/"

// EtcdTxn is the sale whose inventory lives in etcd and whose lock is
// etcd's too (etcd-fenced's): each sale reads the stock under the lock
// and writes stock-1 and the order in one transaction that compares the
// lock key's create revision with the holder's (the Mutex's IsOwner), the
// pattern etcd documents: a holder whose lease ran out writes nothing.
func EtcdTxn(lock locks.Impl) workload.Sale { return etcdTxn{lock: lock} }

type etcdTxn struct{ lock locks.Impl }

func (etcdTxn) Needs() servers.Needs { return servers.Needs{servers.KindEtcd} }

// Guard implements workload.Sale: a lock guards it, and the store refuses
// a stale holder's write, as a fenced store does.
func (etcdTxn) Guard() workload.Guard { return workload.Guard{Lock: true, Fenced: true} }

func etcdOf(set *servers.Set) (*servers.Etcd, error) {
	e, ok := set.Get(servers.KindEtcd).(*servers.Etcd)
	if !ok {
		return nil, fmt.Errorf("%w: etcd", servers.ErrMissing)
	}
	return e, nil
}

// etcdKeys are an inventory's keys in etcd.
type etcdKeys struct{ stock, orders string }

func etcdKeysOf(k workload.Keys) etcdKeys {
	p := etcdSalesRoot + k.Prefix
	return etcdKeys{stock: p + "stock", orders: p + "order/"}
}

func (k etcdKeys) order(user int32) string { return k.orders + strconv.Itoa(int(user)) }

func (etcdTxn) Inventory(env workload.Env) (workload.Inventory, error) {
	e, err := etcdOf(env.Servers)
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd: %v", servers.ErrUnreachable, err)
	}
	return &etcdInventory{c: c, keys: etcdKeysOf(env.Keys)}, nil
}

// StartNode makes the node's handle on the lock, whose client (the
// node's own, through its fault proxy and behind its pause) the sale's
// reads and transactions use too.
func (s etcdTxn) StartNode(ctx context.Context, n *workload.Node) (workload.Seller, error) {
	env, err := n.LockEnv(s.lock.Uses)
	if err != nil {
		return nil, err
	}
	l, err := s.lock.New(ctx, env)
	if err != nil {
		return nil, err
	}
	return &etcdSeller{n: n, lock: l, keys: etcdKeysOf(n.Keys()), timeout: commandTimeout(n.Workload())}, nil
}

// etcdSeller is a node's side of etcd-txn.
type etcdSeller struct {
	n       *workload.Node
	lock    locks.Locker
	keys    etcdKeys
	timeout time.Duration
}

// Close closes the node's lock handle and its client.
func (s *etcdSeller) Close() error {
	if c, ok := s.lock.(locks.Closer); ok {
		return c.Close()
	}
	return nil
}

// admit lets one request past the node's pause, counts it, and bounds it
// by the command timeout.
func (s *etcdSeller) admit(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := s.n.Admit(ctx, 1); err != nil {
		return nil, nil, err
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	return c, cancel, nil
}

// Sell is one attempt: acquire, read the stock and the buyer's order,
// check, the business step, the guarded transaction, release.
func (s *etcdSeller) Sell(ctx context.Context, a *workload.Attempt) {
	underLock(ctx, s.n, a, func() (locks.Lease, error) { return s.lock.Acquire(ctx, a.Owner) }, func(lease locks.Lease) {
		el, ok := lease.(locks.EtcdLease)
		if !ok {
			a.Rec().Fail()
			return
		}
		s.sale(ctx, a.Rec(), el, a.Client)
	})
}

// sale reads the stock and the buyer's order in one request, then writes
// stock-1 and the order in a transaction that applies only while the
// lock key is still the holder's.
func (s *etcdSeller) sale(ctx context.Context, rec workload.Recorder, el locks.EtcdLease, user int32) {
	kv := el.KV()
	rec.Reading()
	rctx, cancel, err := s.admit(ctx)
	if err != nil {
		rec.ReadFailed()
		return
	}
	resp, err := kv.Txn(rctx).Then(clientv3.OpGet(s.keys.stock), clientv3.OpGet(s.keys.order(user), clientv3.WithCountOnly())).Commit()
	cancel()
	if err != nil {
		rec.ReadFailed()
		return
	}
	stockKV := resp.Responses[0].GetResponseRange().Kvs
	if len(stockKV) == 0 {
		rec.ReadFailed()
		return
	}
	stock, err := strconv.ParseInt(string(stockKV[0].Value), 10, 64)
	if err != nil {
		rec.ReadFailed()
		return
	}
	if !checked(ctx, s.n, rec, stock, resp.Responses[1].GetResponseRange().Count > 0) {
		return
	}
	rec.Writing()
	wctx, cancel, err := s.admit(ctx)
	if err != nil {
		rec.NotSent()
		return
	}
	defer cancel()
	w, err := kv.Txn(wctx).If(el.Owner()).
		Then(clientv3.OpPut(s.keys.stock, strconv.FormatInt(stock-1, 10)), clientv3.OpPut(s.keys.order(user), "1")).
		Commit()
	switch {
	case err != nil:
		rec.Unknown()
	case w.Succeeded:
		rec.Applied()
	default:
		rec.Refused()
	}
}

// etcdInventory is etcd-txn's inventory: the stock under the run's
// prefix, one key per order.
type etcdInventory struct {
	c    *clientv3.Client // the run's own: set-up, audit, removal
	keys etcdKeys
}

// Prepare refuses a prefix that holds keys already (unless force), then
// sets the stock.
func (v *etcdInventory) Prepare(ctx context.Context, stock int64, force bool) error {
	root := etcdRoot(v.keys)
	r, err := v.c.Get(ctx, root, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("%w: etcd: %v", servers.ErrUnreachable, err)
	}
	if r.Count > 0 && !force {
		return fmt.Errorf("%w: etcd holds %d keys under %s; pass --force to delete them, or choose another --prefix", workload.ErrPrefixInUse, r.Count, root)
	}
	if _, err := v.c.Delete(ctx, root, clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("%w: etcd: %v", servers.ErrUnreachable, err)
	}
	if _, err := v.c.Put(ctx, v.keys.stock, strconv.FormatInt(stock, 10)); err != nil {
		return fmt.Errorf("%w: etcd: %v", servers.ErrUnreachable, err)
	}
	return nil
}

func etcdRoot(k etcdKeys) string { return k.stock[:len(k.stock)-len("stock")] }

// Audit reads the stock and counts the orders at one revision.
func (v *etcdInventory) Audit(ctx context.Context) (history.Final, error) {
	var f history.Final
	r, err := v.c.Txn(ctx).Then(clientv3.OpGet(v.keys.stock), clientv3.OpGet(v.keys.orders, clientv3.WithPrefix(), clientv3.WithCountOnly())).Commit()
	if err != nil {
		return f, err
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return f, errors.New("sales: etcd: the stock key is gone")
	}
	if f.Stock, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
		return f, fmt.Errorf("sales: etcd: stock %q: %v", kvs[0].Value, err)
	}
	f.Orders = r.Responses[1].GetResponseRange().Count
	return f, nil
}

// Ping implements workload.Inventory.
func (v *etcdInventory) Ping(ctx context.Context) error {
	_, err := v.c.Get(ctx, v.keys.stock, clientv3.WithCountOnly())
	return err
}

// Clear deletes the run's keys and closes the run's client.
func (v *etcdInventory) Clear(ctx context.Context) error {
	defer v.c.Close()
	_, err := v.c.Delete(ctx, etcdRoot(v.keys), clientv3.WithPrefix())
	return err
}
