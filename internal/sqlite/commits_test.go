package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fenceview/fenceview"
)

// committed is a database in a temporary file that a test commits to,
// closes and opens again as a restart does, beside the model of what was
// committed: the latest copy of every resource and every event, in order.
// A test makes a commit's changes with change and commits them with
// commit; check compares every read with the model.
type committed struct {
	*DB
	t     *testing.T
	path  string
	every int // FoldEvery, kept across reopens

	latest  map[string]fenceview.Resource
	history []fenceview.Event

	// The commit under way: the changed resources in the order first
	// changed, each one's newest copy, every copy in order, the events.
	order  []string
	newest map[string]*fenceview.Resource
	copies []*fenceview.Resource
	events []fenceview.Event
}

// newCommitted opens a database in a new temporary file, folding every
// every commits, closed when t ends.
func newCommitted(t *testing.T, every int) *committed {
	t.Helper()
	c := &committed{t: t, path: filepath.Join(t.TempDir(), "f.db"), every: every,
		latest: map[string]fenceview.Resource{}, newest: map[string]*fenceview.Resource{}}
	c.open()
	t.Cleanup(func() { c.DB.Close() })
	return c
}

// open opens the database at c.path (after Close: a restart).
func (c *committed) open() {
	c.t.Helper()
	db, err := Open(context.Background(), c.path)
	if err != nil {
		c.t.Fatal(err)
	}
	db.FoldEvery = c.every
	c.DB = db
}

// reopen closes the database and opens it again.
func (c *committed) reopen() {
	c.t.Helper()
	c.DB.Close()
	c.open()
}

// resource is id's latest copy, committed or changed in the commit under
// way (a zero resource of that id when there is none).
func (c *committed) resource(id string) fenceview.Resource {
	r := c.latest[id]
	r.ResourceID = id
	return r
}

// nextSeq is the sequence number of the next event.
func (c *committed) nextSeq() int64 { return int64(len(c.history) + len(c.events) + 1) }

// change records r as its resource's newest copy in the commit under way,
// with e, its event (nil: a change with no event of its own).
func (c *committed) change(r fenceview.Resource, e *fenceview.Event) {
	c.latest[r.ResourceID] = r
	if _, ok := c.newest[r.ResourceID]; !ok {
		c.order = append(c.order, r.ResourceID)
	}
	c.newest[r.ResourceID] = &r
	c.copies = append(c.copies, &r)
	if e != nil {
		c.events = append(c.events, *e)
	}
}

// commit applies the commit under way, with each changed resource's
// newest copy once, or with everyCopy every copy in order, as a group
// commit may pass them (the newest of each must win), and checks every
// read.
func (c *committed) commit(everyCopy bool) {
	c.t.Helper()
	rows := c.copies
	if !everyCopy {
		rows = nil
		for _, id := range c.order {
			rows = append(rows, c.newest[id])
		}
	}
	if err := c.Apply(context.Background(), rows, c.events); err != nil {
		c.t.Fatal(err)
	}
	c.history = append(c.history, c.events...)
	c.order, c.copies, c.events = nil, nil, nil
	clear(c.newest)
	c.check()
}

// check compares what the database reads with the model.
func (c *committed) check() {
	c.t.Helper()
	checkReads(c.t, c.DB, c.latest, c.history)
}

// count is the one integer a query answers.
func (c *committed) count(q string) (n int) {
	c.t.Helper()
	if err := c.read.QueryRow(q).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}
