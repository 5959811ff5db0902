package proof

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// What an observer of the event stream (/v1/events) must see of the
// primitives, checked against the operations the clients were answered.

// StreamEvent is one event of the stream, as the checks need it.
type StreamEvent struct {
	Seq        int64
	Type       string
	ResourceID string
	Holder     string
	Token      int64
	Value      string
}

// CheckMultiStream checks the stream's events of a multi-lock workload
// (lock i is lockID(i)) against its history: replayed in order, no event
// grants a lock another holder holds; every multi-lock granted to a
// client has its grants in the stream, in the order asked and adjacent,
// with nothing between them, so no observer sees part of a set; every
// release a client was told of is there; and, when no outcome is unknown,
// the stream has no grant nobody was answered.
func CheckMultiStream(events []StreamEvent, history []porcupine.Operation, lockID func(int) string) error {
	type key struct {
		res   string
		token int64
	}
	at := map[key]int{} // a grant event's index
	holder := map[string]string{}
	holds := map[string]int{}
	releases := map[string]int{} // release events per resource
	for i, e := range events {
		switch e.Type {
		case "grant":
			if h := holder[e.ResourceID]; h != "" && h != e.Holder {
				return fmt.Errorf("event %d grants %s (token %d) to %s while %s holds it", e.Seq, e.ResourceID, e.Token, e.Holder, h)
			}
			holder[e.ResourceID] = e.Holder
			holds[e.ResourceID]++
			at[key{e.ResourceID, e.Token}] = i
		case "release":
			if holds[e.ResourceID]--; holds[e.ResourceID] <= 0 {
				holds[e.ResourceID], holder[e.ResourceID] = 0, ""
			}
			releases[e.ResourceID]++
		case "expire":
			holds[e.ResourceID], holder[e.ResourceID] = 0, ""
		}
	}
	granted, released := 0, map[string]int{}
	unknown := false
	for _, op := range history {
		in, out := op.Input.(Call), op.Output.(Result)
		if out.Unknown {
			unknown = true
			continue
		}
		if !out.OK {
			continue
		}
		switch in.Op {
		case OpAcquire:
			first := -1
			for j, l := range in.Locks {
				i, ok := at[key{lockID(l), out.Tokens[j]}]
				switch {
				case !ok:
					return fmt.Errorf("the grant of %s (token %d) to %s is not in the stream", lockID(l), out.Tokens[j], in.Holder)
				case j == 0:
					first = i
				case i != first+j:
					return fmt.Errorf("the grants of %s's multi-lock %v are not adjacent in the stream (event %d after %d)",
						in.Holder, in.Locks, events[i].Seq, events[first].Seq)
				}
				if events[i].Holder != in.Holder {
					return fmt.Errorf("event %d grants %s to %s, the client was told %s", events[i].Seq, lockID(l), events[i].Holder, in.Holder)
				}
			}
			granted += len(in.Locks)
		case OpRelease:
			for _, l := range out.Locks {
				released[lockID(l)]++
			}
		}
	}
	for res, n := range released {
		if releases[res] < n {
			return fmt.Errorf("%s: %d releases told, %d in the stream", res, n, releases[res])
		}
	}
	if !unknown && len(at) != granted {
		return fmt.Errorf("the stream has %d grants, the clients were told of %d", len(at), granted)
	}
	return nil
}

// CheckElectionStream checks the stream's events of one election against
// its history: replayed in order, a term is granted only when nobody
// leads and only above every earlier term; a proclaim comes from the
// leader of the current term; every change a client was told of (a new
// term, a value proclaimed, a resignation) is in the stream, in an order
// that keeps the order in which the clients saw them; and, when no
// outcome is unknown, there is no change nobody was told of. Values must
// be unique per change, so that each proclaim names its operation.
func CheckElectionStream(events []StreamEvent, history []porcupine.Operation) error {
	type change struct {
		kind  string
		term  int64
		value string
	}
	at := map[change]int{}
	var leader, value string
	var term, last int64
	for i, e := range events {
		var c change
		switch e.Type {
		case "grant":
			if leader != "" {
				return fmt.Errorf("event %d: term %d granted to %s while %s leads term %d", e.Seq, e.Token, e.Holder, leader, term)
			}
			if e.Token <= last {
				return fmt.Errorf("event %d: term %d after term %d", e.Seq, e.Token, last)
			}
			leader, term, last, value = e.Holder, e.Token, e.Token, e.Value
			c = change{"grant", term, value}
		case "proclaim":
			if leader == "" || e.Token != term {
				return fmt.Errorf("event %d: a proclaim of term %d while %q leads term %d", e.Seq, e.Token, leader, term)
			}
			value = e.Value
			c = change{"proclaim", term, value}
		case "release", "expire":
			if leader == "" {
				continue // a release of nothing: not a change
			}
			c = change{"resign", term, ""}
			leader = ""
		default:
			continue
		}
		if _, dup := at[c]; dup {
			return fmt.Errorf("event %d repeats %v", e.Seq, c)
		}
		at[c] = i
	}
	type told struct {
		idx       int
		call, ret int64
	}
	var changes []told
	unknown := false
	for _, op := range history {
		in, out := op.Input.(Call), op.Output.(Result)
		if out.Unknown {
			unknown = true
		}
		if out.Unknown || !out.OK {
			continue
		}
		var c change
		switch in.Op {
		case OpAcquire:
			c = change{"grant", out.Token, in.Value}
			if _, ok := at[c]; !ok { // a campaign by the leader proclaims
				c.kind = "proclaim"
			}
		case OpProclaim:
			c = change{"proclaim", out.Token, in.Value}
		case OpRelease:
			c = change{"resign", out.Token, ""}
		default:
			continue
		}
		i, ok := at[c]
		if !ok {
			return fmt.Errorf("%s by %s (term %d, value %q) is not in the stream", in.Op, in.Holder, out.Token, in.Value)
		}
		changes = append(changes, told{i, op.Call, op.Return})
	}
	for _, a := range changes {
		for _, b := range changes {
			if a.ret < b.call && a.idx > b.idx {
				return fmt.Errorf("the stream has event %d before event %d, whose change was answered first", events[b.idx].Seq, events[a.idx].Seq)
			}
		}
	}
	if !unknown && len(changes) != len(at) {
		return fmt.Errorf("the stream has %d changes, the clients were told of %d", len(at), len(changes))
	}
	return nil
}
