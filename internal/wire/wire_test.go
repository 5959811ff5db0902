package wire

import (
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

func TestBatchTakesWhatWaitsAndStopsAtTheBound(t *testing.T) {
	more := make(chan []byte, 3)
	more <- []byte("b")
	more <- []byte("c")
	if got := string(Batch(nil, []byte("a"), more)); got != "a\nb\nc" {
		t.Fatalf("batch = %q", got)
	}
	big := make([]byte, MaxBatch)
	more <- []byte("next")
	if got := Batch(nil, big, more); len(got) != MaxBatch {
		t.Fatalf("batch over the bound: %d bytes", len(got))
	}
	if len(more) != 1 {
		t.Fatal("an item past the bound was taken")
	}
	close(more)
	<-more
	if got := string(Batch(nil, []byte("z"), more)); got != "z" {
		t.Fatalf("batch on a closed queue = %q", got)
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
