package fenceview

import "testing"

// ParseAccess and ParseFenceMode take their two words, read empty as the
// default, and refuse anything else with EINVALID naming both words (a
// long value cut to 20 bytes).
func TestParseAccessAndFenceMode(t *testing.T) {
	for _, c := range []struct {
		parse    func(string) (string, error)
		in, want string
	}{
		{ParseAccess, "", AccessWrite},
		{ParseAccess, "write", AccessWrite},
		{ParseAccess, "read", AccessRead},
		{ParseFenceMode, "", FenceModeMark},
		{ParseFenceMode, "mark", FenceModeMark},
		{ParseFenceMode, "current", FenceModeCurrent},
	} {
		if got, err := c.parse(c.in); err != nil || got != c.want {
			t.Errorf("parse(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		parse   func(string) (string, error)
		in, msg string
	}{
		{ParseAccess, "Read", `access "Read": use "read" or "write"`},
		{ParseAccess, "write-please-and-more", `access "write-please-and-mor...": use "read" or "write"`},
		{ParseFenceMode, "marks", `fencing mode "marks": use "mark" or "current"`},
		{ParseFenceMode, " ", `fencing mode " ": use "mark" or "current"`},
	} {
		got, err := c.parse(c.in)
		if got != "" || ErrorCode(err) != EINVALID || ErrorMessage(err) != c.msg {
			t.Errorf("parse(%q) = %q, %v; want EINVALID %q", c.in, got, err, c.msg)
		}
	}
}
