package proof

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"
)

// op builds an operation over [call, ret]: in and out are a model's
// input and output (Input and Output, or Call and Result).
func op(client int, in any, call int64, out any, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// modelCase is a history and what porcupine must say of it under model.
type modelCase struct {
	name    string
	model   porcupine.Model
	history []porcupine.Operation
	want    porcupine.CheckResult
}

func grant(r string) Input          { return Input{Resource: r, Kind: Grant} }
func write(r string, t int64) Input { return Input{Resource: r, Kind: Write, Token: t} }
func put(r string, t int64, v string) Input {
	return Input{Resource: r, Kind: Write, Token: t, Value: v}
}
func read(r string) Input { return Input{Resource: r, Kind: Read} }

var (
	ok = Output{Accepted: true}
)

func stale(required int64) Output { return Output{Reason: ReasonStale, Required: required} }
func issued(t int64) Output       { return Output{Token: t} }

func TestModels(t *testing.T) {
	for _, tc := range []modelCase{
		{
			// The paused client's story, told truthfully.
			name:  "stale write refused after a newer one",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(1, grant("r"), 2, issued(2), 3),
				op(1, write("r", 2), 4, ok, 5),
				op(0, write("r", 1), 6, stale(2), 7),
				op(2, read("r"), 8, Output{Token: 2, Last: 2}, 9),
			},
			want: porcupine.Ok,
		},
		{
			// The negative self-test: a stale write reported accepted after
			// a newer one had been applied.
			name:  "stale write accepted after a newer one",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(1, grant("r"), 2, issued(2), 3),
				op(1, write("r", 2), 4, ok, 5),
				op(0, write("r", 1), 6, ok, 7),
			},
			want: porcupine.Illegal,
		},
		{
			// Concurrent writes may be ordered either way: the refusal says
			// token 2 came first.
			name:  "concurrent writes, the refusal orders them",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(1, grant("r"), 2, issued(2), 3),
				op(0, write("r", 1), 4, stale(2), 10),
				op(1, write("r", 2), 5, ok, 9),
			},
			want: porcupine.Ok,
		},
		{
			name:  "a write at the mark refused",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(0, write("r", 1), 2, ok, 3),
				op(0, write("r", 1), 4, stale(1), 5),
			},
			want: porcupine.Illegal,
		},
		{
			name:  "a refusal naming the wrong mark",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(0, grant("r"), 2, issued(2), 3),
				op(0, grant("r"), 4, issued(3), 5),
				op(0, write("r", 2), 6, ok, 7),
				op(0, write("r", 1), 8, stale(3), 9),
			},
			want: porcupine.Illegal,
		},
		{
			name:  "a token issued twice",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(1, grant("r"), 2, issued(1), 3),
			},
			want: porcupine.Illegal,
		},
		{
			name:  "a grant above the mark",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(0, write("r", 1), 2, ok, 3),
				op(0, grant("r"), 4, issued(2), 5),
				op(1, read("r"), 6, Output{Token: 1, Last: 2}, 7),
			},
			want: porcupine.Ok,
		},
		{
			name:  "a read of a mark that went backwards",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(0, grant("r"), 2, issued(2), 3),
				op(0, write("r", 2), 4, ok, 5),
				op(1, read("r"), 6, Output{Token: 1, Last: 2}, 7),
			},
			want: porcupine.Illegal,
		},
		{
			name:  "an unissued token",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("r"), 0, issued(1), 1),
				op(0, write("r", 9), 2, Output{Reason: ReasonUnissued}, 3),
				op(0, write("r", 1), 4, ok, 5),
			},
			want: porcupine.Ok,
		},
		{
			name:  "resources are independent",
			model: FenceModel,
			history: []porcupine.Operation{
				op(0, grant("a"), 0, issued(1), 1),
				op(1, grant("b"), 0, issued(1), 1),
				op(0, write("a", 1), 2, ok, 3),
				op(1, write("b", 1), 2, ok, 3),
			},
			want: porcupine.Ok,
		},
		{
			name:  "value store: the newer value stays",
			model: KVModel,
			history: []porcupine.Operation{
				op(0, put("r", 1, "a"), 0, ok, 1),
				op(1, put("r", 2, "b"), 2, ok, 3),
				op(0, put("r", 1, "a2"), 4, stale(2), 5),
				op(2, read("r"), 6, Output{Value: "b", Found: true}, 7),
			},
			want: porcupine.Ok,
		},
		{
			// The negative self-test for values: a stale value visible
			// after a newer one.
			name:  "value store: a stale value visible after a newer one",
			model: KVModel,
			history: []porcupine.Operation{
				op(0, put("r", 1, "a"), 0, ok, 1),
				op(1, put("r", 2, "b"), 2, ok, 3),
				op(2, read("r"), 4, Output{Value: "a", Found: true}, 5),
			},
			want: porcupine.Illegal,
		},
		{
			name:  "value store: a stale write accepted",
			model: KVModel,
			history: []porcupine.Operation{
				op(0, put("r", 2, "b"), 0, ok, 1),
				op(1, put("r", 1, "a"), 2, ok, 3),
			},
			want: porcupine.Illegal,
		},
		{
			name:  "value store: equal tokens both land",
			model: KVModel,
			history: []porcupine.Operation{
				op(0, put("r", 2, "b"), 0, ok, 1),
				op(0, put("r", 2, "c"), 2, ok, 3),
				op(1, read("r"), 4, Output{Value: "c", Found: true}, 5),
			},
			want: porcupine.Ok,
		},
		{
			name:  "value store: nothing read before any write",
			model: KVModel,
			history: []porcupine.Operation{
				op(1, read("r"), 0, Output{}, 1),
				op(0, put("r", 1, "a"), 2, ok, 3),
			},
			want: porcupine.Ok,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, viz := Check(tc.model, tc.history, 0)
			if viz != "" {
				defer os.RemoveAll(filepath.Dir(viz))
			}
			if res != tc.want {
				t.Fatalf("porcupine says %v, want %v", res, tc.want)
			}
			if res == porcupine.Illegal && viz == "" {
				t.Fatal("no visualization written for an illegal history")
			}
		})
	}
}

func TestProvablyStale(t *testing.T) {
	h := []porcupine.Operation{
		op(0, put("r", 1, "a"), 0, ok, 1),
		op(1, put("r", 2, "b"), 2, ok, 3),
		op(2, put("r", 1, "x"), 2, stale(2), 4), // concurrent with the write of 2
		op(0, put("r", 1, "y"), 5, stale(2), 6), // after it
		op(0, put("q", 1, "z"), 5, stale(2), 6), // another resource
	}
	got := ProvablyStale(h)
	if len(got) != 1 || got[0] != 3 {
		t.Fatalf("ProvablyStale = %v, want [3]", got)
	}
	if res, viz := Check(KVModel, Accept(h[:4], 3), 0); res != porcupine.Illegal {
		t.Fatalf("flipping a provably stale write: %v", res)
	} else {
		os.RemoveAll(filepath.Dir(viz))
	}
}
