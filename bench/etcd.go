package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fenceview/fenceview/internal/load"
)

// etcd's own lock recipe as the peer of cluster mode: concurrency.Mutex
// (one session, so one lease, per client), the lock key's revision as the
// fencing token, as etcd's maintainers recommend. TryLock: a held lock is
// busy, as for the others. The guard at the resource is a transaction
// comparing the stored mark (a zero-padded decimal, so etcd's byte-wise
// comparison is numeric) and writing mark and data when the token is not
// below it.
type etcdDriver struct {
	endpoints []string
	prefix    string
	cli       *clientv3.Client
	sessions  []*concurrency.Session // of the previous cell's clients
}

func newEtcd(endpoints []string) *etcdDriver {
	return &etcdDriver{endpoints: endpoints, prefix: "/bench-mutex/"}
}

func (d *etcdDriver) Name() string { return "etcd-mutex" }

func (d *etcdDriver) Prepare(ctx context.Context, s load.Setup) error {
	if d.cli == nil {
		cli, err := clientv3.New(clientv3.Config{Endpoints: d.endpoints, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		d.cli = cli
	}
	for _, s := range d.sessions {
		s.Close()
	}
	d.sessions = nil
	cli := d.cli
	if _, err := cli.Delete(ctx, d.prefix, clientv3.WithPrefix()); err != nil {
		return err
	}
	for r := range s.Resources {
		if _, err := cli.Put(ctx, d.mark(r), pad(0)); err != nil {
			return err
		}
	}
	return nil
}

func (d *etcdDriver) mark(r int) string { return fmt.Sprintf("%smark/%d", d.prefix, r) }

func pad(n int64) string { return fmt.Sprintf("%020d", n) }

func (d *etcdDriver) NewClient(id int, holder string) (load.Client, error) {
	s, err := concurrency.NewSession(d.cli, concurrency.WithTTL(30))
	if err != nil {
		return nil, err
	}
	d.sessions = append(d.sessions, s)
	return &etcdClient{d: d, s: s, held: map[int]*concurrency.Mutex{}}, nil
}

func (d *etcdDriver) Close() error { return load.CloseOpened(d.cli) }

type etcdClient struct {
	d    *etcdDriver
	s    *concurrency.Session
	held map[int]*concurrency.Mutex
}

func (c *etcdClient) Acquire(ctx context.Context, r int) (int64, error) {
	m := concurrency.NewMutex(c.s, c.d.prefix+"lock/"+strconv.Itoa(r))
	if err := m.TryLock(ctx); err != nil {
		if errors.Is(err, concurrency.ErrLocked) {
			return 0, load.ErrBusy
		}
		return 0, err
	}
	c.held[r] = m
	// The lock key's create revision: cluster-wide, never reused.
	resp, err := c.d.cli.Get(ctx, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("etcd: reading the lock key: %v", err)
	}
	return resp.Kvs[0].CreateRevision, nil
}

func (c *etcdClient) Release(ctx context.Context, r int) error {
	m := c.held[r]
	if m == nil {
		return errors.New("etcd: not held")
	}
	delete(c.held, r)
	return m.Unlock(ctx)
}

func (c *etcdClient) Fence(ctx context.Context, r int, token int64) (bool, error) {
	mark := c.d.mark(r)
	// etcd compares with =, !=, < and >: refuse when the mark is above.
	resp, err := c.d.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(mark), ">", pad(token))).
		Else(clientv3.OpPut(mark, pad(token)), clientv3.OpPut(c.d.prefix+"data/"+strconv.Itoa(r), "written with "+strconv.FormatInt(token, 10))).
		Commit()
	if err != nil {
		return false, err
	}
	return !resp.Succeeded, nil
}
