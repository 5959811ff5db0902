package cluster

import (
	"context"
	"errors"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Shared is the cluster's small shared state kept in etcd: the issuer id;
// API keys (authkeys.go) and signing keys (signing.go) sit beside it, each
// record under its own key so a watch follows them. Whatever a single server keeps in
// its database and every node must agree on goes here, so a key created on
// one node works on all, and a signing key survives any node.
type Shared interface {
	// Get returns the value of name and its version; version 0 means absent.
	Get(ctx context.Context, name string) (value []byte, version int64, err error)
	// Swap stores value under name if its version is still version (0: only
	// if absent) and reports whether it did: compare-and-swap, so two nodes
	// never overwrite each other's keys unseen.
	Swap(ctx context.Context, name string, version int64, value []byte) (bool, error)
}

var _ Shared = (*Node)(nil)

func validName(name string) error {
	if name == "" || len(name) > 200 || strings.ContainsAny(name, "\x00") {
		return errors.New("cluster: shared state names are 1..200 bytes")
	}
	return nil
}

// Get implements Shared.
func (n *Node) Get(ctx context.Context, name string) ([]byte, int64, error) {
	if err := validName(name); err != nil {
		return nil, 0, err
	}
	resp, err := n.cli.Get(ctx, n.keys.meta(name))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, 0, err
	}
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision, nil
}

// Swap implements Shared.
func (n *Node) Swap(ctx context.Context, name string, version int64, value []byte) (bool, error) {
	if err := validName(name); err != nil {
		return false, err
	}
	key := n.keys.meta(name)
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", version)).
		Then(clientv3.OpPut(key, string(value))).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}
