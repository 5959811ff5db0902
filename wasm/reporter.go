package wasm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/guard"
)

// Server says where a fenceview server is and how to reach it; the
// reporter and SeedFromServer speak to it through the client package.
type Server struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:8080".
	URL string
	// Client makes the requests; nil means a client of its own.
	Client *http.Client
	// Token, when set, is sent as "Authorization: Bearer <Token>": an API
	// key of the guard role (or the admin token) for a server with auth on.
	Token string
}

// client returns a fenceview client for s.
func (s Server) client() (*client.Client, error) {
	cfg := client.Config{URL: s.URL}
	if s.Client != nil || s.Token != "" {
		hc := &http.Client{}
		if s.Client != nil {
			*hc = *s.Client
		}
		if s.Token != "" {
			hc.Transport = bearer{base: hc.Transport, token: s.Token}
		}
		cfg.HTTPClient = hc
	}
	return client.New(cfg)
}

// bearer sends a token with every request, the reports and the listing
// included (the client sends its admin token only with admin calls).
type bearer struct {
	base  http.RoundTripper
	token string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// ReporterConfig configures NewReporter.
type ReporterConfig struct {
	// Server receives the decisions (POST /v1/decisions). Required.
	Server Server
	// Source names the reporter in the server's history, e.g.
	// "wasm:orders-service". Empty: "wasm".
	Source string
	// BufferSize bounds the decisions waiting to be sent; past it new ones
	// are dropped (and counted). 0 means 4096.
	BufferSize int
	// BatchSize is the most decisions one request carries. 0 means 256.
	BatchSize int
	// Interval is the longest a decision waits for its batch to fill
	// before it is sent anyway. 0 means one second.
	Interval time.Duration
	// Timeout bounds one request. 0 means five seconds.
	Timeout time.Duration
	// OnlyRejections, when set, reports refusals only.
	OnlyRejections bool
	// Now stamps decisions; nil means time.Now.
	Now func() time.Time
}

// Reporter ships decisions to a fenceview server in batches, in the
// background. Report never blocks and never fails: when the buffer is full
// (the server is slow or down) the decision is dropped and counted, and a
// batch the server does not take is dropped and counted too. The guard's
// answers never depend on the server.
type Reporter struct {
	cfg     ReporterConfig
	client  *client.Client
	queue   chan client.Report
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	sent, dropped atomic.Uint64
	lastErr       atomic.Pointer[error]
}

// NewReporter starts a reporter. Close it to send what is left and stop.
func NewReporter(cfg ReporterConfig) (*Reporter, error) {
	if cfg.Server.URL == "" {
		return nil, errors.New("wasm reporter: no server URL")
	}
	c, err := cfg.Server.client()
	if err != nil {
		return nil, fmt.Errorf("wasm reporter: %w", err)
	}
	if cfg.Source == "" {
		cfg.Source = "wasm"
	}
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = 4096
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reporter{
		cfg:     cfg,
		client:  c,
		queue:   make(chan client.Report, cfg.BufferSize),
		flushes: make(chan chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go r.run()
	return r, nil
}

// Report queues a decision about resourceID, or drops it when the buffer is
// full. It never blocks.
func (r *Reporter) Report(resourceID string, d guard.Decision) { r.report(resourceID, d, false) }

// ReportRead is Report for a decision on a read.
func (r *Reporter) ReportRead(resourceID string, d guard.Decision) { r.report(resourceID, d, true) }

func (r *Reporter) report(resourceID string, d guard.Decision, read bool) {
	if r.cfg.OnlyRejections && d.Accepted {
		return
	}
	rep := client.Report{Resource: resourceID, Decision: d, Source: r.cfg.Source, At: r.cfg.Now(), Read: read}
	select {
	case <-r.stop:
		r.dropped.Add(1)
		return
	default:
	}
	select {
	case r.queue <- rep:
	default:
		r.dropped.Add(1)
	}
}

// Sent is the number of decisions the server has recorded.
func (r *Reporter) Sent() uint64 { return r.sent.Load() }

// Dropped is the number of decisions lost: to a full buffer, to a server
// that failed or refused a batch, or reported after Close.
func (r *Reporter) Dropped() uint64 { return r.dropped.Load() }

// Err returns the last error a batch failed with, nil if none has.
func (r *Reporter) Err() error {
	if p := r.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Flush sends every decision queued before it was called, and returns when
// they are sent or dropped, or when ctx is done.
func (r *Reporter) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case r.flushes <- ack:
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close sends what is queued and stops the reporter. Decisions reported
// after Close are dropped.
func (r *Reporter) Close(ctx context.Context) error {
	r.once.Do(func() { close(r.stop) })
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Reporter) run() {
	defer close(r.done)
	defer r.client.Close()
	ticker := time.NewTicker(r.cfg.Interval)
	defer ticker.Stop()
	batch := make([]client.Report, 0, r.cfg.BatchSize)
	send := func() {
		if len(batch) > 0 {
			r.send(batch)
			batch = batch[:0]
		}
	}
	// drain moves everything queued into batches and sends them.
	drain := func() {
		for {
			select {
			case rep := <-r.queue:
				if batch = append(batch, rep); len(batch) >= r.cfg.BatchSize {
					send()
				}
			default:
				send()
				return
			}
		}
	}
	for {
		select {
		case rep := <-r.queue:
			if batch = append(batch, rep); len(batch) >= r.cfg.BatchSize {
				send()
			}
		case <-ticker.C:
			send()
		case ack := <-r.flushes:
			drain()
			close(ack)
		case <-r.stop:
			drain()
			return
		}
	}
}

func (r *Reporter) send(batch []client.Report) {
	err := r.post(batch)
	if err != nil {
		r.dropped.Add(uint64(len(batch)))
		err = fmt.Errorf("wasm reporter: %d decisions dropped: %w", len(batch), err)
		r.lastErr.Store(&err)
		return
	}
	r.sent.Add(uint64(len(batch)))
}

func (r *Reporter) post(batch []client.Report) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	_, err := r.client.Report(ctx, batch...)
	return err
}
