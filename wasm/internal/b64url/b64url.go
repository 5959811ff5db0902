// Package b64url decodes the text form of keys and signatures in the
// WebAssembly modules: base64url without padding, as encoding/base64's
// RawURLEncoding.Strict decodes it, whose package would cost a module
// 16 KB.
package b64url

// Decode decodes s if it is exactly the canonical text of n bytes (no
// padding, the last character's unused bits zero), else returns nil.
func Decode(s string, n int) []byte {
	if len(s) != (n*8+5)/6 {
		return nil
	}
	b := make([]byte, 0, n)
	var acc uint32 // bits read and not yet written, the newest lowest
	bits := 0
	for i := 0; i < len(s); i++ {
		var v byte
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z':
			v = c - 'A'
		case 'a' <= c && c <= 'z':
			v = c - 'a' + 26
		case '0' <= c && c <= '9':
			v = c - '0' + 52
		case c == '-':
			v = 62
		case c == '_':
			v = 63
		default:
			return nil
		}
		acc, bits = acc<<6|uint32(v), bits+6
		if bits >= 8 {
			bits -= 8
			b = append(b, byte(acc>>bits))
			acc &= 1<<bits - 1
		}
	}
	if acc != 0 || len(b) != n { // the last character's unused bits
		return nil
	}
	return b
}
