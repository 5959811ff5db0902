package auth

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle makes guessing and login floods cost time: token buckets of bad
// credentials and of logins per client address, and of logins per key.
// A bad credential costs its address a token, and an address out of tokens
// is refused (429) before its credential is even checked, so an answer
// never tells a guesser whether the guess was right. Its methods are safe
// for concurrent use.
//
// Bad credentials are counted per address only, not per key: a key's id is
// not secret (it is every fence's source), so a per-key bucket of failures
// would let anyone lock a key out by guessing against its id, and guessing a
// key's 256-bit secret is hopeless anyway.
type Throttle struct {
	now       func() time.Time
	failures  *buckets // bad credentials, per client address
	logins    *buckets // login attempts, per client address
	keyLogins *buckets // successful logins, per key
}

// The throttle's budgets: a burst, then one more per interval.
const (
	FailureBurst     = 20 // bad credentials an address may send at once
	FailureInterval  = time.Second
	LoginBurst       = 10 // logins an address may try at once
	LoginInterval    = 6 * time.Second
	KeyLoginBurst    = 10 // sessions a key may open at once
	KeyLoginInterval = 6 * time.Second
	// maxBuckets bounds each table; past it, addresses with a full bucket
	// (no recent use) are forgotten, and if none is, newcomers share one.
	maxBuckets = 10_000
)

// NewThrottle returns a throttle on the clock now (nil: time.Now).
func NewThrottle(now func() time.Time) *Throttle {
	if now == nil {
		now = time.Now
	}
	return &Throttle{
		now:       now,
		failures:  newBuckets(FailureInterval, FailureBurst),
		logins:    newBuckets(LoginInterval, LoginBurst),
		keyLogins: newBuckets(KeyLoginInterval, KeyLoginBurst),
	}
}

// LimitError is a refusal for having tried too often; RetryAfter is when
// the next attempt may pass.
type LimitError struct {
	What       string
	RetryAfter time.Duration
}

// limited is the refusal of too many what while wait is still to run,
// nil once it has (wait not positive).
func limited(what string, wait time.Duration) error {
	if wait > 0 {
		return &LimitError{What: what, RetryAfter: wait}
	}
	return nil
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("too many %s; retry in %s", e.What, e.RetryAfter.Round(time.Second))
}

// CheckCredential is called before a credential from client is checked:
// an error when client has spent its bad-credential budget.
func (t *Throttle) CheckCredential(client string) error {
	if t == nil {
		return nil
	}
	return limited("bad credentials from this address", t.failures.wait(client, t.now()))
}

// BadCredential charges client for a credential that did not authenticate.
func (t *Throttle) BadCredential(client string) {
	if t != nil {
		t.failures.take(client, t.now())
	}
}

// checkLogin charges a login attempt from client: an error when it has
// tried too often, or has sent too many bad credentials.
func (t *Throttle) checkLogin(client string) error {
	if t == nil {
		return nil
	}
	if err := t.CheckCredential(client); err != nil {
		return err
	}
	return limited("logins from this address", t.logins.take(client, t.now()))
}

// checkKeyLogin charges a successful login with key id.
func (t *Throttle) checkKeyLogin(id string) error {
	if t == nil {
		return nil
	}
	return limited("logins with this key", t.keyLogins.take(id, t.now()))
}

// ClientOf is the throttle's name for the client at remoteAddr (an
// http.Request's RemoteAddr): the IPv4 address, or the IPv6 /64, since one
// host usually holds a whole /64.
func ClientOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// buckets is a bounded table of token buckets by name.
type buckets struct {
	limit rate.Limit
	burst int

	mu        sync.Mutex
	m         map[string]*rate.Limiter
	overflow  *rate.Limiter // shared by newcomers while the table is full
	lastPrune time.Time
}

func newBuckets(interval time.Duration, burst int) *buckets {
	limit := rate.Every(interval)
	return &buckets{limit: limit, burst: burst, m: map[string]*rate.Limiter{}, overflow: rate.NewLimiter(limit, burst)}
}

// wait is how long until name's bucket holds a token; 0 when it does now.
func (b *buckets) wait(name string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.m[name]
	if !ok {
		if len(b.m) < maxBuckets {
			return 0 // a new name starts full
		}
		l = b.overflow
	}
	return b.untilOne(l, now)
}

// take takes a token from name's bucket, or says how long until one is
// back (taking nothing).
func (b *buckets) take(name string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.get(name, now)
	if l.AllowN(now, 1) {
		return 0
	}
	return b.untilOne(l, now)
}

func (b *buckets) untilOne(l *rate.Limiter, now time.Time) time.Duration {
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	// Rounded up to whole seconds, as Retry-After says it.
	return time.Duration(math.Ceil((1-tokens)/float64(b.limit))) * time.Second
}

func (b *buckets) get(name string, now time.Time) *rate.Limiter {
	if l, ok := b.m[name]; ok {
		return l
	}
	if len(b.m) >= maxBuckets && now.Sub(b.lastPrune) >= time.Second {
		// A full bucket is the same as none: forget those. At most once a
		// second, so a flood of new names does not scan on every request.
		b.lastPrune = now
		for k, l := range b.m {
			if l.TokensAt(now) >= float64(b.burst) {
				delete(b.m, k)
			}
		}
	}
	if len(b.m) >= maxBuckets {
		return b.overflow
	}
	l := rate.NewLimiter(b.limit, b.burst)
	b.m[name] = l
	return l
}

// size is the number of names the table holds.
func (b *buckets) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}
