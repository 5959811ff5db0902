package proof

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Models of the primitives, each built from locks: a semaphore
// of N slots, a multi-lock over a few locks, an election. Histories of
// them are one partition each (a multi-lock's operations span its locks,
// so they cannot be split per lock), recorded with Recorder.AddOp and
// AddUnknownOp, and checked with Check.
//
// The workloads use leases far longer than a run, so no lease expires and
// every change is one a client made: the models need no clock.
//
// An operation whose outcome the client never learned (Unknown) either
// did nothing or did what it would have done, as in FenceModelUnknown.

// ModelSlots and ModelLocks bound the models' fixed-size states (arrays,
// so that porcupine can compare them with ==).
const (
	ModelSlots = 8
	ModelLocks = 8
)

// Op is what a primitive's operation does.
type Op int

const (
	// OpAcquire takes a semaphore's permit, a set of locks, or campaigns.
	OpAcquire Op = iota
	// OpRelease gives a permit or a set of locks back, or resigns.
	OpRelease
	// OpProclaim changes an election's value.
	OpProclaim
	// OpRead reads a semaphore's state, one lock's, or the leader.
	OpRead
)

func (o Op) String() string {
	return [...]string{"acquire", "release", "proclaim", "read"}[o]
}

// Call is an operation on a primitive as invoked.
type Call struct {
	Op     Op
	Holder string // the holder or candidate
	Slot   int    // semaphore release: the slot
	Locks  []int  // multi-lock acquire, release: the locks, as indexes; read: Locks[0]
	Value  string // election campaign, proclaim
	Shared bool   // a shared lock's acquire in shared mode (RWLockModel; a release names no mode)
}

// Result is what it returned.
type Result struct {
	OK      bool    // granted, released, proclaimed, resigned
	Slot    int     // semaphore acquire: the slot granted
	Tokens  []int64 // semaphore acquire: [token]; multi-lock acquire: one per lock, in order
	Locks   []int   // multi-lock acquire refused: the locks named held; release: those released
	Held    [ModelSlots]Holding
	Holder  string // multi-lock read: the lock's holder; election: the leader ("" none)
	Token   int64  // multi-lock read: the lock's last token; election: the term
	Value   string // election: the leader's value
	Unknown bool
}

// Holding is one slot or lock as read: its holder ("" free) and token.
type Holding struct {
	Holder string
	Token  int64
}

// AddOp records an operation on a primitive invoked at call that has just
// returned out.
func (r *Recorder) AddOp(client int, in Call, call int64, out Result) {
	r.add(client, in, call, out)
}

// AddUnknownOp records an operation on a primitive whose outcome is
// unknown (see AddUnknown).
func (r *Recorder) AddUnknownOp(in Call, call int64) {
	r.addUnknown(in, call, Result{Unknown: true})
}

// semState is a semaphore's slots: who holds each, and its last token.
type semState struct {
	Holder [ModelSlots]string
	Last   [ModelSlots]int64
}

// SemaphoreModel is a semaphore of permits slots (at most ModelSlots):
//
//   - an acquire is granted the lowest free slot, whose token is exactly
//     one above the slot's last, or is refused when every slot is held;
//   - a release of a slot succeeds only for the slot's holder;
//   - a read returns every slot's holder and, for a held slot, its token.
//
// So never more than permits holders, and a slot's tokens strictly
// increase.
func SemaphoreModel(permits int) porcupine.Model {
	if permits < 1 || permits > ModelSlots {
		panic("proof: permits out of the model's range")
	}
	lowestFree := func(s semState) int {
		for i := range permits {
			if s.Holder[i] == "" {
				return i
			}
		}
		return -1
	}
	return primitiveModel(func(s semState, in Call, out Result) []any {
		free := lowestFree(s)
		switch in.Op {
		case OpAcquire:
			took := s
			if free >= 0 {
				took.Holder[free] = in.Holder
				took.Last[free]++
			}
			switch {
			case out.Unknown:
				return []any{s, took}
			case !out.OK:
				return when(free < 0, s)
			default:
				return when(free >= 0 && out.Slot == free && len(out.Tokens) == 1 && out.Tokens[0] == took.Last[free], took)
			}
		case OpRelease:
			mine := in.Slot >= 0 && in.Slot < ModelSlots && s.Holder[in.Slot] == in.Holder
			freed := s
			if mine {
				freed.Holder[in.Slot] = ""
			}
			switch {
			case out.Unknown:
				return []any{s, freed}
			case out.OK:
				return when(mine, freed)
			default:
				return when(!mine, s)
			}
		case OpRead:
			for i := range ModelSlots {
				want := Holding{Holder: s.Holder[i]}
				if want.Holder != "" {
					want.Token = s.Last[i]
				}
				if out.Held[i] != want {
					return nil
				}
			}
			return []any{s}
		}
		return nil
	}, func(s semState) string {
		var parts []string
		for i := range permits {
			parts = append(parts, fmt.Sprintf("#%d %q@%d", i, s.Holder[i], s.Last[i]))
		}
		return strings.Join(parts, ", ")
	})
}

// multiState is the locks of a multi-lock workload.
type multiState struct {
	Holder [ModelLocks]string
	Holds  [ModelLocks]int // re-entrant holds
	Last   [ModelLocks]int64
}

