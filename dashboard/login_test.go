package dashboard

import "testing"

// The after-login redirect stays on this server: only "/" followed by a
// character other than "/" or "\", with no control, whitespace or invisible
// formatting character anywhere (a browser drops some and reads the rest
// as "//evil.example").
func TestSafeNext(t *testing.T) {
	for _, c := range []struct{ next, want string }{
		{"", "/"},
		{"/", "/"},
		{"/rejections", "/rejections"},
		{"/resources/a%2Fb?x=1#top", "/resources/a%2Fb?x=1#top"},
		{"/resource?id=%2F%2Fevil.example", "/resource?id=%2F%2Fevil.example"},
		{"/a/b//c", "/a/b//c"},
		{"/ünïcode", "/ünïcode"},
		{"//evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/x\ty", "/"},
		{"/x\x00y", "/"},
		{"/x\x7fy", "/"},
		{"/x\u0085y", "/"},
		{"/x\u00a0y", "/"},
		{"/x\u2028y", "/"},
		{"/\u200b/evil.example", "/"},
		{"/\ufeff/evil.example", "/"},
		{"/x\xffy", "/"},
		{"\t//evil.example", "/"},
		{"https://evil.example", "/"},
		{"evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"\\\\evil.example", "/"},
	} {
		if got := safeNext(c.next); got != c.want {
			t.Errorf("safeNext(%q) = %q, want %q", c.next, got, c.want)
		}
	}
}
