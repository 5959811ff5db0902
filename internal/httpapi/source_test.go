package httpapi

import (
	"context"
	"strings"
	"testing"

	"github.com/fenceview/fenceview/internal/auth"
)

// Issue 11: with auth on, the recorded source starts with who the server
// authenticated; a caller's text is a sub-label and cannot pose as the
// admin, the server's api:<host> or another key. With auth off it is as
// before.
func TestAttributeNamesTheKeyFirst(t *testing.T) {
	key := auth.NewContext(context.Background(), &auth.Principal{KeyID: "0123456789abcdef", Name: "orders", Role: auth.Guard})
	admin := auth.NewContext(context.Background(), &auth.Principal{KeyID: "admin", Name: "admin token", Role: auth.Admin})
	off := context.Background()
	for _, c := range []struct {
		ctx             context.Context
		fallback, given string
		want            string
	}{
		{key, "api:10.0.0.7", "", "key:0123456789abcdef"},
		{key, "api:10.0.0.7", "worker-7", "key:0123456789abcdef/worker-7"},
		{key, "api:10.0.0.7", "admin", "key:0123456789abcdef/admin"},
		{key, "api:10.0.0.7", "api:10.0.0.9", "key:0123456789abcdef/api:10.0.0.9"},
		{key, "rpc:::1", "key:ffffffffffffffff", "key:0123456789abcdef/key:ffffffffffffffff"},
		{key, "", "", "key:0123456789abcdef"}, // a report without a source
		{admin, "api:10.0.0.7", "", "admin"},
		{admin, "api:10.0.0.7", "plugin/orders-db", "admin/plugin/orders-db"},
		{off, "api:10.0.0.7", "", "api:10.0.0.7"},
		{off, "api:10.0.0.7", "admin", "admin"},
		{off, "rpc:::1", "plugin/orders-db", "plugin/orders-db"},
	} {
		got, err := attribute(c.ctx, c.fallback, c.given)
		if err != nil || got != c.want {
			t.Errorf("attribute(%s, %q, %q) = %q, %v; want %q", auth.FromContext(c.ctx).KeyID, c.fallback, c.given, got, err, c.want)
		}
	}
	// The label keeps the source charset (and so cannot end the key's part
	// early), and the whole fits the source's length.
	for _, bad := range []string{"/admin", ":x", "a b", "=1", "caf\u00e9", strings.Repeat("s", 200-len("key:0123456789abcdef/")+1)} {
		if got, err := attribute(key, "", bad); err == nil {
			t.Errorf("label %q accepted as %q", bad, got)
		}
	}
	if got, err := attribute(key, "", strings.Repeat("s", 200-len("key:0123456789abcdef/"))); err != nil || len(got) != 200 {
		t.Errorf("longest label: %q, %v", got, err)
	}
}
