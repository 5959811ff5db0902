package fenceview

// ValidateSource accepts who decided: 1..MaxSourceLen bytes of ASCII
// letters, digits and - _ . : / @ + # ~ % [ ], starting with a letter or
// digit (so no spreadsheet reads it as a formula), e.g. api:10.0.0.7 or
// plugin/orders-db.
func ValidateSource(s string) error {
	if s == "" || len(s) > MaxSourceLen {
		return Errorf(EINVALID, "source must be 1..%d bytes", MaxSourceLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !isSourcePunct(c)) {
			return Errorf(EINVALID, "source: ASCII letters, digits and -_.:/@+#~%%[], starting with a letter or digit (byte %d)", i)
		}
	}
	return nil
}

func isSourcePunct(c byte) bool {
	switch c {
	case '-', '_', '.', ':', '/', '@', '+', '#', '~', '%', '[', ']':
		return true
	}
	return false
}
