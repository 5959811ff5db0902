package story

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
)

// Pause is the paused-client story's opening, told on stdout: A locks
// p.Resource with a fixed lease, p.Lease (it is about to stall, and a stalled
// process renews nothing) and pauses; B waits on the server until A's
// lease runs out, and locks. plan ends A's line (", will write stock 9").
func Pause(ctx context.Context, c *client.Client, p *Paused, plan string, stdout io.Writer) (*Race, error) {
	resource := p.Resource
	r := &Race{Resource: resource, A: c.Mutex(resource, "client-a"), B: c.Mutex(resource, "client-b")}
	var err error
	if r.TokenA, err = r.A.TryLock(ctx, 0, p.Lease); err != nil {
		return nil, fmt.Errorf("A: %w", err)
	}
	r.GrantA = r.A.Token()
	fmt.Fprintf(stdout, "A locked %s with token %d (lease %v)%s\n", resource, r.TokenA, p.Lease, plan)
	fmt.Fprintln(stdout, "A pauses...")
	if r.TokenB, err = r.B.Lock(ctx); err != nil {
		return nil, fmt.Errorf("B: %w", err)
	}
	fmt.Fprintf(stdout, "A's lease ran out; B locked %s with token %d\n", resource, r.TokenB)
	return r, nil
}

// Race is where Pause leaves the story: B holds the lock with the newer
// token, A's lease is gone but A does not know it yet.
type Race struct {
	Resource       string
	A, B           *client.Mutex
	TokenA, TokenB int64
	// GrantA is A's token as its grant gave it, signature included: what a
	// paused A still holds in memory when it wakes up.
	GrantA client.Token
}

// Late is the story's end, once B has written: B unlocks, and A wakes
// up (its client knows the lease is gone, but a paused process does not
// look before it writes) and writes with its old token. The write must be
// refused; Late says so on stdout and returns A's decision and refusal.
func (r *Race) Late(ctx context.Context, stdout io.Writer, write func(token int64) (guard.Decision, error)) (guard.Decision, *guard.RefusalError, error) {
	if err := r.B.Unlock(ctx); err != nil {
		return guard.Decision{}, nil, fmt.Errorf("B: %w", err)
	}
	<-r.A.Done()
	fmt.Fprintf(stdout, "A wakes up (its client says: %v) and writes anyway\n", context.Cause(r.A.Context()))
	d, err := write(r.TokenA)
	refused, err := Refused(stdout, "A", r.Resource, d, err)
	return d, refused, err
}

// Accepted returns an error unless who's write, which returned d and err,
// was accepted.
func Accepted(who string, d guard.Decision, err error) error {
	if err != nil {
		return fmt.Errorf("%s's write: %w", who, err)
	}
	if !d.Accepted {
		return fmt.Errorf("%s's write was refused: %+v", who, d)
	}
	return nil
}

// Refused returns an error unless who's stale write to resource, which
// returned d and err, was refused; it says so on stdout and returns the
// refusal.
func Refused(stdout io.Writer, who, resource string, d guard.Decision, err error) (*guard.RefusalError, error) {
	if err != nil {
		return nil, fmt.Errorf("%s's write: %w", who, err)
	}
	var refused *guard.RefusalError
	if !errors.As(d.Err(resource), &refused) {
		return nil, fmt.Errorf("%s's stale write was accepted: %+v", who, d)
	}
	fmt.Fprintf(stdout, "%s's write refused: %s, token %d < required %d\n", who, refused.Reason, refused.Presented, refused.Required)
	return refused, nil
}
