package wire

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestLinesSkipBlankAndStopWhenAsked(t *testing.T) {
	var got []string
	Lines([]byte("a\n\n  \nb\nc"), func(l []byte) bool { got = append(got, string(l)); return len(got) < 2 })
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("lines = %q", got)
	}
}

// SplitBatch cuts at line ends only, within MaxBatch unless one line
// alone is longer, and loses nothing.
func TestSplitBatch(t *testing.T) {
	long := bytes.Repeat([]byte("x"), MaxBatch+10)
	line := bytes.Repeat([]byte("y"), 1000)
	var many []byte
	for range 200 {
		many = append(append(many, line...), '\n')
	}
	many = many[:len(many)-1]
	for _, in := range [][]byte{
		[]byte("a"), many, long,
		append(append(append([]byte{}, long...), '\n'), "b"...),
		append(append([]byte("b\n"), long...), "\nc"...),
	} {
		var got [][]byte
		for msg, rest := in, []byte(nil); len(msg) > 0; msg = rest {
			msg, rest = SplitBatch(msg)
			if len(msg) > MaxBatch && bytes.IndexByte(msg, '\n') >= 0 {
				t.Fatalf("a message of %d bytes with several lines", len(msg))
			}
			got = append(got, msg)
		}
		if !bytes.Equal(bytes.Join(got, []byte("\n")), in) {
			t.Fatalf("split of %d bytes does not join back", len(in))
		}
	}
}

func TestFormatTime(t *testing.T) {
	at := time.Date(2026, 9, 24, 8, 14, 22, 5e6, time.FixedZone("CEST", 2*3600))
	if got := FormatTime(at); got != "2026-09-24T06:14:22.005Z" {
		t.Fatalf("FormatTime = %s", got)
	}
}

// ReadAll reads every byte, however the reader splits them, into the
// reused buffer, and passes errors on.
func TestReadAll(t *testing.T) {
	var buf []byte
	for _, s := range []string{strings.Repeat("long message ", 1000), "short", ""} {
		got, err := ReadAll(iotest.HalfReader(strings.NewReader(s)), buf)
		if err != nil || string(got) != s {
			t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(s))
		}
		buf = got
	}
	if _, err := ReadAll(iotest.ErrReader(io.ErrUnexpectedEOF), buf); err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want the reader's", err)
	}
}
