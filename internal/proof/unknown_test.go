package proof

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// An operation with an unknown outcome may have happened or not; nothing
// else is relaxed.
func TestFenceModelUnknown(t *testing.T) {
	m := FenceModelUnknown.ToModel()
	build := func(steps func(r *Recorder)) []porcupine.Operation {
		r := NewRecorder()
		steps(r)
		return r.History()
	}
	grant := Input{Resource: "r", Kind: Grant}
	read := Input{Resource: "r", Kind: Read}
	cases := []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"a lost grant took a token", build(func(r *Recorder) {
			r.AddUnknown(grant, r.Now())
			r.Add(0, grant, r.Now(), Output{Token: 2})
		}), true},
		{"a lost grant took none", build(func(r *Recorder) {
			r.AddUnknown(grant, r.Now())
			r.Add(0, grant, r.Now(), Output{Token: 1})
		}), true},
		{"a lost grant takes one token, not two", build(func(r *Recorder) {
			r.AddUnknown(grant, r.Now())
			r.Add(0, grant, r.Now(), Output{Token: 3})
		}), false},
		{"a lost write raised the mark", build(func(r *Recorder) {
			r.Add(0, grant, r.Now(), Output{Token: 1})
			r.AddUnknown(Input{Resource: "r", Kind: Write, Token: 1}, r.Now())
			r.Add(0, read, r.Now(), Output{Token: 1, Last: 1})
		}), true},
		{"a mark nobody wrote", build(func(r *Recorder) {
			r.Add(0, grant, r.Now(), Output{Token: 1})
			r.Add(0, read, r.Now(), Output{Token: 1, Last: 1})
		}), false},
		{"a lost stale write cannot land", build(func(r *Recorder) {
			r.Add(0, grant, r.Now(), Output{Token: 1})
			r.Add(0, grant, r.Now(), Output{Token: 2})
			r.Add(0, Input{Resource: "r", Kind: Write, Token: 2}, r.Now(), Output{Accepted: true})
			r.AddUnknown(Input{Resource: "r", Kind: Write, Token: 1}, r.Now())
			r.Add(0, read, r.Now(), Output{Token: 1, Last: 2})
		}), false},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(m, c.ops); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.legal)
		}
	}
}
