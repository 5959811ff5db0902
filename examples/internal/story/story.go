// Package story is what every client example does around the story it
// tells: the -server and -key flags, a fenceview server started in
// process when no -server is given, and the opening and the end of the
// paused-client story (A locks with a short lease and stalls; B waits the
// lease out and locks; A wakes up, writes and is refused). What an example
// teaches stays in its own main.go.
package story

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
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
	srv, err := fenceviewtest.Start(ctx, fenceviewtest.Config{})
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
	if c, err = client.New(client.Config{URL: s.URL, Key: s.Key}); err != nil {
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
