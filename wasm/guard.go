package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/ledger"
	guestabi "github.com/fenceview/fenceview/wasm/internal/abi"
)

// The guard module's negative result codes (docs/wasm-abi.md), defined
// once for the guest and this host in wasm/internal/abi.
const (
	CodeInvalidResource = guestabi.CodeInvalidResource // resource id empty, over 160 bytes, not UTF-8, or with a control character
	CodeInvalidToken    = guestabi.CodeInvalidToken    // token <= 0
	CodeBadMemory       = guestabi.CodeBadMemory       // pointer and length not inside one live guard_alloc buffer
	CodeUnknownHandle   = guestabi.CodeUnknownHandle   // a handle guard_handle never returned
	CodeBadSignature    = guestabi.CodeBadSignature    // signed mode: no signature a trusted key made for this resource and token
	CodeInvalidKey      = guestabi.CodeInvalidKey      // guard_trust_key: not a 32-byte key
	CodeTooManyKeys     = guestabi.CodeTooManyKeys     // guard_trust_key: 16 keys are trusted already
	CodeInternal        = guestabi.CodeInternal        // any other guest failure
	CodeSharedToken     = guestabi.CodeSharedToken     // signed mode: a write presented a shared grant's token
)

// Errors of the host itself. Invalid input is reported with the guard
// package's errors (guard.ErrInvalidResourceID, guard.ErrInvalidToken,
// guard.ErrUnknownHandle), exactly as the native guard reports it.
var (
	// ErrGuest means the module failed in a way valid input never causes
	// (a trap, an unexpected code). The instance it happened in is retired:
	// every later call routed to it fails too, rather than trusting
	// marks that may be half-written.
	ErrGuest = errors.New("wasm guard: guest failure")
	// ErrClosed is returned by calls after Close.
	ErrClosed = errors.New("wasm guard: closed")
)

// idSize is the room for an id in the scratch buffer each instance keeps:
// every valid id (160 bytes) and invalid ones a little longer, so the
// guest, not the host, refuses them. Longer ids are refused by the host
// with the same error.
const idSize = 256

// sigOffset is where a signature carrier goes in the scratch buffer, right
// after the id; scratchSize has room for the longest carrier.
const (
	sigOffset   = idSize
	scratchSize = idSize + ledger.MaxCarrierSize
)

// batchSize is the most records one guard_check_batch call carries; larger
// batches take several calls.
const batchSize = 256

// batchRecord is the size of a guard_check_batch record (docs/wasm-abi.md).
const batchRecord = guestabi.BatchRecord

// Config configures New. The zero value is ready to use.
type Config struct {
	// Shards is the number of module instances. Each resource is routed to
	// one fixed instance (by a hash of its id), so its high-water mark lives
	// in exactly one place and the rule holds for the whole Guard; distinct
	// resources on distinct instances are checked in parallel. 0 means
	// DefaultShards().
	Shards int
	// CacheDir, when set, keeps compiled code on disk, so a new process
	// skips compilation too. Either way the module is compiled at most once
	// per process (per CacheDir).
	CacheDir string
	// Reporter, when set, receives every decision (see Reporter). The
	// caller closes it.
	Reporter *Reporter
}

// Guard is the fencing guard running as WebAssembly on wazero: the same
// decisions as guard.Guard, from guard.wasm. It is safe for concurrent use.
type Guard struct {
	shards   []*shard
	seed     maphash.Seed
	reporter *Reporter
}

// shard is one module instance. wazero functions are not safe for
// concurrent calls, and the marks inside must change one check at a time,
// so everything goes through mu.
type shard struct {
	mu      sync.Mutex
	failure error // set once the instance failed; sticky

	mod                                api.Module
	mem                                api.Memory
	check, highWater, seed             api.Function
	handle, checkHandle, highWaterByH  api.Function
	checkBatch, trustKey, checkSigned  api.Function
	checkSignedHandle, checkSignedRead api.Function
	scratch, lastRequired, batch       uint32
	stack                              [5]uint64

	// handles caches the guest's handle of every id it has accepted, so a
	// check by name is a Go map lookup and a call by handle: hashing the
	// id inside the guest costs several times more.
	handles map[string]uint32

	// batchIdx and batchBuf are CheckBatch's staging area (s.mu is held).
	batchIdx [batchSize]int32
	batchBuf [batchSize * batchRecord]byte
}

var (
	cachesMu sync.Mutex
	caches   = map[string]wazero.CompilationCache{}
)

