package fair

import (
	"math"
	"sync"
	"time"
)

// Pacing: the seats bound what a flow does at once, not how often. A
// flow of cheap requests (refusals, reads) in closed loops holds few seats
// for little time each, and is served thousands of times a second; every
// one of those requests is also read, parsed, authenticated and answered
// outside any seat, and on a busy server that time is the other flows'.
// While the server is contended (Dispatcher.Contended) and other flows
// are active, a Pacer holds a flow's new requests back to a rate: a
// quarter above the busiest other flow's rate of new requests, and never
// below a floor. A request over that rate waits for its turn before it is
// read further, rather than being answered at once: a client in a closed
// loop then slows itself down, where an immediate refusal would have fed
// it. Lease-keeping is neither counted nor held back.

// PaceWindow is how long a flow stays active after its last request, and
// the time constant of the rates the Pacer measures.
const PaceWindow = time.Second

// paceRatio is how much busier than the busiest other flow a flow may be
// before it is held back: more than 1, so two busy flows do not hold each
// other to the rate they had (each may outgrow the other, who follows).
const paceRatio = 1.25

// paceBurst is how much of a second's rate a paced flow may send at once.
const paceBurst = 0.1

// Pacer holds back the new requests of a flow busier than the others
// while the server is contended.
type Pacer struct {
	rate       float64 // the floor, requests per second; 0: off
	maxDelay   time.Duration
	maxWaiting int
	now        func() time.Time
	contended  func() bool

	mu    sync.Mutex
	flows map[string]*paceFlow

	// The last look at every flow (scan).
	epoch, sinceScan   int
	scanned            time.Time
	active             int       // flows active then
	top1               *paceFlow // the busiest of them
	top1Rate, top2Rate float64   // its rate, and the second busiest's
}

// scanAlways is how many flows the pacer looks at on every request; with
// more, it looks at them all once every as many requests as there are
// flows (so a request costs about one flow's look), and at least once a
// PaceWindow (so the idle are seen idle).
const scanAlways = 64

// scan looks at every flow, forgetting those long idle, when the last
// look is stale (scanAlways).
func (p *Pacer) scan(now time.Time) {
	p.sinceScan++
	if n := len(p.flows); n > scanAlways && p.sinceScan < n && now.Sub(p.scanned) < PaceWindow {
		return
	}
	p.epoch++
	p.sinceScan, p.scanned = 0, now
	p.active, p.top1, p.top1Rate, p.top2Rate = 0, nil, 0, 0
	for k, g := range p.flows {
		if idle := now.Sub(g.last); idle >= PaceWindow {
			if idle >= 2*PaceWindow && g.waiting == 0 {
				delete(p.flows, k)
			}
			continue
		}
		g.epoch = p.epoch
		p.active++
		switch r := g.decayed(now) / PaceWindow.Seconds(); {
		case r > p.top1Rate || p.top1 == nil:
			p.top1, p.top1Rate, p.top2Rate = g, r, p.top1Rate
		case r > p.top2Rate:
			p.top2Rate = r
		}
	}
}

// paceFlow is one flow's recent requests and budget.
type paceFlow struct {
	count    float64   // requests, decayed with time constant PaceWindow
	last     time.Time // of the last request, and of count
	tokens   float64
	refilled time.Time
	waiting  int // requests held back now
	epoch    int // the pacer's epoch of the last scan that saw f active
}

// NewPacer paces by the dispatcher's bounds: cfg.FlowRate (negative: no
// pacing), cfg.MaxWait as the longest a request is held back (beyond, it
// is shed), cfg.FlowQueue as the requests one flow may have held back at
// once, and d.Contended.
func NewPacer(d *Dispatcher) *Pacer {
	cfg := d.Config()
	return &Pacer{rate: max(0, cfg.FlowRate), maxDelay: cfg.MaxWait, maxWaiting: cfg.FlowQueue,
		now: cfg.Now, contended: d.Contended, flows: map[string]*paceFlow{}}
}

// Take counts a request of flow key and says how long it must wait before
// it goes on; paced is false for lease-keeping, which is neither counted
// nor held back. A request that would wait longer than the dispatcher's
// MaxWait, or beyond its flow's queue, is shed instead. When wait is
// positive, done must be called once the request has waited (or given
// up).
func (p *Pacer) Take(key string, paced bool) (wait time.Duration, done func(), shed *Shed) {
	if p == nil || p.rate <= 0 || !paced {
		return 0, nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	f := p.flows[key]
	if f == nil {
		f = &paceFlow{refilled: now, tokens: math.Inf(1)} // a new flow has its burst
		p.flows[key] = f
	}
	f.count = f.decayed(now) + 1
	f.last = now
	p.scan(now)
	busiest, others := p.top1Rate, p.active
	if f.epoch == p.epoch {
		others-- // f was one of them
	}
	if f == p.top1 {
		busiest = p.top2Rate
	}
	rate := max(p.rate, paceRatio*busiest)
	burst := max(1, rate*paceBurst)
	if elapsed := now.Sub(f.refilled); elapsed > 0 {
		f.tokens += rate * elapsed.Seconds()
	}
	f.refilled = now
	f.tokens = min(f.tokens, burst)
	if others <= 0 || !p.contended() {
		f.tokens = burst // alone, or the server has room: nothing is held back
		return 0, nil, nil
	}
	f.tokens--
	if f.tokens >= 0 {
		return 0, nil, nil
	}
	wait = time.Duration(-f.tokens / rate * float64(time.Second))
	if wait > p.maxDelay || f.waiting >= p.maxWaiting {
		f.tokens++ // not served: it takes no turn
		return 0, nil, &Shed{Reason: "rate", RetryAfter: min(max(wait, minRetryAfter), maxRetryAfter)}
	}
	f.waiting++
	return wait, func() {
		p.mu.Lock()
		f.waiting--
		p.mu.Unlock()
	}, nil
}

// decayed is f's request count at now.
func (f *paceFlow) decayed(now time.Time) float64 {
	dt := now.Sub(f.last)
	if dt <= 0 || f.last.IsZero() {
		return f.count
	}
	return f.count * math.Exp(-dt.Seconds()/PaceWindow.Seconds())
}

// Flows is how many flows the pacer remembers (idle ones are forgotten
// after two windows, when another request looks).
func (p *Pacer) Flows() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.flows)
}
