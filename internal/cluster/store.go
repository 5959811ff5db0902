package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenceview/fenceview"
)

// Keys under the prefix (default /fenceview/):
//
//	meta/issuer          the cluster's issuer id
//	meta/peer-secret     proves a forwarded request's client address (peer.go)
//	election/<lease>     concurrency.Election candidates; the oldest leads
//	members/<id>         one per running node, bound to its session lease
//	res/<resource id>    the resource's state (resourceRecord, JSON)
//	seq                  the last event sequence number committed
//	log/<first seq>      the events of one commit (a JSON array), %020d
type keys struct{ prefix string }

func (k keys) issuer() string            { return k.prefix + "meta/issuer" }
func (k keys) election() string          { return k.prefix + "election" }
func (k keys) members() string           { return k.prefix + "members/" }
func (k keys) member(id string) string   { return k.members() + id }
func (k keys) resources() string         { return k.prefix + "res/" }
func (k keys) resource(id string) string { return k.resources() + id }
func (k keys) seq() string               { return k.prefix + "seq" }
func (k keys) log() string               { return k.prefix + "log/" }
func (k keys) logAt(seq int64) string    { return fmt.Sprintf("%s%020d", k.log(), seq) }

// Limits of one etcd transaction. etcd refuses more than --max-txn-ops (128
// by default) operations and requests over --max-request-bytes (1.5 MiB);
// a group commit larger than this goes in several transactions, in order.
const (
	maxTxnOps   = 120
	maxTxnBytes = 1 << 20
)

// errDeposed: a transaction's compare on the election key failed, so this
// node is no longer the leader and wrote nothing.
var errDeposed = errors.New("cluster: no longer the leader; nothing was written")

// store is the issuer's Store in cluster mode: every group commit is one or
// more etcd transactions, each conditional on this node still holding its
// election key. Committed events are then copied into this node's own
// history (SQLite) behind the commits (localWriter); the followers fill
// theirs from the event log instead.
type store struct {
	cli    *clientv3.Client
	keys   keys
	leader clientv3.Cmp // CreateRevision(election key) == the revision we won with
	local  *localWriter // copies committed events into this node's history
	// failed is called once when a commit fails: the node must step down
	// and reload, since memory and etcd may now disagree.
	failed func(error)
	log    func(msg string, args ...any)
}

// Apply writes resources and events to etcd and returns once etcd has
// committed them (a majority of members has them on disk).
func (st *store) Apply(ctx context.Context, resources []*fenceview.Resource, events []fenceview.Event) error {
	for _, c := range split(st.keys, resources, events) {
		resp, err := st.cli.Txn(ctx).If(st.leader).Then(c.ops...).Commit()
		if err == nil && !resp.Succeeded {
			err = errDeposed
		}
		if err != nil {
			st.failed(err)
			return fmt.Errorf("cluster commit: %w", err)
		}
	}
	if len(events) > 0 {
		st.local.add(events)
	}
	return nil
}

type chunk struct {
	ops []clientv3.Op
}

// split turns one group commit into transactions within etcd's limits. Each
// carries its own resources and a log entry for its own events, so the log
// stays ordered and every entry is whole.
func split(k keys, resources []*fenceview.Resource, events []fenceview.Event) []chunk {
	var out []chunk
	var ops []clientv3.Op
	size := 0
	var evs []eventRecord
	evSize := 0
	flush := func() {
		if len(evs) > 0 {
			b, _ := json.Marshal(evs)
			ops = append(ops,
				clientv3.OpPut(k.logAt(evs[0].Seq), string(b)),
				clientv3.OpPut(k.seq(), strconv.FormatInt(evs[len(evs)-1].Seq, 10)))
		}
		if len(ops) > 0 {
			out = append(out, chunk{ops: ops})
		}
		ops, size, evs, evSize = nil, 0, nil, 0
	}
	full := func(n int) bool { return len(ops)+3 > maxTxnOps || size+evSize+n > maxTxnBytes }
	for _, r := range resources {
		key := k.resource(r.ResourceID)
		b, _ := json.Marshal(recordOf(r))
		if full(len(key) + len(b)) {
			flush()
		}
		ops = append(ops, clientv3.OpPut(key, string(b)))
		size += len(key) + len(b)
	}
	for _, e := range events {
		rec := eventRecordOf(e)
		b, _ := json.Marshal(rec)
		if full(len(b) + 64) {
			flush()
		}
		evs = append(evs, rec)
		evSize += len(b) + 1
	}
	flush()
	return out
}

