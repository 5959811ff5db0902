//go:build !race || racecluster

package cluster_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

const adminToken = "cluster-admin-token"

// The API keys are the cluster's: a key created through one node
// authenticates at another, even after the node it was created at is gone,
// and a revocation at one node makes every other refuse the key and end
// the streams opened with it. The dashboard, in passing, shows the members
// and the leader.
func TestAPIKeysAreTheClusters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and two nodes")
	}
	etcd := etcdtest.Start(t, 1)
	nodes := startNodesWith(t, etcd.Endpoints(), 2, server.Config{AdminToken: adminToken})
	a, b := leaderAndFollower(t, nodes)
	// The dashboard, asked at the follower, shows both nodes and the leader
	// (once each node's membership record is in etcd: under load the
	// follower's own can come a moment after the election).
	wants := []string{`data-testid="cluster"`, `data-testid="cluster-leader">` + a.self().ID, b.self().ID}
	servertest.Eventually(t, "the dashboard shows the cluster", func() bool {
		req, _ := http.NewRequest("GET", b.url()+"/", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range wants {
			if !strings.Contains(string(page), want) {
				return false
			}
		}
		return true
	})

	create := func(name string) (id, secret string) {
		t.Helper()
		got := callAs(t, adminToken, "POST", a.url()+"/v1/auth/keys", map[string]any{"name": name, "role": "client"})
		if got.Status != http.StatusCreated && got.Status != http.StatusOK {
			t.Fatalf("creating a key at A: %d %v", got.Status, got.Body)
		}
		id, _ = got.Body["id"].(string)
		secret, _ = got.Body["secret"].(string)
		return id, secret
	}

	id1, secret1 := create("first")
	var p *auth.Principal
	servertest.Eventually(t, "B's keyring knows the key created at A", func() bool {
		var err error
		p, err = b.srv.Credentials.Authenticate(secret1)
		return err == nil
	})
	if p.KeyID != id1 || p.Role != auth.Client {
		t.Fatalf("B's principal: %+v", p)
	}

	if got := callAs(t, adminToken, "DELETE", a.url()+"/v1/auth/keys/"+id1, nil); got.Status/100 != 2 {
		t.Fatalf("revoking at A: %d %v", got.Status, got.Body)
	}
	select {
	case <-p.Revoked():
	case <-time.After(hangGuard):
		t.Fatal("B never ended the streams of a key revoked at A")
	}
	if _, err := b.srv.Credentials.Authenticate(secret1); err != auth.ErrUnauthenticated {
		t.Fatalf("B after revocation at A: %v, want unauthenticated", err)
	}

	// A key created at A serves at B once A is gone and B leads.
	_, secret2 := create("second")
	servertest.Eventually(t, "B's keyring knows the second key", func() bool {
		_, err := b.srv.Credentials.Authenticate(secret2)
		return err == nil
	})
	a.close()
	leaderOf(t, []*node{b})
	if got := callAs(t, secret2, "GET", b.url()+"/v1/resources", nil); got.Status != http.StatusOK {
		t.Fatalf("second key at B leading: %d %v", got.Status, got.Body)
	}
	if got := callAs(t, secret1, "GET", b.url()+"/v1/resources", nil); got.Status != http.StatusUnauthorized {
		t.Fatalf("revoked key at B leading: %d %v, want 401", got.Status, got.Body)
	}
}
