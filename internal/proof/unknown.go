package proof

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// Operations whose outcome the client never learned (the node it asked was
// killed, or answered 503 while a cluster changed leader) may or may not
// have taken effect, at any moment after they were sent. They are
// recorded with Output.Unknown and a return time at the end of the
// history, and FenceModelUnknown lets each be linearized either way.

// AddUnknown records an operation invoked at call whose outcome is unknown.
// It gets a client id of its own: the client that sent it went on.
func (r *Recorder) AddUnknown(in Input, call int64) { r.addUnknown(in, call, Output{Unknown: true}) }

func (r *Recorder) addUnknown(in any, call int64, out any) {
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{
		ClientId: 1_000_000 + len(r.ops), Input: in, Call: call,
		Output: out, Return: math.MaxInt64 / 2,
	})
	r.mu.Unlock()
}

// FenceModelUnknown is FenceModel where an operation with an unknown
// outcome either did nothing or did what it would have done: a grant took
// the next token, a write with a token at or above the mark raised it.
var FenceModelUnknown = porcupine.NondeterministicModel{
	Partition: byResource,
	Init:      func() []any { return []any{fenceState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(fenceState), input.(Input), output.(Output)
		if !out.Unknown {
			if ok, next := FenceModel.Step(s, in, out); ok {
				return []any{next}
			}
			return nil
		}
		switch in.Kind {
		case Grant:
			took := s
			took.Last = max(s.Last, s.HWM) + 1
			return []any{s, took}
		case Write:
			if (s.Last > 0 && in.Token > s.Last) || in.Token < s.HWM {
				return []any{s}
			}
			raised := s
			raised.HWM = in.Token
			return []any{s, raised}
		}
		return []any{s}
	},
	DescribeOperation: func(input, output any) string {
		if output.(Output).Unknown {
			return fmt.Sprintf("%v (outcome unknown)", input.(Input).Kind)
		}
		return describe(input, output)
	},
	DescribeState: func(state any) string { return FenceModel.DescribeState(state) },
}
