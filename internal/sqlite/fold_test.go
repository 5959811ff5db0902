package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Folding the log changes nothing a reader sees: after every commit, with
// folds after every commit, every few commits or never, and after a
// reopen, the resources, each resource's history and the per-minute
// counts are exactly what was committed.
func TestFoldChangesNothingReadersSee(t *testing.T) {
	for _, every := range []int{1, 7, 1 << 30} {
		t.Run(fmt.Sprintf("every=%d", every), func(t *testing.T) {
			db := newCommitted(t, every)
			rng := rand.New(rand.NewPCG(1, uint64(every)))
			ids := []string{"a", "b", "c", "d"}
			start := time.UnixMilli(1_700_000_000_000).UTC()
			for commit := 0; commit < 40; commit++ {
				at := start.Add(time.Duration(commit) * 20 * time.Second) // two or three commits a minute
				n := 1 + rng.IntN(4)
				if commit%4 == 3 {
					// A group larger than Apply's largest INSERT (chunkRows),
					// the same resource often in one chunk: the newest row
					// of each must win, and the events keep their order.
					n = chunkRows[0] + 1 + rng.IntN(2*chunkRows[0])
				}
				for range n {
					id := ids[rng.IntN(len(ids))]
					r := db.resource(id)
					r.LastToken++
					r.Token, r.Holder, r.HoldCount, r.LeaseMs = r.LastToken, fmt.Sprintf("h%d", commit), 1, 30000
					r.GrantedAt, r.ExpiresAt = at, at.Add(30*time.Second)
					r.Readers = nil
					if rng.IntN(3) == 0 { // held shared: its readers' holds
						r.Readers = []fenceview.Hold{
							{Holder: r.Holder, OwnerKey: "k1", HoldCount: 2, GrantedAt: at, ExpiresAt: at.Add(30 * time.Second), LeaseMs: 30000, LockDelayMs: 500},
							{Holder: "other \"reader\"", HoldCount: 1, GrantedAt: at, ExpiresAt: at.Add(10 * time.Second), LeaseMs: 10000},
						}
					}
					e := fenceview.Event{Seq: db.nextSeq(), Type: fenceview.EventGrant,
						ResourceID: id, Token: r.LastToken, Holder: r.Holder, At: at}
					if rng.IntN(3) == 0 {
						e.Type, e.Reason = fenceview.EventReject, []string{"stale-token", "bad-signature"}[rng.IntN(2)]
						if rng.IntN(2) == 0 {
							e.Access = fenceview.AccessRead
						}
					}
					db.change(r, &e)
				}
				db.commit(true)
			}
			const logged = `SELECT COUNT(*) FROM resource_log`
			if every == 1<<30 && db.count(logged) == 0 {
				t.Fatal("nothing was left in the log: the never-folding run folded")
			}

			// Reopening folds whatever the log still holds.
			db.reopen()
			if n := db.count(logged); n != 0 {
				t.Fatalf("after reopen, %d rows in the log", n)
			}
			db.check()
		})
	}
}

