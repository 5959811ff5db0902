// Package redisguard fences writes to data kept in Redis (or Valkey) with
// fencing tokens.
//
// A fenced write is one Lua script, run atomically by the server in one
// round trip: it compares the presented token with the resource's mark,
// refuses when the mark is greater, and otherwise stores the token and
// every value of the write. No other command runs between the comparison
// and the writes, so a paused holder that wakes up with an old token cannot
// overwrite what a newer holder wrote.
//
//	g, _ := redisguard.New(redisguard.Config{Scripter: goredis.New(rdb)})
//	d, err := g.Write(ctx, "inventory:42", token,
//		redisguard.Set("stock", "7"), redisguard.Set("reserved", "2"))
//	if err != nil { /* bad input, Redis error */ }
//	if !d.Accepted { /* fenced out: d.Required beat us */ }
//
// # Keys
//
// Every key of a resource carries the resource id as its hash tag, so all
// of them live in one slot and the script works on Redis Cluster:
//
//	{inventory:42}:fence_token   the mark (a decimal token)
//	{inventory:42}:stock         the value named "stock"
//
// Config.Prefix puts a namespace before the tag ("shop:{inventory:42}:stock").
// Because a hash tag ends at the first '}', resource ids containing '}'
// are refused (guard.ErrInvalidResourceID); every other valid id works.
//
// # Notes
//
//   - Decisions, reasons and errors are the other guards': guard.Decision,
//     guard.ReasonStale, d.Err(resource) for a *guard.RefusalError,
//     guard.ErrInvalidToken and guard.ErrInvalidResourceID for bad input.
//     Report them to a fenceview server with client.Report, as sqlguard
//     users do.
//   - Tokens are compared as decimal strings, not Lua numbers: Lua's
//     doubles cannot tell 2^53 from 2^53+1, and tokens go up to 2^63-1.
//   - A value is written with SET: it replaces the key's value and any
//     expiry it had.
//   - The guard talks to Redis through Scripter, one method; the goredis
//     package adapts github.com/redis/go-redis/v9, and another client needs
//     a few lines (EVALSHA, then EVAL on NOSCRIPT).
package redisguard

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenceview/fenceview/guard"
)

// Script is a Lua script the guard runs: its source and the SHA-1 of the
// source in hex, for EVALSHA.
type Script struct {
	Source string
	SHA1   string
}

func newScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{Source: src, SHA1: hex.EncodeToString(sum[:])}
}

// Scripter runs a Lua script atomically on the Redis server that holds
// keys (they share one hash slot) and returns its reply, which for this
// package's scripts is always an array of bulk strings. An implementation
// should try EVALSHA with s.SHA1 first and fall back to EVAL with s.Source
// on a NOSCRIPT error, so the script crosses the network once per server.
type Scripter interface {
	EvalStrings(ctx context.Context, s Script, keys []string, args []string) ([]string, error)
}

// ErrInvalid: a malformed call (a value name empty, repeated or reserved, a
// bad prefix, too many values). Nothing was sent to Redis.
var ErrInvalid = errors.New("redisguard: invalid call")

// Bounds on a write, so a hostile or buggy caller cannot build a script
// call of unbounded size out of names.
const (
	// MaxValues is the most values one write may carry.
	MaxValues = 256
	// MaxNameLen is the longest value name, in bytes.
	MaxNameLen = 200
	// MaxPrefixLen is the longest key prefix, in bytes.
	MaxPrefixLen = 100
)

// MarkName is the name under which a resource's mark is kept; no value
// may use it.
const MarkName = "fence_token"

// The write: KEYS[1] is the mark, KEYS[2..n] the values' keys; ARGV[1] the
// token, ARGV[2..n] the values. Tokens are canonical decimal strings (no
// sign, no leading zero, at most 19 digits), so comparing lengths and then
// digits compares the numbers exactly. A mark that is not such a string was
// written by someone else; the script refuses to guess and fails.
//
// The Node package (clients/js) ships these same two files, so Go and Node
// writers share one cached script on the server. Their bytes, the leading
// newline too, are the scripts' SHA-1s, which servers and older writers
// already know: keep them.
//
//go:embed write.lua
var writeLua string

var writeScript = newScript(writeLua)

// The read: the mark ("0" when none), then a flag ("1" present, "0"
// absent) and the value for each of KEYS[2..n], all from one moment.
//
//go:embed read.lua
var readLua string