// compilationCache returns the process-wide cache for dir ("" is memory),
// so every Guard in the process shares compiled code.
func compilationCache(dir string) (wazero.CompilationCache, error) {
	cachesMu.Lock()
	defer cachesMu.Unlock()
	if c, ok := caches[dir]; ok {
		return c, nil
	}
	var c wazero.CompilationCache
	if dir == "" {
		c = wazero.NewCompilationCache()
	} else {
		var err error
		if c, err = wazero.NewCompilationCacheWithDir(dir); err != nil {
			return nil, fmt.Errorf("wasm guard: compilation cache: %w", err)
		}
	}
	caches[dir] = c
	return c, nil
}

// engine is a runtime with guard.wasm compiled in it. There is one per
// cache directory per process, so a Guard starts by instantiating only.
type engine struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

var (
	enginesMu sync.Mutex
	engines   = map[string]*engine{}
)

func engineFor(dir string) (*engine, error) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e, ok := engines[dir]; ok {
		return e, nil
	}
	cache, err := compilationCache(dir)
	if err != nil {
		return nil, err
	}
	// The runtime lives as long as the process: it is not tied to the
	// context of the first New.
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm guard: wasi: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, Bytes())
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm guard: compile: %w", err)
	}
	e := &engine{rt: rt, compiled: compiled}
	engines[dir] = e
	return e, nil
}

// DefaultShards is the number of instances New starts when Config.Shards
// is 0: one per usable CPU (GOMAXPROCS), at most 8, so as many checks of
// distinct resources can run at once as there are CPUs to run them. Each
// instance costs about 3 MiB of linear memory plus about 4 MB of host
// heap; set Shards to 1 to save it (docs/wasm-abi.md has the measurements).
func DefaultShards() int { return min(runtime.GOMAXPROCS(0), 8) }

// New starts cfg.Shards instances of guard.wasm, with no high-water marks.
// The module is compiled by the first New of the process (or taken from
// the on-disk cache) and shared by every later one.
func New(ctx context.Context, cfg Config) (*Guard, error) {
	n := cfg.Shards
	if n <= 0 {
		n = DefaultShards()
	}
	e, err := engineFor(cfg.CacheDir)
	if err != nil {
		return nil, err
	}
	g := &Guard{seed: maphash.MakeSeed(), reporter: cfg.Reporter}
	for i := 0; i < n; i++ {
		s, err := newShard(ctx, e.rt, e.compiled)
		if err != nil {
			g.Close(ctx)
			return nil, err
		}
		g.shards = append(g.shards, s)
	}
	return g, nil
}

func newShard(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule) (*shard, error) {
	// The Go runtime seeds its map hashing from random_get: give it real
	// randomness so ids cannot be chosen to collide. No files, no output.
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous, so several instances can coexist
		WithStartFunctions("_initialize").
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithStdout(io.Discard).
		WithStderr(io.Discard)
	mod, err := rt.InstantiateModule(ctx, compiled, mc)
	if err != nil {
		return nil, fmt.Errorf("wasm guard: instantiate: %w", err)
	}
	s := &shard{mod: mod, mem: mod.Memory(), handles: map[string]uint32{}}
	fns := map[string]*api.Function{
		"guard_check":                    &s.check,
		"guard_high_water":               &s.highWater,
		"guard_seed":                     &s.seed,
		"guard_handle":                   &s.handle,
		"guard_check_handle":             &s.checkHandle,
		"guard_high_water_handle":        &s.highWaterByH,
		"guard_check_batch":              &s.checkBatch,
		"guard_trust_key":                &s.trustKey,
		"guard_check_signed":             &s.checkSigned,
		"guard_check_signed_handle":      &s.checkSignedHandle,
		"guard_check_signed_read_handle": &s.checkSignedRead,
	}
	for name, fn := range fns {
		if *fn = mod.ExportedFunction(name); *fn == nil {
			mod.Close(ctx)
			return nil, fmt.Errorf("wasm guard: module does not export %s", name)
		}
	}
	ptr, err := call1(ctx, mod, "guard_last_required_ptr")
	if err != nil {
		mod.Close(ctx)
		return nil, err
	}
	s.lastRequired = uint32(ptr)
	scratch, err := call1(ctx, mod, "guard_alloc", scratchSize)
	if err != nil || uint32(scratch) == 0 {
		mod.Close(ctx)
		return nil, fmt.Errorf("wasm guard: guard_alloc(%d) = %d, %v", scratchSize, scratch, err)
	}
	s.scratch = uint32(scratch)
	batch, err := call1(ctx, mod, "guard_alloc", batchSize*batchRecord)
	if err != nil || uint32(batch) == 0 {
		mod.Close(ctx)
		return nil, fmt.Errorf("wasm guard: guard_alloc(%d) = %d, %v", batchSize*batchRecord, batch, err)
	}
	s.batch = uint32(batch)
	return s, nil
}

