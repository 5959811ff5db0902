package cluster

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Failover. A leader's term ends when its session's lease does: within
// the election TTL of its last keep-alive once its process is gone. Two
// things make it quicker without making safety depend on any timing:
//
//   - followers watch the leader's process (watchLeaderProcess): each
//     holds a TCP connection to the leader's advertised address, and when
//     it breaks and a new one is refused, nothing listens there any more
//     (a SIGKILLed process's port is closed by its kernel at once), so the
//     follower revokes the leader's lease. The candidates campaigning meet
//     the deleted key at once (etcd's Election watches the key before
//     theirs), and the oldest one leads.
//   - a follower holds a request while there is no leader it can reach,
//     for up to failoverWait, and forwards it to the next leader as soon
//     as that one serves (ServeHTTP), instead of answering 503 and letting
//     the client sleep its Retry-After.
//
// Revoking a live leader's lease costs a leader change, never a second
// leader: every commit of a leader is conditional on its election key,
// which the revocation deletes, so from then on it commits nothing and
// steps down. Only a refused connection to an address that accepted one
// during this term is taken for a death, never a slow or lost one (that is
// the lease's to judge), so a partition or a wrong --advertise does not
// depose anyone.

// failoverWait bounds how long a follower holds a request for a leader.
const failoverWait = 3 * time.Second

// leaderState is what changes when the leader does: the leader as etcd
// says, and a channel closed at each change (changes).
type leaderState struct {
	mu      sync.Mutex
	changed chan struct{}
}

// changes returns a channel closed at the next change of the leader or of
// this node's own term.
func (n *Node) changes() <-chan struct{} {
	n.ls.mu.Lock()
	defer n.ls.mu.Unlock()
	if n.ls.changed == nil {
		n.ls.changed = make(chan struct{})
	}
	return n.ls.changed
}

// notify wakes whoever waits for a change.
func (n *Node) notify() {
	n.ls.mu.Lock()
	if n.ls.changed != nil {
		close(n.ls.changed)
		n.ls.changed = nil
	}
	n.ls.mu.Unlock()
}

// setLeader records the leader etcd names (nil: none, or unknown) and
// logs every change this node sees, with the old and the new leader.
func (n *Node) setLeader(m *Member) {
	old := n.leader.Swap(m)
	if idOf(old) == idOf(m) && (old == nil || old.lease == m.lease) {
		return
	}
	n.log.Info("cluster leader changed", "oldLeader", idOf(old), "newLeader", idOf(m), "newLeaderURL", urlOf(m))
	n.notify()
}

func idOf(m *Member) string {
	if m == nil {
		return ""
	}
	return m.ID
}

func urlOf(m *Member) string {
	if m == nil {
		return ""
	}
	return m.URL
}

// watchLeaderProcess deposes a leader whose process is gone (see above).
func (n *Node) watchLeaderProcess(ctx context.Context) {
	for ctx.Err() == nil {
		changed := n.changes()
		if l := n.leader.Load(); l != nil && l.ID != n.self.ID && l.lease != 0 {
			n.watchProcess(ctx, l, changed)
			continue
		}
		select {
		case <-ctx.Done():
		case <-changed:
		}
	}
}

// watchProcess holds a connection to leader l until l stops leading or
// its process is found gone, and then revokes its lease.
func (n *Node) watchProcess(ctx context.Context, l *Member, changed <-chan struct{}) {
	addr, err := hostPort(l.URL)
	if err != nil {
		<-changed
		return
	}
	reached := false // an address that never answered proves nothing
	pause := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			return false
		case <-time.After(d):
			return true
		}
	}
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			if reached && errors.Is(err, syscall.ECONNREFUSED) {
				n.depose(ctx, l)
				pause(time.Second) // the deletion is a change; try again only if none comes
				return
			}
			if !pause(200 * time.Millisecond) {
				return
			}
			continue
		}
		reached = true
		opened := time.Now()
		broke := make(chan struct{})
		go func() {
			defer close(broke)
			var b [1]byte
			for {
				if _, err := conn.Read(b[:]); err != nil {
					return
				}
			}
		}()
		select {
		case <-ctx.Done():
		case <-changed:
		case <-broke:
		}
		conn.Close()
		<-broke
		select {
		case <-ctx.Done():
			return
		case <-changed:
			return
		default:
		}
		if time.Since(opened) < 100*time.Millisecond && !pause(100*time.Millisecond) {
			return // a server closing at once is not spun on
		}
	}
}

// depose revokes the lease of leader l, whose process is gone.
func (n *Node) depose(ctx context.Context, l *Member) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := n.cli.Revoke(rctx, l.lease)
	n.log.Warn("the leader's process is gone (its address refuses connections); its lease revoked so the next leader need not wait for it to run out",
		"leader", l.ID, "url", l.URL, "err", err)
}

// hostPort is the TCP address of a base URL.
func hostPort(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return net.JoinHostPort(u.Hostname(), "80"), nil
}

// keepAlive renews the session's lease several times per keep-alive the
// etcd client sends (a third of the TTL, on a half-second tick): with a
// short TTL, one late keep-alive must not end a live leader's term.
func (n *Node) keepAlive(ctx context.Context, lease clientv3.LeaseID) {
	ttl := time.Duration(n.ttl) * time.Second // whole seconds, at least one
	t := time.NewTicker(ttl / 5)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			kctx, cancel := context.WithTimeout(ctx, ttl/2)
			n.cli.KeepAliveOnce(kctx, lease)
			cancel()
		}
	}
}
