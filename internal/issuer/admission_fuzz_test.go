package issuer

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// admissionModel is first come, first served admission to one lock, as
// the contract states it, written apart from the issuer: holders (all
// exclusive, or all shared in one read phase), the queue of waiters, and
// the token counter.
type admissionModel struct {
	writer  string
	readers []string // one hold each: the fuzz never re-enters
	phase   int64
	last    int64
	queue   []modelWaiter
}

type modelWaiter struct {
	holder string
	shared bool
}

// admit decides a newcomer: granted now (the token), or not.
func (m *admissionModel) admit(holder string, shared bool) (int64, bool) {
	if len(m.queue) > 0 || m.writer != "" || (!shared && len(m.readers) > 0) {
		return 0, false
	}
	return m.grant(holder, shared), true
}

func (m *admissionModel) grant(holder string, shared bool) int64 {
	if !shared {
		m.last++
		m.writer = holder
		return m.last
	}
	if len(m.readers) == 0 {
		m.last++
		m.phase = m.last
	}
	m.readers = append(m.readers, holder)
	return m.phase
}

// release gives up holder's hold and grants the queue's head: a writer
// once the lock is free, consecutive readers together, into a live phase.
func (m *admissionModel) release(holder string) (granted []string) {
	if m.writer == holder {
		m.writer = ""
	} else if i := slices.Index(m.readers, holder); i >= 0 {
		m.readers = slices.Delete(m.readers, i, i+1)
	}
	return m.handOff()
}

func (m *admissionModel) handOff() (granted []string) {
	for len(m.queue) > 0 && m.writer == "" {
		next := m.queue[0]
		if !next.shared && len(m.readers) > 0 {
			break
		}
		m.queue = m.queue[1:]
		m.grant(next.holder, next.shared)
		granted = append(granted, next.holder)
		if !next.shared {
			break
		}
	}
	return granted
}

// FuzzSharedAdmission plays random acquires (shared or exclusive, waiting
// or not), releases and waiters giving up (anywhere in the queue) on one
// lock, against the issuer
// and admissionModel: every answer, every hand-off and the lock's state
// after each step must be the model's. So writers never starve, readers
// at the head of the queue are granted together, a writer never overlaps
// a hold, and the readers of a phase share its token.
func FuzzSharedAdmission(f *testing.F) {
	f.Add([]byte{0x00, 0x09, 0x02, 0x0b, 0x10, 0x01, 0x12, 0x04})
	f.Add([]byte{0x01, 0x08, 0x0a, 0x03, 0x0c, 0x11, 0x05, 0x14, 0x13})
	f.Add([]byte{0x02, 0x0b, 0x0e, 0x15, 0x18, 0x06, 0x1d})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 48 {
			steps = steps[:48]
		}
		s, _ := newOnStore(noStore{})
		defer s.Close()
		var m admissionModel
		const clients = 6
		type waiterCall struct {
			answer chan result[fenceview.Grant]
			cancel context.CancelFunc
		}
		waiting := map[string]waiterCall{}
		holds := map[string]bool{} // holders that hold, by the model
		for i, b := range steps {
			who := fmt.Sprintf("c%d", int(b>>3)%clients)
			op := b & 7
			if w, ok := waiting[who]; ok {
				if op < 6 {
					continue // busy waiting: a client makes one call at a time
				}
				// It gives up (its caller went away): out of the queue, and
				// the readers behind a writer that gave up may join a phase.
				w.cancel()
				if r := answered(t, w.answer); r.err == nil {
					t.Fatalf("step %d: %s granted though it gave up first (the model: queued)", i, who)
				}
				delete(waiting, who)
				m.queue = slices.DeleteFunc(m.queue, func(x modelWaiter) bool { return x.holder == who })
				for _, g := range m.handOff() {
					holds[g] = true
					if r := answered(t, waiting[g].answer); r.err != nil {
						t.Fatalf("step %d: %s, granted once %s gave up: %v", i, g, who, r.err)
					}
					delete(waiting, g)
				}
			}
			switch {
			case op < 4: // acquire: shared or not, waiting or not
				shared, wait := op&1 == 1, op&2 == 2
				if holds[who] {
					continue // the fuzz does not re-enter
				}
				req := fenceview.AcquireRequest{ResourceID: "doc", Holder: who, Lease: time.Hour, Shared: shared}
				token, ok := m.admit(who, shared)
				switch {
				case ok:
					g, err := s.Acquire(ctx, req)
					if err != nil || g.Fencing.Token != token || g.Fencing.Shared != shared {
						t.Fatalf("step %d: %s acquire shared=%v: %+v %v; the model grants token %d", i, who, shared, g.Fencing, err, token)
					}
					holds[who] = true
				case !wait:
					if _, err := s.Acquire(ctx, req); fenceview.ErrorCode(err) != fenceview.ELOCKHELD {
						t.Fatalf("step %d: %s acquire shared=%v without waiting: %v; the model refuses", i, who, shared, err)
					}
				default:
					req.Wait = time.Hour
					wctx, cancel := context.WithCancel(ctx)
					answer := queue(t, s, func() (fenceview.Grant, error) { return s.Acquire(wctx, req) })
					waiting[who] = waiterCall{answer: answer, cancel: cancel}
					m.queue = append(m.queue, modelWaiter{holder: who, shared: shared})
				}
			case op < 6: // release
				if !holds[who] {
					continue
				}
				if _, err := s.Release(ctx, "doc", who); err != nil {
					t.Fatalf("step %d: %s release: %v", i, who, err)
				}
				delete(holds, who)
				for _, g := range m.release(who) {
					holds[g] = true
					if r := answered(t, waiting[g].answer); r.err != nil {
						t.Fatalf("step %d: %s, handed the lock, answered %v", i, g, r.err)
					}
					delete(waiting, g)
				}
			}
			ls, err := s.Lock("doc")
			if err != nil {
				t.Fatal(err)
			}
			var readers []string
			for _, h := range ls.Holders {
				readers = append(readers, h.Holder)
			}
			want := m.writer
			if len(m.readers) > 0 {
				want = m.readers[0]
			}
			if ls.Holder != want || !slices.Equal(readers, m.readers) || ls.Waiters != len(m.queue) || ls.LastToken != m.last {
				t.Fatalf("step %d: the lock %+v; the model: writer %q, readers %v, %d waiting, last token %d",
					i, ls, m.writer, m.readers, len(m.queue), m.last)
			}
		}
	})
}