// call1 calls an export that is not on the hot path.
func call1(ctx context.Context, mod api.Module, name string, params ...uint64) (uint64, error) {
	fn := mod.ExportedFunction(name)
	if fn == nil {
		return 0, fmt.Errorf("wasm guard: module does not export %s", name)
	}
	res, err := fn.Call(ctx, params...)
	if err != nil {
		return 0, fmt.Errorf("wasm guard: %s: %w", name, err)
	}
	if len(res) != 1 {
		return 0, fmt.Errorf("wasm guard: %s returned %d values", name, len(res))
	}
	return res[0], nil
}

// Close stops every instance. Calls after Close return ErrClosed.
func (g *Guard) Close(ctx context.Context) error {
	var errs []error
	for _, s := range g.shards {
		s.mu.Lock()
		if !errors.Is(s.failure, ErrClosed) {
			s.failure = ErrClosed
			errs = append(errs, s.mod.Close(ctx))
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (g *Guard) shardFor(resourceID string) *shard {
	if len(g.shards) == 1 {
		return g.shards[0]
	}
	return g.shards[maphash.String(g.seed, resourceID)%uint64(len(g.shards))]
}

// Check presents token for resourceID and, when accepted, raises the
// resource's high-water mark to it, atomically: guard.Guard.Check, run by
// the WebAssembly guard. Invalid input is an error and changes nothing.
func (g *Guard) Check(resourceID string, token int64) (guard.Decision, error) {
	d, err := g.shardFor(resourceID).checkID(resourceID, token)
	if err == nil && g.reporter != nil {
		g.reporter.Report(resourceID, d)
	}
	return d, err
}

// HighWater returns the resource's high-water mark, 0 when it has none.
func (g *Guard) HighWater(resourceID string) (int64, error) {
	s := g.shardFor(resourceID)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.callID(s.highWater, resourceID)
	return v, s.err(v, err, resourceID, 1)
}

// Seed raises the resource's high-water mark to at least token without
// making a decision, to restore state after a restart. It returns the mark.
func (g *Guard) Seed(resourceID string, token int64) (int64, error) {
	s := g.shardFor(resourceID)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.callID(s.seed, resourceID, uint64(token))
	return v, s.err(v, err, resourceID, token)
}

// Handle names one resource of one Guard for CheckHandle.
type Handle struct {
	id string
	s  *shard
	h  uint32
}

// ResourceID returns the resource h names.
func (h Handle) ResourceID() string { return h.id }

// Handle resolves resourceID once, for CheckHandle: the fast path for a
// caller that checks the same resource many times. Handles are only valid
// with the Guard that returned them, and stay valid until it is closed.
func (g *Guard) Handle(resourceID string) (Handle, error) {
	s := g.shardFor(resourceID)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.callID(s.handle, resourceID)
	v = int64(int32(uint32(v))) // an i32 result: sign-extend the code
	if err := s.err(v, err, resourceID, 1); err != nil {
		return Handle{}, err
	}
	return Handle{id: resourceID, s: s, h: uint32(v)}, nil
}

// CheckHandle is Check for the resource h names, without passing its id.
func (g *Guard) CheckHandle(h Handle, token int64) (guard.Decision, error) {
	s := h.s
	if s == nil {
		return guard.Decision{}, fmt.Errorf("%w: the zero Handle", guard.ErrUnknownHandle)
	}
	s.mu.Lock()
	d, err := s.callHandle(h.h, h.id, token)
	s.mu.Unlock()
	if err == nil && g.reporter != nil {
		g.reporter.Report(h.id, d)
	}
	return d, err
}

// HighWaterHandle is HighWater for the resource h names.
func (g *Guard) HighWaterHandle(h Handle) (int64, error) {
	s := h.s
	if s == nil {
		return 0, fmt.Errorf("%w: the zero Handle", guard.ErrUnknownHandle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure != nil {
		return 0, s.failure
	}
	s.stack[0] = uint64(h.h)
	err := s.highWaterByH.CallWithStack(context.Background(), s.stack[:])
	v := int64(s.stack[0])
	return v, s.err(v, err, h.id, 1)
}

func (s *shard) checkID(resourceID string, token int64) (guard.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.handleOf(resourceID)
	if err != nil {
		return guard.Decision{}, err
	}
	return s.callHandle(h, resourceID, token)
}

// handleOf returns the guest's handle of resourceID, from the cache or from
// guard_handle. The guest validates the id once, there; invalid ids get its
// code and the native guard's error, as guard_check would give (the id is
// checked before the token). s.mu is held.
func (s *shard) handleOf(resourceID string) (uint32, error) {
	if h, ok := s.handles[resourceID]; ok {
		return h, nil
	}
	v, err := s.callID(s.handle, resourceID)
	v = int64(int32(uint32(v)))
	if err := s.err(v, err, resourceID, 1); err != nil {
		return 0, err
	}
	s.handles[strings.Clone(resourceID)] = uint32(v)
	return uint32(v), nil
}

// callHandle is guard_check_handle. s.mu is held.
func (s *shard) callHandle(h uint32, resourceID string, token int64) (guard.Decision, error) {
	if s.failure != nil {
		return guard.Decision{}, s.failure
	}
	s.stack[0], s.stack[1] = uint64(h), uint64(token)
	err := s.checkHandle.CallWithStack(context.Background(), s.stack[:])
	return s.decision(int64(s.stack[0]), err, resourceID, token)
}

// callID calls fn(ptr, len, extra...) with resourceID in the scratch
// buffer. s.mu is held.
func (s *shard) callID(fn api.Function, resourceID string, extra ...uint64) (int64, error) {
	if s.failure != nil {
		return 0, s.failure
	}
	if len(resourceID) > idSize {
		// Cannot be a valid id; the guest would refuse it the same way.
		return CodeInvalidResource, nil
	}
	if len(resourceID) > 0 && !s.mem.WriteString(s.scratch, resourceID) {
		return 0, s.fail(errors.New("scratch buffer outside memory"))
	}
	s.stack[0], s.stack[1] = uint64(s.scratch), uint64(len(resourceID))
	if len(extra) > 0 {
		s.stack[2] = extra[0]
	}
	if err := fn.CallWithStack(context.Background(), s.stack[:]); err != nil {
		return 0, err
	}
	return int64(s.stack[0]), nil
}

// decision turns a check's result into the native guard's Decision.
// s.mu is held.
func (s *shard) decision(v int64, callErr error, resourceID string, token int64) (guard.Decision, error) {
	if err := s.err(v, callErr, resourceID, token); err != nil {
		return guard.Decision{}, err
	}
	if v > 0 {
		return guard.Evaluate(v, token), nil // refused: v is the mark
	}
	// Accepted, or a bad signature or shared token; the mark it was compared with is in
	// the guest's cell.
	prev, ok := s.mem.ReadUint64Le(s.lastRequired)
	if !ok {
		return guard.Decision{}, s.fail(errors.New("last-required cell outside memory"))
	}
	switch v {
	case CodeBadSignature:
		return guard.Decision{Reason: guard.ReasonBadSignature, Presented: token, Required: int64(prev)}, nil
	case CodeSharedToken:
		return guard.Decision{Reason: guard.ReasonSharedToken, Presented: token, Required: int64(prev)}, nil
	}
	return guard.Decision{Accepted: true, Presented: token, Required: int64(prev)}, nil
}

// err maps a call's outcome to an error: nil for v >= 0, the guard
// package's errors for invalid input, ErrGuest (retiring the instance)
// for anything else. s.mu is held.
func (s *shard) err(v int64, callErr error, resourceID string, token int64) error {
	if callErr != nil {
		if s.failure != nil {
			return s.failure
		}
		return s.fail(callErr)
	}
	switch {
	case v >= 0 || v == CodeBadSignature || v == CodeSharedToken:
		return nil
	case v == CodeInvalidResource:
		// The native validator words the reason; the guest only has a code.
		if err := guard.ValidateResourceID(resourceID); err != nil {
			return err
		}
		return fmt.Errorf("%w: refused by the guest", guard.ErrInvalidResourceID)
	case v == CodeInvalidToken:
		if err := guard.ValidateToken(token); err != nil {
			return err
		}
		return fmt.Errorf("%w: refused by the guest", guard.ErrInvalidToken)
	case v == CodeUnknownHandle:
		return fmt.Errorf("%w (%s)", guard.ErrUnknownHandle, resourceID)
	}
	return s.fail(fmt.Errorf("result code %d", v))
}

func (s *shard) fail(cause error) error {
	s.failure = fmt.Errorf("%w: %v", ErrGuest, cause)
	return s.failure
}
