package cluster

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenceview/fenceview/internal/signing"
)

// signingStore keeps the cluster's signing keys in etcd (signing/<key id>),
// so every leader signs with the same keys and /v1/signing-keys is the
// same on every node. Changes are made by the leader, conditional on its
// term like every commit.
//
// The private halves are in etcd as they are in a single server's database
// file: etcd's access (client TLS, auth) guards them.
type signingStore struct {
	cli     *clientv3.Client
	keys    keys
	leading clientv3.Cmp
}

var _ signing.Store = (*signingStore)(nil)

type signingRecord struct {
	Private   []byte `json:"private"` // the 64-byte Ed25519 private key
	CreatedAt int64  `json:"createdAt"`
	Active    bool   `json:"active"`
}

func (k keys) signing() string { return k.prefix + "signing/" }

func (st *signingStore) SigningKeys(ctx context.Context) ([]signing.Key, error) {
	resp, err := st.cli.Get(ctx, st.keys.signing(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []signing.Key
	for _, kv := range resp.Kvs {
		var r signingRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, fmt.Errorf("cluster: bad signing key record %q", kv.Key)
		}
		k, err := signing.NewKey(ed25519.PrivateKey(r.Private), time.UnixMilli(r.CreatedAt).UTC(), r.Active)
		if err != nil {
			return nil, fmt.Errorf("cluster: signing key record %q: %w", kv.Key, err)
		}
		out = append(out, k)
	}
	return out, nil
}

func (st *signingStore) AddSigningKey(ctx context.Context, k signing.Key) error {
	existing, err := st.SigningKeys(ctx)
	if err != nil {
		return err
	}
	ops := []clientv3.Op{st.put(k, true)}
	for _, old := range existing {
		if old.ID != k.ID && old.Active {
			ops = append(ops, st.put(old, false))
		}
	}
	return st.commit(ctx, ops)
}

func (st *signingStore) RemoveSigningKey(ctx context.Context, id string) error {
	return st.commit(ctx, []clientv3.Op{clientv3.OpDelete(st.keys.signing() + id)})
}

func (st *signingStore) put(k signing.Key, active bool) clientv3.Op {
	b, _ := json.Marshal(signingRecord{Private: k.Private(), CreatedAt: k.CreatedAt.UnixMilli(), Active: active})
	return clientv3.OpPut(st.keys.signing()+k.ID, string(b))
}

func (st *signingStore) commit(ctx context.Context, ops []clientv3.Op) error {
	resp, err := st.cli.Txn(ctx).If(st.leading).Then(ops...).Commit()
	if err == nil && !resp.Succeeded {
		err = errDeposed
	}
	return err
}
