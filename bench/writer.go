package main

import (
	"context"

	"github.com/fenceview/fenceview/internal/load"
)

// writer is what a peer's load client writes with: its holder id, and data
// new on every fenced write (value+n, value distinct per client), so no
// database can skip a write as unchanged (SQLite skips, and does not
// sync, a row updated to identical content).
type writer struct {
	holder string
	value  int64
	n      int64
}

func newWriter(id int, holder string) writer { return writer{holder: holder, value: int64(id) << 40} }

// next is the data of the next fenced write.
func (w *writer) next() int64 {
	w.n++
	return w.value + w.n
}

// peerOps is a peer whose lock and guard need nothing of a load client but
// its writer (Redis, PostgreSQL, SQLite): the driver itself does the work.
type peerOps interface {
	acquire(ctx context.Context, w *writer, r int) (int64, error)
	release(ctx context.Context, w *writer, r int) error
	fence(ctx context.Context, w *writer, r int, token int64) (bool, error)
}

// peerClient is one load client of such a peer.
type peerClient struct {
	ops peerOps
	writer
}

func newPeerClient(ops peerOps, id int, holder string) (load.Client, error) {
	return &peerClient{ops: ops, writer: newWriter(id, holder)}, nil
}

func (c *peerClient) Acquire(ctx context.Context, r int) (int64, error) {
	return c.ops.acquire(ctx, &c.writer, r)
}

func (c *peerClient) Release(ctx context.Context, r int) error {
	return c.ops.release(ctx, &c.writer, r)
}

func (c *peerClient) Fence(ctx context.Context, r int, token int64) (bool, error) {
	return c.ops.fence(ctx, &c.writer, r, token)
}
