package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenceview/fenceview/internal/auth"
)

// keyStore keeps the cluster's API keys in etcd (apikeys/<key id>), so a
// key created at any node works at every node, and a node that becomes
// leader knows every key. Any node may write: a key's id is random and its
// record is created only if absent, so no term condition is needed.
//
// Only the hash of each secret is stored, as in a single server's file.
type keyStore struct {
	cli  *clientv3.Client
	keys keys
}

var _ auth.Store = (*keyStore)(nil)

type keyRecord struct {
	Name      string   `json:"name"`
	Role      string   `json:"role"`
	Resources []string `json:"resources,omitempty"`
	Hash      []byte   `json:"hash"`
	CreatedAt int64    `json:"createdAt"`
}

func (k keys) apiKeys() string { return k.prefix + "apikeys/" }

func (st *keyStore) InsertKey(ctx context.Context, k auth.Stored) error {
	b, err := json.Marshal(keyRecord{Name: k.Name, Role: string(k.Role), Resources: k.Resources, Hash: k.Hash[:], CreatedAt: k.CreatedAt.UnixMilli()})
	if err != nil {
		return err
	}
	key := st.keys.apiKeys() + k.ID
	resp, err := st.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(b))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errors.New("cluster: an API key with this id exists")
	}
	return nil
}

func (st *keyStore) DeleteKey(ctx context.Context, id string) (bool, error) {
	resp, err := st.cli.Delete(ctx, st.keys.apiKeys()+id)
	if err != nil {
		return false, err
	}
	return resp.Deleted > 0, nil
}

func (st *keyStore) Keys(ctx context.Context) ([]auth.Stored, error) {
	resp, err := st.cli.Get(ctx, st.keys.apiKeys(), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]auth.Stored, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var r keyRecord
		role, ok := auth.Role(""), false
		if err := json.Unmarshal(kv.Value, &r); err == nil {
			role, ok = auth.ParseRole(r.Role)
		}
		if !ok || len(r.Hash) != sha256.Size {
			return nil, fmt.Errorf("cluster: bad API key record %q", kv.Key)
		}
		s := auth.Stored{Key: auth.Key{ID: string(kv.Key[len(st.keys.apiKeys()):]), Name: r.Name, Role: role,
			Resources: r.Resources, CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}}
		copy(s.Hash[:], r.Hash)
		out = append(out, s)
	}
	return out, nil
}

// Credentials is the cluster's keyring: the API keys kept in etcd, kept up
// to date with every node's creations and revocations while the node runs.
// Nil until Start returns.
func (n *Node) Credentials() *auth.Keyring { return n.creds }

// openCredentials loads the cluster's keys and starts following them.
func (n *Node) openCredentials(ctx context.Context, adminToken string) error {
	creds, err := auth.NewKeyring(ctx, &keyStore{cli: n.cli, keys: n.keys}, adminToken, n.cfg.Clock.Now)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	n.creds = creds
	return nil
}

// watchKeys reloads the keyring whenever a key is created or deleted at any
// node, so a revocation anywhere ends the key's streams here too. After a
// broken watch (etcd lost, history compacted) it reloads everything and
// watches again, so no change is missed for good.
func (n *Node) watchKeys(ctx context.Context) {
	pfx := n.keys.apiKeys()
	untilDone(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		resp, err := n.cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil {
			err = n.creds.Reload(ctx)
		}
		if err == nil {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for wr := range n.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
				if err = wr.Err(); err != nil {
					break
				}
				if err = n.creds.Reload(ctx); err != nil {
					break
				}
			}
			cancel()
		}
		return err
	}, func(err error) {
		n.log.Warn("following the cluster's API keys; retrying", "err", err)
	})
}
