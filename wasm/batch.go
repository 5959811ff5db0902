package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/fenceview/fenceview/guard"
)

// BatchCheck is one check of a batch: CheckBatch reads Handle and Token
// and fills Decision, or Err for invalid input (guard.ErrInvalidToken,
// guard.ErrUnknownHandle), exactly as CheckHandle would answer.
type BatchCheck struct {
	Handle   Handle
	Token    int64
	Decision guard.Decision
	Err      error
}

// CheckBatch checks many tokens with few calls into the module (one per
// instance per 256 checks), which spreads the fixed cost of a call across
// the batch. Checks of one resource are made in the order given; each
// instance's checks are atomic with respect to other callers of that
// instance. It returns an error only when the guard cannot answer at all
// (closed, a guest failure); then checks not made have Err set too.
func (g *Guard) CheckBatch(checks []BatchCheck) error {
	var first error
	for i := range checks {
		c := &checks[i]
		if c.Handle.s == nil {
			c.Decision, c.Err = guard.Decision{}, fmt.Errorf("%w: the zero Handle", guard.ErrUnknownHandle)
		}
	}
	// One pass per instance; with one instance (or a batch of one
	// instance's handles) that is one pass.
	for _, s := range g.shards {
		if err := s.runBatch(checks); err != nil && first == nil {
			first = err
		}
	}
	if g.reporter != nil {
		for i := range checks {
			if checks[i].Err == nil {
				g.reporter.Report(checks[i].Handle.id, checks[i].Decision)
			}
		}
	}
	return first
}

// runBatch makes the checks of checks that belong to s, batchSize at a
// time.
func (s *shard) runBatch(checks []BatchCheck) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, buf := &s.batchIdx, &s.batchBuf
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		defer func() { n = 0 }()
		if s.failure == nil {
			if !s.mem.Write(s.batch, buf[:n*batchRecord]) {
				s.fail(errors.New("batch buffer outside memory"))
			} else {
				s.stack[0], s.stack[1] = uint64(s.batch), uint64(n)
				if err := s.checkBatch.CallWithStack(context.Background(), s.stack[:]); err != nil {
					s.fail(err)
				} else if got := int32(uint32(s.stack[0])); got != int32(n) {
					s.fail(fmt.Errorf("guard_check_batch returned %d for %d records", got, n))
				}
			}
		}
		out, ok := s.mem.Read(s.batch, uint32(n*batchRecord))
		if s.failure != nil || !ok {
			if s.failure == nil {
				s.fail(errors.New("batch buffer outside memory"))
			}
			for _, i := range idx[:n] {
				checks[i].Decision, checks[i].Err = guard.Decision{}, s.failure
			}
			return s.failure
		}
		for k, i := range idx[:n] {
			c := &checks[i]
			code := int64(binary.LittleEndian.Uint64(out[k*batchRecord:]))
			required := int64(binary.LittleEndian.Uint64(out[k*batchRecord+8:]))
			c.Decision, c.Err = guard.Decision{}, nil
			switch {
			case code == 0:
				c.Decision = guard.Decision{Accepted: true, Presented: c.Token, Required: required}
			case code > 0:
				c.Decision = guard.Evaluate(code, c.Token)
			case code == CodeBadSignature:
				c.Decision = guard.Decision{Reason: guard.ReasonBadSignature, Presented: c.Token, Required: required}
			default:
				c.Err = s.err(code, nil, c.Handle.id, c.Token)
			}
		}
		return nil
	}
	var err error
	for i := range checks {
		c := &checks[i]
		if c.Handle.s != s {
			continue
		}
		rec := buf[n*batchRecord:]
		binary.LittleEndian.PutUint64(rec, uint64(c.Handle.h))
		binary.LittleEndian.PutUint64(rec[8:], uint64(c.Token))
		idx[n] = int32(i)
		if n++; n == batchSize {
			if e := flush(); e != nil && err == nil {
				err = e
			}
		}
	}
	if e := flush(); e != nil && err == nil {
		err = e
	}
	return err
}