var readScript = newScript(readLua)

// Value is one key written by a fenced write. Build it with Set.
type Value struct {
	Name string
	Data string
}

// Set names a value of the resource and its new content.
func Set(name, data string) Value { return Value{Name: name, Data: data} }

// Guard fences writes to resources kept in Redis. It is immutable and safe
// for concurrent use.
type Guard struct {
	s      Scripter
	prefix string
	verify *guard.VerifyCache // signed mode (Config.Verifier, signed.go); nil otherwise
}

// Config is what New builds a Guard from. Scripter is required; every other
// field's zero value is its default.
type Config struct {
	// Scripter runs the guard's scripts (goredis.New adapts go-redis).
	Scripter Scripter
	// Prefix goes before every key ("shop:" gives
	// "shop:{inventory:42}:stock"), at most MaxPrefixLen bytes. It may not
	// contain '{' or '}', which would move the hash tag.
	Prefix string
	// Verifier, when set, puts the guard in signed mode: a token is
	// compared only with a signature one of its keys made for its resource
	// and token (WriteSigned, CheckSigned); anything else is refused with
	// guard.ReasonBadSignature before Redis is written, and never moves a
	// mark. Verifications are remembered in this process, so a holder's
	// repeated writes cost a comparison, not an Ed25519 verification.
	Verifier *guard.Verifier
	// AcceptUnsignedTokens makes a guard built from a client (NewFrom)
	// take any token number, signed or not, as New without a Verifier
	// does: whoever can call your code with a high number then locks the
	// real holder out. For a server that does not sign, or a test. Only
	// NewFrom reads it.
	AcceptUnsignedTokens bool
}

// New returns a guard that runs its scripts through cfg.Scripter, or the
// one error that says which setting is wrong.
func New(cfg Config) (*Guard, error) {
	if cfg.Scripter == nil {
		return nil, fmt.Errorf("%w: nil Scripter", ErrInvalid)
	}
	if len(cfg.Prefix) > MaxPrefixLen || strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("%w: prefix %q: at most %d bytes, no '{' or '}'", ErrInvalid, truncate(cfg.Prefix), MaxPrefixLen)
	}
	g := &Guard{s: cfg.Scripter, prefix: cfg.Prefix}
	if cfg.Verifier != nil {
		g.verify = guard.NewVerifyCache(cfg.Verifier)
	}
	return g, nil
}

// tag validates resourceID and returns the key prefix of its keys,
// prefix + "{" + resourceID + "}:".
func (g *Guard) tag(resourceID string) (string, error) {
	if err := guard.ValidateResourceID(resourceID); err != nil {
		return "", err
	}
	if strings.Contains(resourceID, "}") {
		return "", fmt.Errorf("%w: '}' would end the Redis hash tag early", guard.ErrInvalidResourceID)
	}
	return g.prefix + "{" + resourceID + "}:", nil
}

// MarkKey returns the key holding resourceID's mark.
func (g *Guard) MarkKey(resourceID string) (string, error) {
	t, err := g.tag(resourceID)
	if err != nil {
		return "", err
	}
	return t + MarkName, nil
}

// Key returns the key of the value name of resourceID, for reading it with
// your own client.
func (g *Guard) Key(resourceID, name string) (string, error) {
	t, err := g.tag(resourceID)
	if err != nil {
		return "", err
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	return t + name, nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty value name", ErrInvalid)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: value name of %d bytes, at most %d allowed", ErrInvalid, len(name), MaxNameLen)
	case name == MarkName:
		return fmt.Errorf("%w: value name %q is the mark's", ErrInvalid, MarkName)
	}
	return nil
}

// keys returns the mark's key followed by the keys of names.
func (g *Guard) keys(resourceID string, names []string) ([]string, error) {
	t, err := g.tag(resourceID)
	if err != nil {
		return nil, err
	}
	if len(names) > MaxValues {
		return nil, fmt.Errorf("%w: %d values, at most %d allowed", ErrInvalid, len(names), MaxValues)
	}
	keys := make([]string, 0, len(names)+1)
	keys = append(keys, t+MarkName)
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if err := checkName(n); err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("%w: value %q given twice", ErrInvalid, n)
		}
		seen[n] = true
		keys = append(keys, t+n)
	}
	return keys, nil
}

