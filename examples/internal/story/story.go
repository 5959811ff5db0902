// Package story is what every client example does around the story it
// tells: its command line (-server and -key, and -lease and -resource for
// the paused-client story), a fenceview server started in process when no
// -server is given, and the opening and the end of the paused-client story
// (A locks with a short lease and stalls; B waits the lease out and locks;
// A wakes up, writes and is refused). What an example teaches stays in its
// own main.go.
package story

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/cmdmain"
)

// Command is an example's command line: its flags, -server and -key among
// them, and the fenceview server those two name. An example registers its
// own flags on it as on any flag.FlagSet.
type Command struct {
	*flag.FlagSet
	Server   Server
	required []struct{ name, usage string } // the flags Parse insists on
}

// NewCommand returns the command line of the example name, with -server
// and -key.
func NewCommand(name string) *Command {
	c := &Command{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	c.StringVar(&c.Server.URL, "server", "", "fenceview server URL (default: start one in-process)")
	c.StringVar(&c.Server.Key, "key", os.Getenv("FENCEVIEW_KEY"), "fenceview API key, when the server has auth on (env FENCEVIEW_KEY)")
	return c
}

// Required registers a string flag the example cannot run without; Parse
// fails, saying what the flag is for, when it is not given.
func (c *Command) Required(name, usage string) *string {
	c.required = append(c.required, struct{ name, usage string }{name, usage})
	return c.String(name, "", usage+" (required)")
}

// Parse parses args as cmdmain.Parse does, then checks the Required flags.
func (c *Command) Parse(args []string) error {
	if err := cmdmain.Parse(c.FlagSet, args); err != nil {
		return err
	}
	for _, r := range c.required {
		if c.Lookup(r.name).Value.String() == "" {
			return cmdmain.Usage(fmt.Errorf("-%s is required: %s", r.name, r.usage))
		}
	}
	return nil
}

// Connect parses args, starts a server as Server.Start does and returns a
// client of it, with -key. closeAll closes the client, then the server.
func (c *Command) Connect(ctx context.Context, args []string) (fv *client.Client, closeAll func(), err error) {
	if err := c.Parse(args); err != nil {
		return nil, nil, err
	}
	stop, err := c.Server.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	if fv, err = client.New(client.Config{URL: c.Server.URL, Key: c.Server.Key}); err != nil {
		stop()
		return nil, nil, err
	}
	return fv, func() { fv.Close(); stop() }, nil
}

// Server is the fenceview server an example talks to: -server and -key.
type Server struct {
	URL string // empty: start one in process
	Key string // an API key, when the server has auth on
}

// Start starts a fenceview server in process unless s.URL names one, and
// sets s.URL to it. stop closes what Start started; call it when done.
func (s *Server) Start(ctx context.Context) (stop func(), err error) {
	if s.URL != "" {
		return func() {}, nil
	}
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
	if err != nil {
		return nil, err
	}
	s.URL = srv.URL
	return func() { srv.Close() }, nil
}

// Paused is the flags of the paused-client story: -lease, A's lease,
// which A stalls past, and -resource, the lock both clients take.
type Paused struct {
	Lease    time.Duration
	Resource string
}

// PausedFlags registers -lease and -resource.
func (c *Command) PausedFlags() *Paused {
	p := &Paused{}
	c.DurationVar(&p.Lease, "lease", 500*time.Millisecond, "client A's lease; A pauses longer than this")
	c.StringVar(&p.Resource, "resource", "inventory:42", "the lock's resource id")
	return p
}
