package servertest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdClient is a client of the etcd members at endpoints (host:port),
// without a log, closed when t ends.
func EtcdClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// etcdTries bounds how often EtcdPut and EtcdGet ask again, each try bounded too.
const etcdTries = 30

// EtcdPut writes key=val, trying again (each try bounded) while the
// client's member does not answer or no leader takes the write: a
// request sent to a stopped member waits for it, the client moves to
// another only when it gives up, and a new leader is elected a second or
// more after the old one stops.
func EtcdPut(t testing.TB, c *clientv3.Client, key, val string) {
	t.Helper()
	var err error
	for range etcdTries {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_, err = c.Put(ctx, key, val)
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatalf("put %s: %v", key, err)
}

// EtcdGet reads key, trying again as EtcdPut does; "" when it is absent.
func EtcdGet(t testing.TB, c *clientv3.Client, key string) string {
	t.Helper()
	var err error
	for range etcdTries {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		r, gerr := c.Get(ctx, key)
		cancel()
		if err = gerr; err == nil {
			if len(r.Kvs) == 0 {
				return ""
			}
			return string(r.Kvs[0].Value)
		}
	}
	t.Fatalf("get %s: %v", key, err)
	return ""
}
