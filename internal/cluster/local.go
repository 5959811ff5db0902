package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/fenceview/fenceview"
)

// localWriter copies the leader's committed events into its own history
// behind the commits, not in their path: etcd is the record, and an fsync
// of the local file per group commit would halve the leader's throughput.
// Everything queued goes in one transaction. Reads of the history wait
// (sync) until it holds every event published when they began, so they see
// every acknowledged change.
type localWriter struct {
	history History
	failed  func(error)

	mu      sync.Mutex
	queue   []fenceview.Event
	written int64         // last seq in the history
	moved   chan struct{} // closed when written moves
	err     error         // a failed write: no more writes this term
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

var errHistoryBroken = errors.New("cluster: this node's history could not be written; the node is stepping down")

func newLocalWriter(h History, last int64, failed func(error)) *localWriter {
	w := &localWriter{history: h, failed: failed, written: last, moved: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// add queues committed events, in commit order.
func (w *localWriter) add(events []fenceview.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, events...)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *localWriter) run() {
	defer close(w.done)
	for {
		stopping := false
		select {
		case <-w.kick:
		case <-w.stop:
			stopping = true
		}
		for {
			w.mu.Lock()
			batch := w.queue
			w.queue = nil
			broken := w.err != nil
			w.mu.Unlock()
			if len(batch) == 0 || broken {
				break
			}
			err := w.history.Apply(context.Background(), nil, batch)
			w.mu.Lock()
			if err != nil {
				w.err = err
			} else {
				w.written = batch[len(batch)-1].Seq
			}
			close(w.moved)
			w.moved = make(chan struct{})
			w.mu.Unlock()
			if err != nil {
				// The feed repairs the hole from the event log once this
				// node follows again.
				w.failed(err)
			}
		}
		if stopping {
			return
		}
	}
}

// sync waits until the history holds every event up to seq.
func (w *localWriter) sync(ctx context.Context, seq int64) error {
	for {
		w.mu.Lock()
		written, err, moved := w.written, w.err, w.moved
		w.mu.Unlock()
		if err != nil {
			return errHistoryBroken
		}
		if written >= seq {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// close writes what is queued and stops.
func (w *localWriter) close() {
	close(w.stop)
	<-w.done
}
