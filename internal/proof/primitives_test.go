package proof

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func acq(h string) Call                 { return Call{Op: OpAcquire, Holder: h} }
func rel(h string, slot int) Call       { return Call{Op: OpRelease, Holder: h, Slot: slot} }
func slot(s int, token int64) Result    { return Result{OK: true, Slot: s, Tokens: []int64{token}} }
func lockAll(h string, l ...int) Call   { return Call{Op: OpAcquire, Holder: h, Locks: l} }
func unlockAll(h string, l ...int) Call { return Call{Op: OpRelease, Holder: h, Locks: l} }
func readLock(l int) Call               { return Call{Op: OpRead, Locks: []int{l}} }
func campaign(c, v string) Call         { return Call{Op: OpAcquire, Holder: c, Value: v} }
func leader(c string, term int64, v string) Result {
	return Result{OK: true, Holder: c, Token: term, Value: v}
}

var refused = Result{}

func TestPrimitiveModels(t *testing.T) {
	two := SemaphoreModel(2)
	multi := MultiLockModel()
	election := ElectionModel()
	var held2 [ModelSlots]Holding
	held2[0], held2[1] = Holding{"a", 1}, Holding{"b", 1}
	for _, tc := range []modelCase{
		{"semaphore: two permits, a third refused", two, []porcupine.Operation{
			op(0, acq("a"), 0, slot(0, 1), 1),
			op(1, acq("b"), 2, slot(1, 1), 3),
			op(2, acq("c"), 4, refused, 5),
			op(3, Call{Op: OpRead}, 6, Result{Held: held2}, 7),
			op(0, rel("a", 0), 8, Result{OK: true}, 9),
			op(2, acq("c"), 10, slot(0, 2), 11),
		}, porcupine.Ok},
		{"semaphore: a third holder", two, []porcupine.Operation{
			op(0, acq("a"), 0, slot(0, 1), 1),
			op(1, acq("b"), 2, slot(1, 1), 3),
			op(2, acq("c"), 4, slot(0, 2), 5),
		}, porcupine.Illegal},
		{"semaphore: not the lowest free slot", two, []porcupine.Operation{
			op(0, acq("a"), 0, slot(1, 1), 1),
		}, porcupine.Illegal},
		{"semaphore: a slot's token repeated", two, []porcupine.Operation{
			op(0, acq("a"), 0, slot(0, 1), 1),
			op(0, rel("a", 0), 2, Result{OK: true}, 3),
			op(1, acq("b"), 4, slot(0, 1), 5),
		}, porcupine.Illegal},
		{"semaphore: a release by another holder", two, []porcupine.Operation{
			op(0, acq("a"), 0, slot(0, 1), 1),
			op(1, rel("b", 0), 2, Result{OK: true}, 3),
		}, porcupine.Illegal},
		{"semaphore: an unknown acquire took the slot", two, []porcupine.Operation{
			op(0, acq("a"), 0, Result{Unknown: true}, 1000),
			op(1, acq("b"), 2, slot(1, 1), 3),
		}, porcupine.Ok},

		{"multi-lock: a set, then a conflicting one refused naming the lock", multi, []porcupine.Operation{
			op(0, lockAll("a", 0, 1), 0, Result{OK: true, Tokens: []int64{1, 1}}, 1),
			op(1, lockAll("b", 1, 2), 2, Result{Locks: []int{1}}, 3),
			op(2, readLock(2), 4, Result{Token: 0}, 5),
			op(0, unlockAll("a", 0, 1, 2), 6, Result{OK: true, Locks: []int{0, 1}}, 7),
			op(1, lockAll("b", 1, 2), 8, Result{OK: true, Tokens: []int64{2, 1}}, 9),
		}, porcupine.Ok},
		{"multi-lock: a reader sees half a set", multi, []porcupine.Operation{
			op(0, lockAll("a", 0, 1), 0, Result{OK: true, Tokens: []int64{1, 1}}, 10),
			op(1, readLock(0), 1, Result{Holder: "a", Token: 1}, 2),
			op(1, readLock(1), 3, Result{}, 4),
		}, porcupine.Illegal},
		{"multi-lock: a refusal that took a lock", multi, []porcupine.Operation{
			op(0, lockAll("a", 1), 0, Result{OK: true, Tokens: []int64{1}}, 1),
			op(1, lockAll("b", 0, 1), 2, Result{Locks: []int{1}}, 3),
			op(2, readLock(0), 4, Result{Holder: "b", Token: 1}, 5),
		}, porcupine.Illegal},
		{"multi-lock: refused naming a free lock", multi, []porcupine.Operation{
			op(0, lockAll("a", 1), 0, Result{OK: true, Tokens: []int64{1}}, 1),
			op(1, lockAll("b", 0, 1), 2, Result{Locks: []int{0, 1}}, 3),
		}, porcupine.Illegal},

		{"election: terms rise, the leader proclaims, others are refused", election, []porcupine.Operation{
			op(0, campaign("a", "v1"), 0, leader("a", 1, "v1"), 1),
			op(1, campaign("b", "w1"), 2, Result{Holder: "a", Token: 1}, 3),
			op(1, Call{Op: OpProclaim, Holder: "b", Value: "w2"}, 4, refused, 5),
			op(0, Call{Op: OpProclaim, Holder: "a", Value: "v2"}, 6, Result{OK: true, Token: 1, Value: "v2"}, 7),
			op(2, Call{Op: OpRead}, 8, Result{Holder: "a", Token: 1, Value: "v2"}, 9),
			op(0, Call{Op: OpRelease, Holder: "a"}, 10, Result{OK: true, Token: 1}, 11),
			op(1, campaign("b", "w3"), 12, leader("b", 2, "w3"), 13),
		}, porcupine.Ok},
		{"election: two leaders of one term", election, []porcupine.Operation{
			op(0, campaign("a", "v"), 0, leader("a", 1, "v"), 1),
			op(1, campaign("b", "w"), 2, leader("b", 1, "w"), 3),
		}, porcupine.Illegal},
		{"election: a term reused after a resignation", election, []porcupine.Operation{
			op(0, campaign("a", "v"), 0, leader("a", 1, "v"), 1),
			op(0, Call{Op: OpRelease, Holder: "a"}, 2, Result{OK: true, Token: 1}, 3),
			op(1, campaign("b", "w"), 4, leader("b", 1, "w"), 5),
		}, porcupine.Illegal},
		{"election: a reader sees a stale value", election, []porcupine.Operation{
			op(0, campaign("a", "v1"), 0, leader("a", 1, "v1"), 1),
			op(0, Call{Op: OpProclaim, Holder: "a", Value: "v2"}, 2, Result{OK: true, Token: 1, Value: "v2"}, 3),
			op(2, Call{Op: OpRead}, 4, Result{Holder: "a", Token: 1, Value: "v1"}, 5),
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(tc.model, tc.history); got != (tc.want == porcupine.Ok) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckMultiStream(t *testing.T) {
	id := func(i int) string { return string(rune('a' + i)) }
	history := []porcupine.Operation{
		op(0, lockAll("m", 0, 1), 0, Result{OK: true, Tokens: []int64{1, 1}}, 1),
		op(0, unlockAll("m", 0, 1), 2, Result{OK: true, Locks: []int{0, 1}}, 3),
	}
	good := []StreamEvent{
		{Seq: 1, Type: "grant", ResourceID: "a", Holder: "m", Token: 1},
		{Seq: 2, Type: "grant", ResourceID: "b", Holder: "m", Token: 1},
		{Seq: 3, Type: "release", ResourceID: "a"},
		{Seq: 4, Type: "release", ResourceID: "b"},
	}
	if err := CheckMultiStream(good, history, id); err != nil {
		t.Fatal(err)
	}
	for name, events := range map[string][]StreamEvent{
		"split": {good[0], {Seq: 2, Type: "grant", ResourceID: "c", Holder: "x", Token: 1}, good[1], good[2], good[3]},
		"lost":  {good[0], good[2], good[3]},
		"held":  {{Seq: 0, Type: "grant", ResourceID: "a", Holder: "x", Token: 9}, good[0], good[1], good[2], good[3]},
	} {
		if err := CheckMultiStream(events, history, id); err == nil {
			t.Errorf("%s: the check passed", name)
		}
	}
}

func TestCheckElectionStream(t *testing.T) {
	history := []porcupine.Operation{
		op(0, campaign("a", "v1"), 0, leader("a", 1, "v1"), 1),
		op(0, Call{Op: OpProclaim, Holder: "a", Value: "v2"}, 2, Result{OK: true, Token: 1, Value: "v2"}, 3),
		op(0, Call{Op: OpRelease, Holder: "a"}, 4, Result{OK: true, Token: 1}, 5),
		op(1, campaign("b", "w1"), 6, leader("b", 2, "w1"), 7),
	}
	good := []StreamEvent{
		{Seq: 1, Type: "grant", Holder: "a", Token: 1, Value: "v1"},
		{Seq: 2, Type: "proclaim", Holder: "a", Token: 1, Value: "v2"},
		{Seq: 3, Type: "release", Holder: "a", Token: 1},
		{Seq: 4, Type: "grant", Holder: "b", Token: 2, Value: "w1"},
	}
	if err := CheckElectionStream(good, history); err != nil {
		t.Fatal(err)
	}
	for name, events := range map[string][]StreamEvent{
		"out of order":    {good[0], good[2], good[1], good[3]},
		"a lost proclaim": {good[0], good[2], good[3]},
		"two leaders":     {good[0], good[1], good[3], good[2]},
		"term repeated":   {good[0], good[1], good[2], {Seq: 4, Type: "grant", Holder: "b", Token: 1, Value: "w1"}},
	} {
		err := CheckElectionStream(events, history)
		if err == nil {
			t.Errorf("%s: the check passed", name)
		} else if testing.Verbose() {
			t.Logf("%s: %v", name, strings.TrimSpace(err.Error()))
		}
	}
}