// MultiLockModel is up to ModelLocks locks taken in sets:
//
//   - an acquire of a set is granted, every lock at once, each with a
//     token one above its last, when no lock of the set is held by
//     another holder; otherwise it is refused, naming exactly the locks
//     of the set held by others, and changes nothing;
//   - a release of a set gives up one hold of each lock the holder holds,
//     naming exactly those;
//   - a read of one lock returns its holder and last token.
//
// A partial set, seen by any reader at any moment, is not linearizable.
func MultiLockModel() porcupine.Model {
	return primitiveModel(func(s multiState, in Call, out Result) []any {
		switch in.Op {
		case OpAcquire:
			var others []int
			took := s
			for _, l := range in.Locks {
				if s.Holder[l] != "" && s.Holder[l] != in.Holder {
					others = append(others, l)
				}
				took.Holder[l] = in.Holder
				took.Holds[l]++
				took.Last[l]++
			}
			switch {
			case out.Unknown:
				if len(others) > 0 {
					return []any{s}
				}
				return []any{s, took}
			case !out.OK:
				return when(len(others) > 0 && sameSet(out.Locks, others), s)
			}
			if len(others) > 0 || len(out.Tokens) != len(in.Locks) {
				return nil
			}
			for i, l := range in.Locks {
				if out.Tokens[i] != took.Last[l] {
					return nil
				}
			}
			return []any{took}
		case OpRelease:
			var mine []int
			freed := s
			for _, l := range in.Locks {
				if s.Holder[l] == in.Holder {
					mine = append(mine, l)
					if freed.Holds[l]--; freed.Holds[l] == 0 {
						freed.Holder[l] = ""
					}
				}
			}
			if out.Unknown {
				return []any{s, freed}
			}
			return when(out.OK && sameSet(out.Locks, mine), freed)
		case OpRead:
			l := in.Locks[0]
			return when(out.Holder == s.Holder[l] && out.Token == s.Last[l], s)
		}
		return nil
	}, func(s multiState) string {
		var parts []string
		for i := range ModelLocks {
			if s.Last[i] > 0 {
				parts = append(parts, fmt.Sprintf("%d:%q@%d", i, s.Holder[i], s.Last[i]))
			}
		}
		return strings.Join(parts, ", ")
	})
}

// electionState is an election: its leader, term and value, and the last
// term (the lock's last token).
type electionState struct {
	Leader string
	Term   int64
	Value  string
	Last   int64
}

// ElectionModel is one election:
//
//   - a campaign when nobody leads is elected with the term one above the
//     last, and its value; by the leader it keeps the term and sets the
//     value; while another leads it is refused, naming that leader and
//     term;
//   - a proclaim by the leader sets the value, same term; a resign by the
//     leader ends the term (the client names it, in Result.Token); by anyone else both are refused (not leader);
//   - a read returns the leader, term and value, or nobody.
//
// So at most one leader per term, and terms strictly increase.
func ElectionModel() porcupine.Model {
	return primitiveModel(func(s electionState, in Call, out Result) []any {
		leads := s.Leader != "" && s.Leader == in.Holder
		next := s
		switch in.Op {
		case OpAcquire:
			switch {
			case leads:
				next.Value = in.Value
			case s.Leader == "":
				next = electionState{Leader: in.Holder, Term: s.Last + 1, Value: in.Value, Last: s.Last + 1}
			}
			if out.Unknown {
				return []any{s, next}
			}
			if !out.OK {
				return when(!leads && s.Leader != "" && out.Holder == s.Leader && out.Token == s.Term, s)
			}
			return when((leads || s.Leader == "") && out.Token == next.Term && out.Holder == in.Holder && out.Value == in.Value, next)
		case OpProclaim:
			next.Value = in.Value
			if out.Unknown {
				return []any{s, when1(leads, next, s)}
			}
			if !out.OK {
				return when(!leads, s)
			}
			return when(leads && out.Token == s.Term && out.Value == in.Value, next)
		case OpRelease:
			next = electionState{Last: s.Last}
			if out.Unknown {
				return []any{s, when1(leads, next, s)}
			}
			if !out.OK {
				return when(!leads, s)
			}
			return when(leads && out.Token == s.Term, next)
		case OpRead:
			return when(out.Holder == s.Leader && (s.Leader == "" || out.Token == s.Term && out.Value == s.Value), s)
		}
		return nil
	}, func(s electionState) string {
		if s.Leader == "" {
			return fmt.Sprintf("nobody leads (last term %d)", s.Last)
		}
		return fmt.Sprintf("%s leads term %d, value %q", s.Leader, s.Term, s.Value)
	})
}

// primitiveModel is the model of one primitive whose state is an S, zero
// at the start: step gives the states a call may leave it in (none: the
// call's result is impossible there).
func primitiveModel[S any](step func(s S, in Call, out Result) []any, describeState func(S) string) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init:              func() []any { var s S; return []any{s} },
		Step:              func(state, input, output any) []any { return step(state.(S), input.(Call), output.(Result)) },
		DescribeOperation: describeOp,
		DescribeState:     func(state any) string { return describeState(state.(S)) },
	}
	return m.ToModel()
}

// when is the one next state when ok holds, none otherwise.
func when(ok bool, next any) []any {
	if ok {
		return []any{next}
	}
	return nil
}

func when1(ok bool, yes, no any) any {
	if ok {
		return yes
	}
	return no
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func describeOp(input, output any) string {
	in, out := input.(Call), output.(Result)
	what := fmt.Sprintf("%s %v by %s", in.Op, in.Locks, in.Holder)
	if in.Shared {
		what += " (shared)"
	}
	switch {
	case out.Unknown:
		return what + " -> unknown"
	case in.Op == OpRead:
		return fmt.Sprintf("%s -> %q@%d %q %v", what, out.Holder, out.Token, out.Value, out.Held)
	case !out.OK:
		return fmt.Sprintf("%s -> refused %v %q@%d", what, out.Locks, out.Holder, out.Token)
	}
	return fmt.Sprintf("%s slot %d %q -> ok slot %d tokens %v term %d", what, in.Slot, in.Value, out.Slot, out.Tokens, out.Token)
}
