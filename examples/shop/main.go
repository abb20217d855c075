// Command shop is a flash-sale service that speaks lockbench's black-box
// protocol (docs/target-protocol.md): the stock and the orders in Redis,
// each purchase guarded by one of lockbench's lock implementations, or by
// none. Run as two processes against one Redis it plays the sources' two
// Tomcats:
//
//	shop --listen=127.0.0.1:8081 --redis=127.0.0.1:6379 --lock=lua &
//	shop --listen=127.0.0.1:8082 --redis=127.0.0.1:6379 --lock=lua &
//	lockbench --target=http://127.0.0.1:8081,http://127.0.0.1:8082
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve the protocol on (loopback)")
	addr := flag.String("redis", "127.0.0.1:6379", "the Redis that holds the stock, the orders and the lock (or lockbench's relay to it), dialled when a request needs it")
	lockName := flag.String("lock", "lua", "the lock that guards each purchase: none, or one of lockbench's implementations that live in one Redis ("+strings.Join(redisLocks(), ", ")+")")
	ttl := flag.Duration("ttl", 0, "the lock's lease (default: the implementation's own)")
	hold := flag.Duration("hold", 0, "business time between reading the stock and writing it")
	prefix := flag.String("prefix", "shop:", "prefix of the shop's keys")
	flag.Parse()
	if err := run(*listen, *addr, *lockName, *prefix, *ttl, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

// redisLocks are the implementations a single Redis is enough for.
func redisLocks() []string {
	var out []string
	for _, im := range locks.All() {
		if im.Uses == locks.UsesRedis {
			out = append(out, im.Name)
		}
	}
	return out
}

func run(listen, addr, lockName, prefix string, ttl, hold time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, MaxRetries: -1})
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// No ping: the Redis is dialled when a request needs it, so that the
	// shop can start before a relay in front of its Redis does
	// (lockbench --target-redis-via).
	s := &shop{c: c, prefix: prefix, hold: hold}
	if lockName != "none" {
		im, ok := locks.Lookup(lockName)
		if !ok || im.Uses != locks.UsesRedis {
			return fmt.Errorf("--lock=%s: want none or one of %s", lockName, strings.Join(redisLocks(), ", "))
		}
		var id [6]byte
		rand.Read(id[:])
		s.instance = hex.EncodeToString(id[:])
		l, err := im.New(ctx, locks.Env{Redis: c, Key: prefix + "lock", TTL: ttl})
		if err != nil {
			return err
		}
		s.lock = l
	}
	srv := &http.Server{Addr: listen, Handler: s}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Printf("shop on http://%s, lock %s\n", listen, lockName)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shop is one instance.
type shop struct {
	c        *redis.Client
	lock     locks.Locker // nil: no lock
	instance string       // the owner prefix of this instance's lock values
	prefix   string
	hold     time.Duration
	buyers   atomic.Int64
}

func (s *shop) stockKey() string  { return s.prefix + "inventory001" }
func (s *shop) ordersKey() string { return s.prefix + "orders" }

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var err error
	var answer any = struct{}{}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/lockbench/reset":
		var req struct{ Stock int64 }
		if err = json.NewDecoder(r.Body).Decode(&req); err == nil {
			_, err = s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, s.stockKey(), req.Stock, 0)
				p.Del(ctx, s.ordersKey(), s.prefix+"lock")
				return nil
			})
		}
	case r.Method == http.MethodPost && r.URL.Path == "/lockbench/buy":
		var req struct{ User string }
		if err = json.NewDecoder(r.Body).Decode(&req); err == nil {
			answer, err = s.buy(ctx, req.User)
		}
	case r.Method == http.MethodGet && r.URL.Path == "/lockbench/state":
		answer, err = s.state(ctx)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		// The effect of a failure is unknown: a 500, never "error".
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

// buyAnswer is the protocol's answer to a purchase.
type buyAnswer struct {
	Outcome string `json:"outcome"`
	Stock   int64  `json:"stock"`
	Token   uint64 `json:"token,omitempty"`
}

// buy is the sources' sale under the lock: read the stock and the user's
// orders, check, the business step, write stock-1 and the order.
func (s *shop) buy(ctx context.Context, user string) (buyAnswer, error) {
	var a buyAnswer
	if s.lock != nil {
		owner := s.instance + ":" + strconv.FormatInt(s.buyers.Add(1), 10)
		lease, err := s.lock.Acquire(ctx, owner)
		if err != nil {
			if errors.Is(err, locks.ErrNotObtained) {
				return buyAnswer{Outcome: "error"}, nil // nothing was written
			}
			return a, err
		}
		defer lease.Release(context.WithoutCancel(ctx))
		a.Token = lease.Token()
	}
	stock, err := s.c.Get(ctx, s.stockKey()).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return a, err
	}
	orders, err := s.c.HGet(ctx, s.ordersKey(), user).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return a, err
	}
	a.Stock = stock
	switch {
	case stock <= 0:
		a.Outcome = "sold-out"
		return a, nil
	case orders > 0:
		a.Outcome = "duplicate"
		return a, nil
	}
	if s.hold > 0 {
		time.Sleep(s.hold)
	}
	if _, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.stockKey(), stock-1, 0)
		p.HIncrBy(ctx, s.ordersKey(), user, 1)
		return nil
	}); err != nil {
		return a, err
	}
	a.Outcome = "sold"
	return a, nil
}

// state is the store's final state.
func (s *shop) state(ctx context.Context) (any, error) {
	stock, err := s.c.Get(ctx, s.stockKey()).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	all, err := s.c.HGetAll(ctx, s.ordersKey()).Result()
	if err != nil {
		return nil, err
	}
	orders := make(map[string]int64, len(all))
	for u, v := range all {
		orders[u], _ = strconv.ParseInt(v, 10, 64)
	}
	return map[string]any{"stock": stock, "orders": orders}, nil
}
