package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The feed copies the cluster's event log into this node's history, in
// sequence order, so /v1/rejections, /v1/events?since= and the dashboard
// read the same history on every node.
//
// It reads the log from the entry after the last event it holds, then
// watches from the revision of that read. When the watch's revision has
// been compacted away it reads again: the log is keyed by sequence number,
// so a read never depends on MVCC history.
//
// A node that was away longer than the log's retention finds the first
// entry after its last event already trimmed. It logs the hole (the
// sequence numbers it can no longer get from etcd) and carries on from the
// oldest entry kept: its history has a gap there, which an operator can
// fill by copying a peer's database file. Tokens and locks are unaffected:
// they live in etcd, not in the history.

// catchUp copies every log entry after the local history's last event,
// read at one revision, and returns that revision and the last seq copied.
func (n *Node) catchUp(ctx context.Context) (rev, last int64, err error) {
	if last, err = n.cfg.History.MaxSeq(ctx); err != nil {
		return 0, 0, err
	}
	from, end := n.keys.logAt(last+1), clientv3.GetPrefixRangeEnd(n.keys.log())
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(200)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := n.cli.Get(ctx, from, opts...)
		if err != nil {
			return 0, 0, err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			if last, err = n.applyEntry(ctx, kv.Value, last); err != nil {
				return 0, 0, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, last, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// applyEntry writes one log entry's events after last into the history and
// returns the new last seq.
func (n *Node) applyEntry(ctx context.Context, value []byte, last int64) (int64, error) {
	events, err := decodeEvents(value)
	if err != nil {
		return last, fmt.Errorf("cluster: bad event log entry: %w", err)
	}
	i := 0
	for i < len(events) && events[i].Seq <= last {
		i++
	}
	events = events[i:]
	if len(events) == 0 {
		return last, nil
	}
	if first := events[0].Seq; first > last+1 {
		n.log.Warn("history gap: events trimmed from the cluster's log before this node copied them; copy a peer's database to fill it",
			"from", last+1, "to", first-1)
		n.gaps.Add(1)
	}
	if err := n.cfg.History.Apply(ctx, nil, events); err != nil {
		return last, err
	}
	return events[len(events)-1].Seq, nil
}

// follow keeps the history in step with the log until ctx ends.
func (n *Node) follow(ctx context.Context) {
	untilDone(ctx, 200*time.Millisecond, n.followOnce, func(err error) {
		n.log.Warn("event log feed interrupted; resuming", "err", err)
	})
}

func (n *Node) followOnce(ctx context.Context) error {
	rev, last, err := n.catchUp(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range n.cli.Watch(wctx, n.keys.log(), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("watch revision compacted; reading the log again: %w", err)
			}
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.PUT {
				continue // trimming
			}
			if last, err = n.applyEntry(ctx, ev.Kv.Value, last); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// TrimLog deletes log entries older than the retention, as the leader, in
// one transaction conditional on still leading. The leader runs it every
// few seconds.
func (n *Node) TrimLog(ctx context.Context) error {
	t := n.current.Load()
	if t == nil {
		return errors.New("cluster: only the leader trims the event log")
	}
	resp, err := n.cli.Get(ctx, n.keys.seq())
	if err != nil || len(resp.Kvs) == 0 {
		return err
	}
	seq, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return err
	}
	cut := seq - n.keep.Load()
	if cut <= 1 {
		return nil
	}
	// Entries are whole commits: one starting at or below cut goes whole.
	_, err = n.cli.Txn(ctx).If(t.leading).Then(
		clientv3.OpDelete(n.keys.logAt(0), clientv3.WithRange(n.keys.logAt(cut+1))),
	).Commit()
	return err
}
