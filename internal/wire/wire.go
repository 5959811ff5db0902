// Package wire is fenceview's wire: every message of the RPC stream
// (GET /v1/rpc), its ops and line framing, the bodies of the JSON API's
// locks, grants, fenced writes, resources, rejections and events, of
// semaphores, multi-locks and elections, of API and signing
// keys, the time layout of every JSON time, and the codec both ends use.
// The codec writes what encoding/json writes and reads what it reads,
// byte for byte, without reflection on the busiest paths; the fuzz tests
// hold it to encoding/json, and TestBodiesMatchOpenAPI to internal/api/openapi.yaml.
// The one body not here is a fenced write's refusal, httpguard.Refusal:
// resources write it with guard/httpguard, without the server.
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
// queue goes out in several (SplitBatch).
const MaxBatch = 64 << 10

// SplitBatch cuts lines (one message's worth, one per line) at a line
// end so that msg stays within MaxBatch bytes, unless its first line alone
// is longer; rest is what is left for the next message.
func SplitBatch(lines []byte) (msg, rest []byte) {
	if len(lines) <= MaxBatch {
		return lines, nil
	}
	i := bytes.LastIndexByte(lines[:MaxBatch+1], '\n')
	if i < 0 {
		i = bytes.IndexByte(lines, '\n')
		if i < 0 {
			return lines, nil
		}
	}
	return lines[:i], lines[i+1:]
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
