// Package proof holds the models fenceview's recorded histories are checked
// against with porcupine, a linearizability checker, and a recorder for
// those histories.
//
// Both models are a fenced register per resource: a write with token t
// takes effect only if t >= every token already applied (the high-water
// mark), and is refused otherwise, so no stale write is ever visible after
// a newer one. FenceModel is the register the server keeps (the mark itself,
// plus the grants that issue tokens); KVModel is a value store guarded by a
// mark, like the wasmplugin example.
package proof

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is what an operation does.
type Kind int

const (
	// Grant is a lock grant: its output is the token issued.
	Grant Kind = iota
	// Write presents Token (and, on a value store, Value).
	Write
	// Read observes the register.
	Read
)

func (k Kind) String() string {
	switch k {
	case Grant:
		return "grant"
	case Write:
		return "write"
	case Read:
		return "read"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Input is an operation as invoked.
type Input struct {
	Resource string
	Kind     Kind
	Token    int64  // Write: the token presented
	Value    string // Write to a value store: the value
}

// Output is what an operation returned.
type Output struct {
	Accepted bool   // Write
	Reason   string // Write refused: the reason given
	Required int64  // Write refused: the mark it was refused against
	Token    int64  // Grant: the token; Read of the server: the high-water mark
	Last     int64  // Read of the server: the last token issued
	Value    string // Read of a value store
	Found    bool   // Read of a value store: there is a value
	Unknown  bool   // the client never learned the outcome (see AddUnknown)
}

// Reasons a write is refused for, as the contract names them.
const (
	ReasonStale    = "stale-token"
	ReasonUnissued = "unissued-token"
)

// fenceState is the server's register for one resource.
type fenceState struct {
	HWM  int64 // highest token accepted
	Last int64 // last token issued
}

// FenceModel is the server's fenced register, one per resource:
//
//   - a grant issues exactly max(last issued, mark) + 1;
//   - a write with a token above the last one issued (when tokens were
//     issued) is refused as unissued-token;
//   - otherwise a write with token >= mark is accepted and raises the mark,
//     and one below it is refused as stale-token with required = the mark;
//   - a read returns the mark and the last token issued.
var FenceModel = registerModel(func(s fenceState, in Input, out Output) (bool, fenceState) {
	switch in.Kind {
	case Grant:
		if out.Token != max(s.Last, s.HWM)+1 {
			return false, s
		}
		s.Last = out.Token
		return true, s
	case Write:
		switch {
		case s.Last > 0 && in.Token > s.Last:
			return !out.Accepted && out.Reason == ReasonUnissued && out.Required == s.HWM, s
		case in.Token >= s.HWM:
			if !out.Accepted {
				return false, s
			}
			s.HWM = in.Token
			return true, s
		default:
			return !out.Accepted && out.Reason == ReasonStale && out.Required == s.HWM, s
		}
	case Read:
		return out.Token == s.HWM && out.Last == s.Last, s
	}
	return false, s
}, func(s fenceState) string {
	return fmt.Sprintf("mark %d, last issued %d", s.HWM, s.Last)
})

// kvState is a value store's register for one resource.
type kvState struct {
	HWM   int64
	Value string
	Found bool
}

// KVModel is a value store fenced by a high-water mark, one register per
// resource: a write with token >= mark stores its value and raises the
// mark; one below it is refused as stale-token with required = the mark
// and changes nothing; a read returns the value of the last write applied.
var KVModel = registerModel(func(s kvState, in Input, out Output) (bool, kvState) {
	switch in.Kind {
	case Write:
		if in.Token < s.HWM {
			return !out.Accepted && out.Reason == ReasonStale && out.Required == s.HWM, s
		}
		if !out.Accepted {
			return false, s
		}
		return true, kvState{HWM: in.Token, Value: in.Value, Found: true}
	case Read:
		return out.Found == s.Found && out.Value == s.Value, s
	}
	return false, s
}, func(s kvState) string {
	if !s.Found {
		return fmt.Sprintf("mark %d, no value", s.HWM)
	}
	return fmt.Sprintf("mark %d, value %q", s.HWM, s.Value)
})

// registerModel is the model of a register per resource whose state is
// an S, zero at the start: step says whether a call's output is possible
// in s and the state it leaves.
func registerModel[S any](step func(s S, in Input, out Output) (bool, S), describeState func(S) string) porcupine.Model {
	return porcupine.Model{
		Partition: byResource,
		Init:      func() any { var s S; return s },
		Step: func(state, input, output any) (bool, any) {
			return step(state.(S), input.(Input), output.(Output))
		},
		DescribeOperation: describe,
		DescribeState:     func(state any) string { return describeState(state.(S)) },
	}
}

func byResource(history []porcupine.Operation) [][]porcupine.Operation {
	parts := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range history {
		r := op.Input.(Input).Resource
		if _, ok := parts[r]; !ok {
			order = append(order, r)
		}
		parts[r] = append(parts[r], op)
	}
	out := make([][]porcupine.Operation, 0, len(order))
	for _, r := range order {
		out = append(out, parts[r])
	}
	return out
}

func describe(input, output any) string {
	in, out := input.(Input), output.(Output)
	switch in.Kind {
	case Grant:
		return fmt.Sprintf("%s grant -> %d", in.Resource, out.Token)
	case Write:
		v := ""
		if in.Value != "" {
			v = fmt.Sprintf(" %q", in.Value)
		}
		if out.Accepted {
			return fmt.Sprintf("%s write %d%s -> ok", in.Resource, in.Token, v)
		}
		return fmt.Sprintf("%s write %d%s -> %s (required %d)", in.Resource, in.Token, v, out.Reason, out.Required)
	case Read:
		if out.Value != "" || out.Found {
			return fmt.Sprintf("%s read -> %q", in.Resource, out.Value)
		}
		return fmt.Sprintf("%s read -> mark %d, last %d", in.Resource, out.Token, out.Last)
	}
	return "?"
}

// Check checks history against model. When the history is not
// linearizable it writes porcupine's visualization of it to an HTML file
// and returns that file's path. A timeout of 0 means none; when it runs
// out the result is porcupine.Unknown.
func Check(model porcupine.Model, history []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, string) {
	res := porcupine.CheckOperationsTimeout(model, history, timeout)
	if res != porcupine.Illegal {
		return res, ""
	}
	_, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	dir, err := os.MkdirTemp("", "fenceview-linearizability-")
	if err != nil {
		return res, ""
	}
	path := filepath.Join(dir, "history.html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return res, ""
	}
	return res, path
}

// Recorder collects a history from concurrent clients. Timestamps are
// monotonic nanoseconds since the recorder was made.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Len is the number of operations recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Now is the timestamp to take just before an operation is sent.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add records an operation invoked at call that has just returned out.
func (r *Recorder) Add(client int, in Input, call int64, out Output) { r.add(client, in, call, out) }

func (r *Recorder) add(client int, in any, call int64, out any) {
	ret := r.Now()
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
}

// History returns the operations recorded so far, by call time.
func (r *Recorder) History() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := slices.Clone(r.ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return ops
}

// ProvablyStale returns the indexes of the refused writes in history that
// were invoked after an accepted write of a larger token on the same
// resource had returned. Reporting any of them as accepted makes the
// history non-linearizable under either model, whatever else happened
// concurrently: the checker's tests flip one to show that it can fail.
func ProvablyStale(history []porcupine.Operation) []int {
	// Per resource, the accepted writes by return time with the running
	// maximum of their tokens: the largest token known applied before an
	// instant is one binary search away.
	type applied struct{ ret, maxToken int64 }
	byRes := map[string][]applied{}
	for _, op := range history {
		in, o := op.Input.(Input), op.Output.(Output)
		if in.Kind == Write && o.Accepted {
			byRes[in.Resource] = append(byRes[in.Resource], applied{ret: op.Return, maxToken: in.Token})
		}
	}
	for _, list := range byRes {
		slices.SortFunc(list, func(a, b applied) int { return cmp.Compare(a.ret, b.ret) })
		for i := 1; i < len(list); i++ {
			list[i].maxToken = max(list[i].maxToken, list[i-1].maxToken)
		}
	}
	var out []int
	for i, op := range history {
		in, o := op.Input.(Input), op.Output.(Output)
		if in.Kind != Write || o.Accepted {
			continue
		}
		list := byRes[in.Resource]
		// The accepted writes that returned strictly before this call.
		n, _ := slices.BinarySearchFunc(list, op.Call, func(a applied, t int64) int { return cmp.Compare(a.ret, t) })
		if n > 0 && list[n-1].maxToken > in.Token {
			out = append(out, i)
		}
	}
	return out
}

// Accept returns a copy of history in which the write at index i is
// reported as accepted: a fabricated history for the checker's tests.
func Accept(history []porcupine.Operation, i int) []porcupine.Operation {
	h := slices.Clone(history)
	h[i].Output = Output{Accepted: true}
	return h
}
