// Package wire holds the pieces of fenceview's wire format that more than
// one end speaks: the time layout of every JSON time and the line framing
// of the RPC stream (GET /v1/rpc), where one websocket message carries
// several JSON objects, one per line.
package wire

import (
	"bytes"
	"io"
	"time"
)

// TimeLayout is RFC 3339 in UTC with milliseconds, as the contract writes
// times.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in UTC with TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// MaxBatch bounds the bytes a writer gathers into one message; a longer
// queue goes out in several.
const MaxBatch = 64 << 10

// Lines calls fn with each non-blank line of msg, in order, until fn
// returns false.
func Lines(msg []byte, fn func(line []byte) bool) {
	for len(msg) > 0 {
		var line []byte
		if i := bytes.IndexByte(msg, '\n'); i >= 0 {
			line, msg = msg[:i], msg[i+1:]
		} else {
			line, msg = msg, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !fn(line) {
			return
		}
	}
}

// Batch returns buf (reused) holding first and then every item already
// waiting on more, one per line, up to MaxBatch bytes. It never blocks; a
// closed more ends the batch.
func Batch(buf, first []byte, more <-chan []byte) []byte {
	buf = append(buf[:0], first...)
	for len(buf) < MaxBatch {
		select {
		case b, ok := <-more:
			if !ok {
				return buf
			}
			buf = append(append(buf, '\n'), b...)
		default:
			return buf
		}
	}
	return buf
}

// ReadAll appends what r holds to buf[:0] and returns it: a message read
// into the buffer of the last one (io.ReadAll allocates anew, growing,
// every time).
func ReadAll(r io.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
