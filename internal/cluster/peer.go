package cluster

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A request a follower forwards reaches the leader from the follower's
// address, but the leader's throttle of logins and bad credentials must
// count the client's, or one client would block everyone who comes
// through the same follower. The follower says whom it forwards for in
// clientHeader and proves it is a node of this cluster with peerHeader: a
// random secret every node reads from etcd (made by the first). A request
// without the proof counts as coming from its own address, whatever it
// claims.
const (
	clientHeader = "X-Fenceview-Client"
	peerHeader   = "X-Fenceview-Peer"
)

func (k keys) peerSecret() string { return k.prefix + "meta/peer-secret" }

// settlePeerSecret reads the cluster's peer secret, making it if absent.
func (n *Node) settlePeerSecret(ctx context.Context) error {
	var b [32]byte
	rand.Read(b[:])
	mine := base64.RawURLEncoding.EncodeToString(b[:])
	key := n.keys.peerSecret()
	resp, err := n.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, mine)).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fmt.Errorf("cluster: reading the peer secret from etcd: %w", err)
	}
	n.peerSecret = mine
	if !resp.Succeeded {
		n.peerSecret = string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
	}
	return nil
}

// ClientAddr is the address r comes from, as a host:port or host: its
// RemoteAddr, or, for a request a node of this cluster forwarded, the
// address that node saw.
func (n *Node) ClientAddr(r *http.Request) string {
	if v := r.Header.Get(peerHeader); v != "" && n.peerSecret != "" && subtle.ConstantTimeCompare([]byte(v), []byte(n.peerSecret)) == 1 {
		if c := r.Header.Get(clientHeader); c != "" {
			return c
		}
	}
	return r.RemoteAddr
}
