package proof

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func rlock(h string) Call   { return Call{Op: OpAcquire, Holder: h, Shared: true} }
func runlock(h string) Call { return Call{Op: OpRelease, Holder: h, Shared: true} }
func wlock(h string) Call   { return Call{Op: OpAcquire, Holder: h} }
func wunlock(h string) Call { return Call{Op: OpRelease, Holder: h} }
func tok(t int64) Result    { return Result{OK: true, Tokens: []int64{t}} }

var released = Result{OK: true}

func TestRWLockModel(t *testing.T) {
	m := RWLockModel()
	var ab [ModelSlots]Holding
	ab[0], ab[1] = Holding{"a", 1}, Holding{"b", 1}
	for _, tc := range []modelCase{
		{"readers share a phase, a writer waits, the next phase is above it", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(1, rlock("b"), 2, tok(1), 3),
			op(2, wlock("w"), 4, refused, 5),
			op(3, Call{Op: OpRead}, 6, Result{Held: ab, Token: 1}, 7),
			op(0, runlock("a"), 8, released, 9),
			op(1, runlock("b"), 10, released, 11),
			op(2, wlock("w"), 12, tok(2), 13),
			op(0, rlock("a"), 14, refused, 15),
			op(2, wunlock("w"), 16, released, 17),
			op(0, rlock("a"), 18, tok(3), 19),
			op(0, rlock("a"), 20, tok(3), 21), // re-entrant: the same token
		}, porcupine.Ok},
		{"a writer overlapping a reader", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(1, wlock("w"), 2, tok(2), 3),
		}, porcupine.Illegal},
		{"a reader overlapping a writer", m, []porcupine.Operation{
			op(0, wlock("w"), 0, tok(1), 1),
			op(1, rlock("a"), 2, tok(1), 3),
		}, porcupine.Illegal},
		{"two readers of one phase with two tokens", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(1, rlock("b"), 2, tok(2), 3),
		}, porcupine.Illegal},
		{"a new phase that does not go up", m, []porcupine.Operation{
			op(0, wlock("w"), 0, tok(1), 1),
			op(0, wunlock("w"), 2, released, 3),
			op(1, rlock("a"), 4, tok(1), 5),
		}, porcupine.Illegal},
		{"a reader refused with nobody writing", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(1, rlock("b"), 2, refused, 3),
		}, porcupine.Illegal},
		{"an upgrade", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(0, wlock("a"), 2, tok(2), 3),
		}, porcupine.Illegal},
		{"concurrent: a writer and a reader, either first", m, []porcupine.Operation{
			op(0, wlock("w"), 0, tok(2), 10),
			op(1, rlock("a"), 1, tok(1), 2),
			op(1, runlock("a"), 3, released, 4),
		}, porcupine.Ok},
		// A kill hid the outcome of b's shared acquire, and of b's
		// exclusive one next; the release after the latter gives up the
		// shared hold the former took: a release names no mode.
		{"a release sent in the other mode gives up the hold left", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(1, rlock("b"), 2, Result{Unknown: true}, 100),
			op(1, wlock("b"), 3, Result{Unknown: true}, 100),
			op(1, wunlock("b"), 4, released, 5),
			op(2, Call{Op: OpRead}, 6, Result{Held: [ModelSlots]Holding{{"a", 1}}, Token: 1}, 7),
		}, porcupine.Ok},
		{"a writer's hold given up by a release sent in shared mode", m, []porcupine.Operation{
			op(0, wlock("w"), 0, tok(1), 1),
			op(0, runlock("w"), 2, released, 3),
			op(1, rlock("a"), 4, tok(2), 5),
		}, porcupine.Ok},
		{"a release refused while its holder holds", m, []porcupine.Operation{
			op(0, rlock("a"), 0, tok(1), 1),
			op(0, wunlock("a"), 2, refused, 3),
		}, porcupine.Illegal},
		{"an unknown shared acquire that took a hold", m, []porcupine.Operation{
			op(0, rlock("a"), 0, Result{Unknown: true}, 100),
			op(1, wlock("w"), 2, refused, 3),
		}, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res, _ := porcupine.CheckOperationsVerbose(tc.model, tc.history, 0); res != tc.want {
				t.Fatalf("%v, want %v", res, tc.want)
			}
		})
	}
}
