package b64url

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// Decode accepts exactly the texts of EncodedLen(n) characters that
// RawURLEncoding.Strict decodes to n bytes, with the same bytes: the guards'
// decoders check the length first, so the line breaks encoding/base64 skips
// never reach it.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"", "AA", "AB", "_-8", "AAAA", "AAA=", "A+/A",
		base64.RawURLEncoding.EncodeToString(make([]byte, 32)),
		base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 64)),
	} {
		f.Add(s, len(s)*6/8)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		got := Decode(s, n)
		want, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil || len(want) != n || len(s) != base64.RawURLEncoding.EncodedLen(n) {
			if got != nil {
				t.Fatalf("Decode(%q, %d) = %x, encoding/base64 refuses it (%v, %d bytes)", s, n, got, err, len(want))
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Decode(%q, %d) = %x, want %x", s, n, got, want)
		}
	})
}