// Write stores values for resourceID only if token is at least the
// resource's mark, and records token as the new mark, in one atomic script.
// A write without values only checks and records the token.
//
// An accepted write's Decision has Required set to the mark it replaced (0
// for the first). A refused one has Accepted false, Reason
// guard.ReasonStale and Required the mark that beat token; nothing was
// written. Refusals are decisions, not errors. Invalid input is an error and
// sends nothing.
func (g *Guard) Write(ctx context.Context, resourceID string, token int64, values ...Value) (guard.Decision, error) {
	if err := guard.ValidateToken(token); err != nil {
		return guard.Decision{}, err
	}
	if g.verify != nil { // signed mode: a bare number proves nothing
		return g.badSignature(ctx, resourceID, token, values)
	}
	return g.write(ctx, resourceID, token, values)
}

// write runs the script for a valid token that may be compared.
func (g *Guard) write(ctx context.Context, resourceID string, token int64, values []Value) (guard.Decision, error) {
	names := make([]string, len(values))
	args := make([]string, 0, len(values)+1)
	args = append(args, strconv.FormatInt(token, 10))
	for i, v := range values {
		names[i] = v.Name
		args = append(args, v.Data)
	}
	keys, err := g.keys(resourceID, names)
	if err != nil {
		return guard.Decision{}, err
	}
	reply, err := g.s.EvalStrings(ctx, writeScript, keys, args)
	if err != nil {
		return guard.Decision{}, fmt.Errorf("redisguard: write %q: %w", resourceID, err)
	}
	if len(reply) != 2 || (reply[0] != "accepted" && reply[0] != "refused") {
		return guard.Decision{}, fmt.Errorf("redisguard: write %q: unexpected reply %q", resourceID, reply)
	}
	mark, err := parseMark(keys[0], reply[1])
	if err != nil {
		return guard.Decision{}, err
	}
	d := guard.Evaluate(mark, token)
	if d.Accepted != (reply[0] == "accepted") {
		// The script and the rule disagree: never report a decision the
		// server did not make.
		return guard.Decision{}, fmt.Errorf("redisguard: write %q: script answered %s with mark %d for token %d", resourceID, reply[0], mark, token)
	}
	return d, nil
}

// Check is Write without values and without a context, so a Guard can
// stand wherever a *guard.Guard or a sqlguard.Marks does (the HTTP
// middleware, callguard.Call).
func (g *Guard) Check(resourceID string, token int64) (guard.Decision, error) {
	return g.Write(context.Background(), resourceID, token)
}

// CheckContext is Write without values.
func (g *Guard) CheckContext(ctx context.Context, resourceID string, token int64) (guard.Decision, error) {
	return g.Write(ctx, resourceID, token)
}

// HighWater returns the resource's mark, 0 when it has none.
func (g *Guard) HighWater(ctx context.Context, resourceID string) (int64, error) {
	mark, _, err := g.Read(ctx, resourceID)
	return mark, err
}

// Read returns the resource's mark and the values named, read in one
// script so they belong together: the values are those the mark's write
// stored (or a later one's). Values never written are absent from the map.
func (g *Guard) Read(ctx context.Context, resourceID string, names ...string) (int64, map[string]string, error) {
	keys, err := g.keys(resourceID, names)
	if err != nil {
		return 0, nil, err
	}
	reply, err := g.s.EvalStrings(ctx, readScript, keys, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("redisguard: read %q: %w", resourceID, err)
	}
	if len(reply) != 1+2*len(names) {
		return 0, nil, fmt.Errorf("redisguard: read %q: unexpected reply of %d strings", resourceID, len(reply))
	}
	mark, err := parseMark(keys[0], reply[0])
	if err != nil {
		return 0, nil, err
	}
	values := make(map[string]string, len(names))
	for i, n := range names {
		if reply[1+2*i] == "1" {
			values[n] = reply[2+2*i]
		}
	}
	return mark, values, nil
}

// parseMark reads a mark as the scripts return it: "0" for none, else a
// token.
func parseMark(key, s string) (int64, error) {
	if s == "0" {
		return 0, nil
	}
	n, err := guard.ParseToken(s)
	if err != nil {
		return 0, fmt.Errorf("redisguard: the mark at %q is not a fencing token: %w", key, err)
	}
	return n, nil
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
