// Package story is what every client example does around the story it
// tells: the -server and -key flags, a fenceview server started in
// process when no -server is given, and the opening of the paused-client
// story (A locks with a short lease and stalls; B waits the lease out and
// locks). What an example teaches stays in its own main.go.
package story

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

// Server is the fenceview server an example talks to: -server and -key.
type Server struct {
	URL string // empty: start one in process
	Key string // an API key, when the server has auth on
}

// ServerFlags registers -server and -key on fs.
func ServerFlags(fs *flag.FlagSet) *Server {
	s := &Server{}
	fs.StringVar(&s.URL, "server", "", "fenceview server URL (default: start one in-process)")
	fs.StringVar(&s.Key, "key", os.Getenv("FENCEVIEW_KEY"), "fenceview API key, when the server has auth on (env FENCEVIEW_KEY)")
	return s
}

// Start starts a fenceview server in process unless s.URL names one, and
// sets s.URL to it. stop closes what Start started; call it when done.
func (s *Server) Start(ctx context.Context) (stop func(), err error) {
	if s.URL != "" {
		return func() {}, nil
	}
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Options{})
	if err != nil {
		return nil, err
	}
	s.URL = srv.URL
	return func() { srv.Close() }, nil
}

// Connect starts a server as Start does and returns a client of it, with
// s.Key. closeAll closes the client, then the server.
func (s *Server) Connect(ctx context.Context) (c *client.Client, closeAll func(), err error) {
	stop, err := s.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c, err = client.New(s.URL, client.WithKey(s.Key)); err != nil {
		stop()
		return nil, nil, err
	}
	return c, func() { c.Close(); stop() }, nil
}

// Paused is the flags of the paused-client story: -lease, A's lease,
// which A stalls past, and -resource, the lock both clients take.
type Paused struct {
	Lease    time.Duration
	Resource string
}

// PausedFlags registers -lease and -resource on fs.
func PausedFlags(fs *flag.FlagSet) *Paused {
	p := &Paused{}
	fs.DurationVar(&p.Lease, "lease", 500*time.Millisecond, "client A's lease; A pauses longer than this")
	fs.StringVar(&p.Resource, "resource", "inventory:42", "the lock's resource id")
	return p
}

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
