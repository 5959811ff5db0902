package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/wire"
)

// The writer takes every pending answer at once, however many: it sends
// them in messages of at most wire.MaxBatch bytes, cut at line ends, and
// none is lost or cut.
func TestRPCPendingAnswersSplitAtLines(t *testing.T) {
	var lines [][]byte
	for i := range 300 { // of ~450 bytes each: two MaxBatch and some
		lines = append(lines, wire.AppendAnswer(nil, uint64(i+1), http.StatusOK,
			map[string]any{"error": fmt.Sprintf("%d %s", i, strings.Repeat("x", 400))}))
	}
	lines = append(lines, wire.AppendAnswer(nil, 999, http.StatusOK, map[string]any{"error": strings.Repeat("y", wire.MaxBatch+10)}))
	all := bytes.Join(lines, []byte{'\n'})
	c := dialHandler(t, func(w http.ResponseWriter, r *http.Request) {
		conn, err := rpcUpgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		out := &rpcOut{conn: conn}
		out.mu.Lock()
		out.sendLines(bytes.Clone(all))
		out.mu.Unlock()
		conn.ReadMessage() // until the client leaves
	})
	var got [][]byte
	messages := 0
	for len(got) < len(lines) {
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("after %d answers: %v", len(got), err)
		}
		messages++
		n := bytes.Count(msg, []byte{'\n'}) + 1
		if len(msg) > wire.MaxBatch && n > 1 {
			t.Fatalf("message %d: %d bytes in %d answers, over wire.MaxBatch (%d)", messages, len(msg), n, wire.MaxBatch)
		}
		got = append(got, bytes.Split(msg, []byte{'\n'})...)
	}
	if !bytes.Equal(bytes.Join(got, []byte{'\n'}), all) {
		t.Fatal("the answers read are not the answers sent, in order")
	}
	if messages < 4 { // two full ones, the rest, and the long answer alone
		t.Fatalf("%d messages, want at least 4", messages)
	}
}
