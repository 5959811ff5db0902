package dashboard

import (
	"context"
	"errors"
	"testing"
)

// In cluster mode the overview names the leader and every member, marks
// the leader, and escapes what etcd says; a single server shows no cluster
// card, and a cluster with no leader says so.
func TestOverviewShowsTheCluster(t *testing.T) {
	e := newEnv(t)
	if p := e.get("/"); p.find("cluster").Length() != 0 {
		t.Fatal("a single server shows a cluster card")
	}

	leader := ClusterMember{ID: "node-aaa", URL: "http://10.0.0.1:8080", Leader: true}
	odd := ClusterMember{ID: "node-<b>bbb</b>", URL: `http://10.0.0.2:8080/"><script>x</script>`}
	e.h.Cluster = func(context.Context) (ClusterView, error) {
		return ClusterView{Self: odd, Leader: &leader, Members: []ClusterMember{leader, odd}}, nil
	}
	p := e.get("/")
	if p.status != 200 {
		t.Fatalf("status %d", p.status)
	}
	if got := p.find("cluster-leader").Text(); got != "node-aaa" {
		t.Fatalf("leader shown: %q", got)
	}
	if got := p.find("cluster-self").Text(); got != odd.ID {
		t.Fatalf("self shown: %q", got)
	}
	members := p.find("cluster-member")
	if members.Length() != 2 {
		t.Fatalf("%d members shown, want 2", members.Length())
	}
	if _, ok := members.Eq(0).Attr("data-leader"); !ok {
		t.Fatal("the leader is not marked")
	}
	if _, ok := members.Eq(1).Attr("data-leader"); ok {
		t.Fatal("a follower is marked as leader")
	}
	if members.Eq(1).Find("b").Length() != 0 || p.doc.Find("script:contains('x')").Length() != 0 {
		t.Fatal("a member's id or URL was rendered as markup")
	}
	if p.find("cluster-no-leader").Length() != 0 {
		t.Fatal("says there is no leader while there is one")
	}

	e.h.Cluster = func(context.Context) (ClusterView, error) {
		return ClusterView{Self: odd, Members: []ClusterMember{odd}}, nil
	}
	if p := e.get("/"); p.find("cluster-no-leader").Length() != 1 || p.find("cluster-leader").Length() != 0 {
		t.Fatal("a cluster without a leader is not shown as such")
	}

	// etcd not answering: the page still renders, the card says nothing false.
	e.h.Cluster = func(context.Context) (ClusterView, error) { return ClusterView{}, errors.New("etcd down") }
	if p := e.get("/"); p.status != 200 || p.find("cluster-no-leader").Length() != 1 {
		t.Fatalf("etcd down: status %d", p.status)
	}
}
