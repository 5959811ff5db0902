//go:build !race || racecluster

// Under the race detector etcd, which these tests embed, is slow to build
// and to run, so the CI's race run leaves them out; the plain run has them.
// go test -race -tags racecluster ./cluster/... runs them raced.

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/cluster/etcdtest"
	"github.com/fenceview/fenceview/internal/issuer"
)

type nopHistory struct{ events []fenceview.Event }

func (h *nopHistory) Apply(_ context.Context, _ []*fenceview.Resource, ev []fenceview.Event) error {
	h.events = append(h.events, ev...)
	return nil
}
func (h *nopHistory) MaxSeq(context.Context) (int64, error) { return 0, nil }

func campaign(t *testing.T, cli *clientv3.Client, k keys) (*concurrency.Session, *store) {
	t.Helper()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatal(err)
	}
	el := concurrency.NewElection(sess, k.election())
	if err := el.Campaign(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	return sess, &store{
		cli: cli, keys: k, local: newLocalWriter(&nopHistory{}, 0, func(error) {}),
		leader: clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev()),
		failed: func(error) {}, log: func(string, ...any) {},
	}
}

// etcdClient starts a one-member etcd and returns a client of it.
func etcdClient(t *testing.T) *clientv3.Client {
	t.Helper()
	etcd := etcdtest.Start(t, 1)
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// A leader whose election key is gone (its lease expired while it was
// paused, and another node won) commits nothing, however it tries; the new
// leader's commits go through.
func TestDeposedLeaderCommitsNothing(t *testing.T) {
	cli := etcdClient(t)
	ctx := context.Background()
	k := keys{prefix: "/deposed/"}

	old, oldStore := campaign(t, cli, k)
	res := &fenceview.Resource{ResourceID: "r", LastToken: 1, HighWaterMark: 1}
	if err := oldStore.Apply(ctx, []*fenceview.Resource{res}, []fenceview.Event{{Seq: 1, Type: "grant", ResourceID: "r", Token: 1, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	// The lease runs out, as it does for a leader paused past the TTL.
	if _, err := cli.Revoke(ctx, old.Lease()); err != nil {
		t.Fatal(err)
	}
	_, newStore := campaign(t, cli, k)
	if err := newStore.Apply(ctx, []*fenceview.Resource{{ResourceID: "r", LastToken: 2}}, []fenceview.Event{{Seq: 2, Type: "grant", ResourceID: "r", Token: 2, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}

	var failed []error
	oldStore.failed = func(err error) { failed = append(failed, err) }
	stale := []*fenceview.Resource{{ResourceID: "r", LastToken: 1, HighWaterMark: 99}, {ResourceID: "other", LastToken: 5}}
	err := oldStore.Apply(ctx, stale, []fenceview.Event{{Seq: 2, Type: "accept", ResourceID: "r", Token: 99, At: time.Now()}})
	if err == nil || len(failed) != 1 {
		t.Fatalf("deposed leader's commit: err %v, failed %v; want refused and reported", err, failed)
	}
	got, _, err := loadState(ctx, cli, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].LastToken != 2 || got[0].HighWaterMark != 0 {
		t.Fatalf("state after the deposed commit: %+v", got)
	}
	oldStore.local.close()
	if h := oldStore.local.history.(*nopHistory); len(h.events) != 1 {
		t.Fatalf("the deposed leader recorded %d events in its history, want only its first", len(h.events))
	}
}

// A group commit is split into transactions within etcd's limits, each
// with whole log entries in sequence order.
func TestSplitWithinEtcdLimits(t *testing.T) {
	k := keys{prefix: "/p/"}
	var res []*fenceview.Resource
	var evs []fenceview.Event
	long := strings.Repeat("x", 150)
	for i := 0; i < 3000; i++ {
		id := fmt.Sprintf("%s-%d", long, i)
		res = append(res, &fenceview.Resource{ResourceID: id, LastToken: int64(i)})
		for j := 0; j < 3; j++ {
			evs = append(evs, fenceview.Event{Seq: int64(3*i + j + 1), Type: "reject", ResourceID: id, Reason: strings.Repeat("r", 64), Source: strings.Repeat("s", 200), At: time.Now()})
		}
	}
	chunks := split(k, res, evs)
	if len(chunks) < 2 {
		t.Fatalf("%d chunks", len(chunks))
	}
	puts, next := 0, int64(1)
	for _, c := range chunks {
		size := 0
		for _, op := range c.ops {
			size += len(op.KeyBytes()) + len(op.ValueBytes())
			key := string(op.KeyBytes())
			switch {
			case strings.HasPrefix(key, k.resources()):
				puts++
			case strings.HasPrefix(key, k.log()):
				var recs []eventRecord
				if err := json.Unmarshal(op.ValueBytes(), &recs); err != nil || key != k.logAt(recs[0].Seq) {
					t.Fatalf("log entry %s: %v", key, err)
				}
				for _, r := range recs {
					if r.Seq != next {
						t.Fatalf("seq %d, want %d", r.Seq, next)
					}
					next++
				}
			}
		}
		if len(c.ops) > 128 || size > 3*1024*1024/2-64*1024 {
			t.Fatalf("a transaction of %d ops and %d bytes is beyond etcd's default limits", len(c.ops), size)
		}
	}
	if puts != len(res) || next != int64(len(evs))+1 {
		t.Fatalf("%d resources and %d events written, want %d and %d", puts, next-1, len(res), len(evs))
	}
}

// With auth on, an exclusive lock is its holder's and its key's across a
// leader change: the next leader, built on the state it loads from etcd,
// lets the key that took the lock renew and release it, and refuses
// another key using the same holder name.
func TestLeaderChangeKeepsTheOwnerKey(t *testing.T) {
	cli := etcdClient(t)
	ctx := context.Background()
	k := keys{prefix: "/owner/"}
	owner := fenceview.WithOwnerKey(ctx, "key-1")
	other := fenceview.WithOwnerKey(ctx, "key-2")

	// lead is what a node does once elected (Node.lead): a service on the
	// state loaded from etcd, committing through the node's store. Its
	// stepDown ends the term, so that the next campaign wins.
	lead := func() (svc *issuer.Service, stepDown func()) {
		sess, st := campaign(t, cli, k)
		resources, seq, err := loadState(ctx, cli, k)
		if err != nil {
			t.Fatal(err)
		}
		svc = issuer.New(st, resources, seq, issuer.Config{Issuer: "owner-test"})
		return svc, func() { svc.Close(); st.local.close(); sess.Close() }
	}
	first, stepDown := lead()
	g, err := first.Acquire(owner, fenceview.AcquireRequest{ResourceID: "r", Holder: "h", Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	stepDown()

	next, stepDown := lead()
	defer stepDown()
	if _, err := next.Renew(other, "r", "h", time.Hour); fenceview.ErrorCode(err) != fenceview.ENOTOWNER {
		t.Fatalf("renew by another key with the holder's name: %v, want %s", err, fenceview.ENOTOWNER)
	}
	if _, err := next.Release(other, "r", "h"); fenceview.ErrorCode(err) != fenceview.ENOTOWNER {
		t.Fatalf("release by another key with the holder's name: %v, want %s", err, fenceview.ENOTOWNER)
	}
	r, err := next.Renew(owner, "r", "h", time.Hour)
	if err != nil || r.Fencing.Token != g.Fencing.Token {
		t.Fatalf("renew by the owner at the next leader: %+v %v, want token %d", r, err, g.Fencing.Token)
	}
	if _, err := next.Release(owner, "r", "h"); err != nil {
		t.Fatalf("release by the owner at the next leader: %v", err)
	}
}
