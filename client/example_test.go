package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

// Every grant takes a new token, re-entrant ones included. Take the token at
// the outermost Lock and pass it down: a nested Lock's token would raise the
// resource's high-water mark above the outer one and fence out the outer
// code's own writes.
func Example_reentrancy() {
	ctx := context.Background()
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(client.Config{URL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}

	m := c.Mutex("inventory:42", "worker-a")
	outer, err := m.Lock(ctx) // keep this one
	if err != nil {
		log.Fatal(err)
	}
	defer m.Unlock(ctx)

	// Right: nested code receives the outer token.
	write := func(token int64) error {
		_, err := c.Fence(ctx, "inventory:42", token)
		return err
	}
	fmt.Println("nested write with the outer token:", write(outer))

	// Wrong: nested code locks again and writes with its own token...
	inner, _ := m.Lock(ctx)
	fmt.Println("inner token is larger:", inner > outer)
	fmt.Println("nested write with the inner token:", write(inner))
	m.Unlock(ctx)
	// ...and the outer code's next write is refused.
	var stale *client.RefusalError
	err = write(outer)
	fmt.Println("outer write refused:", errors.As(err, &stale), stale.Reason, stale.Required == inner)

	// Output:
	// nested write with the outer token: <nil>
	// inner token is larger: true
	// nested write with the inner token: <nil>
	// outer write refused: true stale-token true
}

// Work under the lock runs with the Mutex's context, cancelled the moment
// the lease is lost, so it stops instead of writing on without the lock.
func ExampleMutex_Context() {
	ctx := context.Background()
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, _ := client.New(client.Config{URL: srv.URL})

	m := c.Mutex("reports/daily", "worker-a")
	token, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	work := m.Context()
	// ... long work under `work`, writes carrying `token` ...
	_ = token
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	<-work.Done()
	fmt.Println(context.Cause(work))
	// Output:
	// fenceview: unlocked
}

// The term of an election is its lock's token: the leader writes with it,
// and once a newer leader's term reached the resource, the old term is
// refused there.
func ExampleElection() {
	ctx := context.Background()
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	nodeA, _ := client.New(client.Config{URL: srv.URL, Holder: "node-a"})
	defer nodeA.Close()
	nodeB, _ := client.New(client.Config{URL: srv.URL, Holder: "node-b"})
	defer nodeB.Close()

	a := nodeA.Election("db-primary")
	termA, err := a.Campaign(ctx, "10.0.0.1:5432") // blocks until elected
	if err != nil {
		log.Fatal(err)
	}
	leader, _ := nodeB.Election("db-primary").Leader(ctx)
	fmt.Println("leader:", leader.Candidate, leader.Value, "term", leader.Term == termA)

	if err := a.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	termB, err := nodeB.Election("db-primary").Campaign(ctx, "10.0.0.2:5432")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("new term is larger:", termB > termA)
	nodeB.Fence(ctx, "db-primary", termB)
	_, err = nodeA.Fence(ctx, "db-primary", termA)
	var refused *client.RefusalError
	fmt.Println("old term refused:", errors.As(err, &refused), refused.Reason)
	// Output:
	// leader: node-a 10.0.0.1:5432 term true
	// new term is larger: true
	// old term refused: true stale-token
}

// Readers of one read phase share its token, and a writer waits for them.
// Reads are fenced too: once a later writer has written, a reader of the
// ended phase is refused, and a write with a reader's token never passes.
func ExampleRWMutex() {
	ctx := context.Background()
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c, err := client.New(client.Config{URL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}

	a, b := c.RWMutex("report:7", "reader-a"), c.RWMutex("report:7", "reader-b")
	ta, _ := a.RLock(ctx)
	tb, _ := b.RLock(ctx)
	fmt.Println("one phase, one token:", ta == tb)
	read := a.Reader().Token()
	_, err = c.FenceRead(ctx, "report:7", guard.Token{Token: read.Number})
	fmt.Println("a read with it:", err)
	var refused *client.RefusalError
	_, err = c.FenceToken(ctx, "report:7", guard.Token{Token: read.Number})
	fmt.Println("a write with it refused:", errors.As(err, &refused), refused.Reason)

	w := c.RWMutex("report:7", "writer")
	written := make(chan int64)
	go func() {
		t, _ := w.Lock(ctx) // waits for both readers
		c.Fence(ctx, "report:7", t)
		written <- t
	}()
	for st, _ := w.State(ctx); st.Waiters == 0; st, _ = w.State(ctx) {
	}
	a.RUnlock(ctx)
	b.RUnlock(ctx)
	tw := <-written
	fmt.Println("the writer's token is above the readers':", tw > ta)
	_, err = c.FenceRead(ctx, "report:7", guard.Token{Token: ta})
	fmt.Println("the ended phase's read refused:", errors.As(err, &refused), refused.Reason)
	w.Unlock(ctx)

	// Output:
	// one phase, one token: true
	// a read with it: <nil>
	// a write with it refused: true shared-token
	// the writer's token is above the readers': true
	// the ended phase's read refused: true stale-token
}
