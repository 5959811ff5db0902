package proof

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// rwState is a lock with shared (read) and exclusive holds: the writer and
// its holds, the readers (oldest first, as the server lists them) and
// theirs, the live read phase's token and the last token issued.
type rwState struct {
	Writer      string
	WriterHolds int
	Readers     [ModelSlots]string
	ReaderHolds [ModelSlots]int
	Phase       int64
	Last        int64
}

func (s rwState) reader(h string) int {
	for i, r := range s.Readers {
		if r != "" && r == h {
			return i
		}
	}
	return -1
}

func (s rwState) readers() int {
	n := 0
	for n < ModelSlots && s.Readers[n] != "" {
		n++
	}
	return n
}

// RWLockModel is one lock taken in shared and exclusive mode, without
// waiting (a waiting acquire is first come, first served, which the
// admission queue's fuzz covers):
//
//   - an exclusive acquire is granted, with the token one above the last,
//     when nobody holds the lock or its holder holds it exclusively (a
//     re-entrant grant, a new token too); otherwise refused;
//   - a shared acquire is refused while a writer holds; otherwise granted,
//     with the live read phase's token when readers hold (the same
//     holder's again is one more hold), or the token one above the last,
//     beginning a phase;
//   - a release gives up one hold of its holder, in whichever mode it
//     holds (the server's release names no mode), the last reader's
//     ending the phase; anyone else's is refused;
//   - a read returns the writer, the readers and the last token.
//
// So no writer overlaps any hold, the readers of one phase share its
// token, and tokens of successive phases and writers strictly increase.
// A reader never waits behind nobody: a refused shared acquire needs a
// writer holding.
func RWLockModel() porcupine.Model {
	return primitiveModel(func(s rwState, in Call, out Result) []any {
		next := s
		switch {
		case in.Op == OpAcquire && in.Shared:
			i := s.reader(in.Holder)
			ok := s.Writer == "" && (i >= 0 || s.readers() < ModelSlots)
			token := s.Phase
			switch {
			case !ok:
			case i >= 0:
				next.ReaderHolds[i]++
			default:
				if s.readers() == 0 {
					next.Last++
					next.Phase = next.Last
					token = next.Last
				}
				n := s.readers()
				next.Readers[n], next.ReaderHolds[n] = in.Holder, 1
			}
			switch {
			case out.Unknown:
				return []any{s, when1(ok, next, s)}
			case !out.OK:
				return when(!ok && s.Writer != "", s)
			}
			return when(ok && len(out.Tokens) == 1 && out.Tokens[0] == token, next)
		case in.Op == OpAcquire:
			ok := s.readers() == 0 && (s.Writer == "" || s.Writer == in.Holder)
			if ok {
				next.Writer = in.Holder
				next.WriterHolds++
				next.Last++
			}
			switch {
			case out.Unknown:
				return []any{s, next}
			case !out.OK:
				return when(!ok, s)
			}
			return when(ok && len(out.Tokens) == 1 && out.Tokens[0] == next.Last, next)
		case in.Op == OpRelease:
			// A release names no mode (POST .../release takes a holder):
			// it gives up one hold of the holder in whichever mode it
			// holds, so a release sent in one mode gives up a hold left
			// from the other (an acquire whose outcome a kill hid).
			i := s.reader(in.Holder)
			mine := s.Writer != "" && s.Writer == in.Holder
			switch {
			case mine:
				if next.WriterHolds--; next.WriterHolds == 0 {
					next.Writer = ""
				}
			case i >= 0:
				if next.ReaderHolds[i]--; next.ReaderHolds[i] == 0 {
					copy(next.Readers[i:], next.Readers[i+1:])
					copy(next.ReaderHolds[i:], next.ReaderHolds[i+1:])
					next.Readers[ModelSlots-1], next.ReaderHolds[ModelSlots-1] = "", 0
					if next.readers() == 0 {
						next.Phase = 0
					}
				}
			}
			if out.Unknown {
				return []any{s, next}
			}
			return when(out.OK == (mine || i >= 0), next)
		case in.Op == OpRead:
			if out.Holder != s.Writer || out.Token != s.Last {
				return nil
			}
			for i := range ModelSlots {
				want := Holding{Holder: s.Readers[i]}
				if want.Holder != "" {
					want.Token = s.Phase
				}
				if out.Held[i] != want {
					return nil
				}
			}
			return []any{s}
		}
		return nil
	}, func(s rwState) string {
		if s.Writer != "" {
			return fmt.Sprintf("%s writes (%d holds), last token %d", s.Writer, s.WriterHolds, s.Last)
		}
		if n := s.readers(); n > 0 {
			return fmt.Sprintf("phase %d read by %s, last token %d", s.Phase, strings.Join(s.Readers[:n], ", "), s.Last)
		}
		return fmt.Sprintf("free, last token %d", s.Last)
	})
}