// resourceRecord is a resource as kept in etcd.
type resourceRecord struct {
	ID              string `json:"id"`
	HighWaterMark   int64  `json:"hwm,omitempty"`
	LastToken       int64  `json:"last,omitempty"`
	Holder          string `json:"holder,omitempty"`
	OwnerKey        string `json:"owner,omitempty"` // with Holder, who holds it (auth on); absent: no key
	HoldCount       int    `json:"holds,omitempty"`
	Token           int64  `json:"token,omitempty"`
	ExpiresAt       int64  `json:"expires,omitempty"` // unix milliseconds
	GrantedAt       int64  `json:"granted,omitempty"`
	LeaseMs         int64  `json:"leaseMs,omitempty"`
	Accepted        int64  `json:"accepted,omitempty"`
	Rejected        int64  `json:"rejected,omitempty"`
	LastRejectionAt int64  `json:"lastRejection,omitempty"`
	CounterAlarm    int64  `json:"alarm,omitempty"`
	LockDelayMs     int64  `json:"delayMs,omitempty"`
	AvailableAt     int64  `json:"available,omitempty"`
	Permits         int    `json:"permits,omitempty"`
	Election        bool   `json:"election,omitempty"`
	Value           string `json:"value,omitempty"`
	// Readers are the shared holds of a lock held in shared mode.
	Readers []holdRecord `json:"readers,omitempty"`
}

// holdRecord is one shared hold as kept in etcd.
type holdRecord struct {
	Holder      string `json:"holder"`
	OwnerKey    string `json:"owner,omitempty"`
	HoldCount   int    `json:"holds"`
	GrantedAt   int64  `json:"granted"`
	ExpiresAt   int64  `json:"expires"`
	LeaseMs     int64  `json:"leaseMs"`
	LockDelayMs int64  `json:"delayMs,omitempty"`
}

func holdRecords(hs []fenceview.Hold) []holdRecord {
	var out []holdRecord
	for _, h := range hs {
		out = append(out, holdRecord{Holder: h.Holder, OwnerKey: h.OwnerKey, HoldCount: h.HoldCount,
			GrantedAt: ms(h.GrantedAt), ExpiresAt: ms(h.ExpiresAt), LeaseMs: h.LeaseMs, LockDelayMs: h.LockDelayMs})
	}
	return out
}

func holds(rs []holdRecord) []fenceview.Hold {
	var out []fenceview.Hold
	for _, h := range rs {
		out = append(out, fenceview.Hold{Holder: h.Holder, OwnerKey: h.OwnerKey, HoldCount: h.HoldCount,
			GrantedAt: fromMs(h.GrantedAt), ExpiresAt: fromMs(h.ExpiresAt), LeaseMs: h.LeaseMs, LockDelayMs: h.LockDelayMs})
	}
	return out
}

func recordOf(r *fenceview.Resource) resourceRecord {
	return resourceRecord{
		ID: r.ResourceID, HighWaterMark: r.HighWaterMark, LastToken: r.LastToken,
		Holder: r.Holder, OwnerKey: r.OwnerKey, HoldCount: r.HoldCount, Token: r.Token,
		ExpiresAt: ms(r.ExpiresAt), GrantedAt: ms(r.GrantedAt), LeaseMs: r.LeaseMs,
		Accepted: r.Accepted, Rejected: r.Rejected, LastRejectionAt: ms(r.LastRejectionAt),
		CounterAlarm: r.CounterAlarm,
		LockDelayMs:  r.LockDelayMs, AvailableAt: ms(r.AvailableAt), Permits: r.Permits,
		Election: r.Election, Value: r.Value, Readers: holdRecords(r.Readers),
	}
}