// checkReads compares what db reads with the model: the latest row of each
// resource and the whole history, in order.
func checkReads(t *testing.T, db *DB, latest map[string]fenceview.Resource, history []fenceview.Event) {
	t.Helper()
	ctx := context.Background()
	var minutes []fenceview.MinuteCount
	reasons := map[string]int64{}
	for _, e := range history {
		c := fenceview.MinuteCount{Minute: e.At.Truncate(time.Minute), Type: e.Type, N: 1}
		if e.Type == fenceview.EventReject {
			c.Reason = e.Reason
			reasons[e.Reason]++
		}
		i := slices.IndexFunc(minutes, func(m fenceview.MinuteCount) bool {
			return m.Minute.Equal(c.Minute) && m.Type == c.Type && m.Reason == c.Reason
		})
		if i < 0 {
			minutes = append(minutes, c)
		} else {
			minutes[i].N++
		}
	}
	slices.SortFunc(minutes, func(a, b fenceview.MinuteCount) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Reason, b.Reason))
	})
	gotMinutes, err := db.MinuteCounts(ctx, history[0].At, history[len(history)-1].At.Add(time.Minute))
	if err != nil || !reflect.DeepEqual(gotMinutes, minutes) {
		t.Fatalf("MinuteCounts = %v (%v), want %v", gotMinutes, err, minutes)
	}
	names, counts, err := db.RejectionReasons(ctx)
	if err != nil || len(names) != len(reasons) {
		t.Fatalf("RejectionReasons = %v %v (%v), want %v", names, counts, err, reasons)
	}
	for i, name := range names {
		if counts[i] != reasons[name] {
			t.Fatalf("RejectionReasons = %v %v, want %v", names, counts, reasons)
		}
	}
	rows, err := db.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(latest) {
		t.Fatalf("%d resources read, %d committed", len(rows), len(latest))
	}
	for _, r := range rows {
		if want := latest[r.ResourceID]; !reflect.DeepEqual(*r, want) {
			t.Fatalf("resource %s read as %+v, committed as %+v", r.ResourceID, *r, want)
		}
	}
	for id := range latest {
		var mine []fenceview.Event
		for _, e := range history {
			if e.ResourceID == id {
				mine = append(mine, e)
			}
		}
		for _, limit := range []int{1, 3, 1000} {
			newest := slices.Clone(mine)
			slices.Reverse(newest)
			newest = newest[:min(limit, len(newest))]
			got, err := db.ResourceEvents(ctx, id, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, newest) {
				t.Fatalf("ResourceEvents(%s, %d) = %v, want %v", id, limit, seqs(got), seqs(newest))
			}
			for _, after := range []int64{0, mine[len(mine)/2].Seq, history[len(history)-1].Seq} {
				var want []fenceview.Event
				for _, e := range mine {
					if e.Seq > after && len(want) < limit {
						want = append(want, e)
					}
				}
				got, err := db.EventsAfter(ctx, after, id, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 {
					want = []fenceview.Event{}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("EventsAfter(%d, %s, %d) = %v, want %v", after, id, limit, seqs(got), seqs(want))
				}
			}
		}
	}
}

func seqs(events []fenceview.Event) []int64 {
	var out []int64
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

// An event older than the last fold (a cluster node filling a hole in its
// copy of the history) is indexed and counted like the others, once.
func TestLateEventIsIndexedAndCounted(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.FoldEvery = 1
	at := time.UnixMilli(1_700_000_000_000).UTC()
	ev := func(seq int64) fenceview.Event {
		return fenceview.Event{Seq: seq, Type: fenceview.EventGrant, ResourceID: "r", Token: seq, Holder: "h", At: at}
	}
	var history []fenceview.Event
	for _, seq := range []int64{1, 2, 4, 5} { // 3 is missing, and 5 is folded
		if err := db.Apply(ctx, nil, []fenceview.Event{ev(seq)}); err != nil {
			t.Fatal(err)
		}
		history = append(history, ev(seq))
	}
	db.FoldEvery = 1 << 30
	if err := db.Apply(ctx, nil, []fenceview.Event{ev(3)}); err != nil {
		t.Fatal(err)
	}
	history = []fenceview.Event{ev(1), ev(2), ev(3), ev(4), ev(5)}
	checkReads(t, db, map[string]fenceview.Resource{}, history)
	got, err := db.ResourceEvents(ctx, "r", 10)
	if err != nil || len(got) != 5 || got[2].Seq != 3 {
		t.Fatalf("the history of r: %v (%v)", seqs(got), err)
	}
	db.FoldEvery = 1
	if err := db.Apply(ctx, nil, []fenceview.Event{ev(6)}); err != nil { // and the next fold counts it no more
		t.Fatal(err)
	}
	counts, err := db.MinuteCounts(ctx, at, at.Add(time.Minute))
	if err != nil || len(counts) != 1 || counts[0].N != 6 {
		t.Fatalf("minute counts %+v (%v), want one minute of 6 grants", counts, err)
	}
}