func (r resourceRecord) resource() *fenceview.Resource {
	return &fenceview.Resource{
		ResourceID: r.ID, HighWaterMark: r.HighWaterMark, LastToken: r.LastToken,
		Holder: r.Holder, OwnerKey: r.OwnerKey, HoldCount: r.HoldCount, Token: r.Token,
		ExpiresAt: fromMs(r.ExpiresAt), GrantedAt: fromMs(r.GrantedAt), LeaseMs: r.LeaseMs,
		Accepted: r.Accepted, Rejected: r.Rejected, LastRejectionAt: fromMs(r.LastRejectionAt),
		CounterAlarm: r.CounterAlarm,
		LockDelayMs:  r.LockDelayMs, AvailableAt: fromMs(r.AvailableAt), Permits: r.Permits,
		Election: r.Election, Value: r.Value, Readers: holds(r.Readers),
	}
}

// eventRecord is an event as kept in the log.
type eventRecord struct {
	Seq        int64  `json:"seq"`
	Type       string `json:"type"`
	ResourceID string `json:"res"`
	Token      int64  `json:"token,omitempty"`
	Holder     string `json:"holder,omitempty"`
	Presented  int64  `json:"presented,omitempty"`
	Required   int64  `json:"required,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Source     string `json:"source,omitempty"`
	At         int64  `json:"at"` // unix milliseconds, as the history keeps it
	Value      string `json:"value,omitempty"`
	LockDelay  int64  `json:"delayMs,omitempty"`
	Permits    int    `json:"permits,omitempty"`
	Access     string `json:"access,omitempty"`
}

func eventRecordOf(e fenceview.Event) eventRecord {
	return eventRecord{Seq: e.Seq, Type: e.Type, ResourceID: e.ResourceID, Token: e.Token, Holder: e.Holder,
		Presented: e.Presented, Required: e.Required, Reason: e.Reason, Source: e.Source, At: e.At.UnixMilli(),
		Value: e.Value, LockDelay: e.LockDelayMs, Permits: e.Permits, Access: e.Access}
}

func (r eventRecord) event() fenceview.Event {
	return fenceview.Event{Seq: r.Seq, Type: r.Type, ResourceID: r.ResourceID, Token: r.Token, Holder: r.Holder,
		Presented: r.Presented, Required: r.Required, Reason: r.Reason, Source: r.Source, At: time.UnixMilli(r.At).UTC(),
		Value: r.Value, LockDelayMs: r.LockDelay, Permits: r.Permits, Access: r.Access}
}

func decodeEvents(b []byte) ([]fenceview.Event, error) {
	var recs []eventRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, err
	}
	out := make([]fenceview.Event, len(recs))
	for i, r := range recs {
		out[i] = r.event()
	}
	return out, nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// loadState reads every resource and the last event sequence number, at
// one revision, in pages.
func loadState(ctx context.Context, cli *clientv3.Client, k keys) ([]*fenceview.Resource, int64, error) {
	first, err := cli.Get(ctx, k.seq())
	if err != nil {
		return nil, 0, err
	}
	var seq int64
	if len(first.Kvs) > 0 {
		if seq, err = strconv.ParseInt(string(first.Kvs[0].Value), 10, 64); err != nil {
			return nil, 0, fmt.Errorf("cluster: bad %s: %w", k.seq(), err)
		}
	}
	rev := first.Header.Revision
	var out []*fenceview.Resource
	from, end := k.resources(), clientv3.GetPrefixRangeEnd(k.resources())
	for {
		resp, err := cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(1000))
		if err != nil {
			return nil, 0, err
		}
		for _, kv := range resp.Kvs {
			var r resourceRecord
			if err := json.Unmarshal(kv.Value, &r); err != nil || r.ID != strings.TrimPrefix(string(kv.Key), k.resources()) {
				return nil, 0, fmt.Errorf("cluster: bad resource record %q", kv.Key)
			}
			out = append(out, r.resource())
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, seq, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
