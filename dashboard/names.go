package dashboard

import (
	"encoding/json"
	"strings"

	"github.com/fenceview/fenceview/internal/auth"
)

// Keys lists the API keys, without secrets (auth.Keyring implements it).
type Keys interface {
	List() []auth.Key
}

// KeyNames maps key ids to key names, for showing sources such as
// "key:ec3bf8bb806d42f1/replica" as "billing/replica".
type KeyNames map[string]string

// namesMax bounds the names a page carries for its script.
const namesMax = 500

// keyNames is what p may see of the key names: every key for a principal
// that sees every resource, its own key's only for a key limited to some
// prefixes (the names of other teams' keys are none of its business).
func (h *Handler) keyNames(p *auth.Principal) KeyNames {
	if h.Keys == nil || p == auth.Open || p.SeesNothing() {
		return nil
	}
	out := KeyNames{}
	for _, k := range h.Keys.List() {
		if len(out) >= namesMax {
			break
		}
		if p.Unrestricted() || k.ID == p.KeyID {
			out[k.ID] = k.Name
		}
	}
	return out
}

// JSON is the map for the page's script (data-key-names).
func (n KeyNames) JSON() string {
	if len(n) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(map[string]string(n))
	return string(b)
}

// keyOf splits a source recorded with auth on, "key:<id>" or
// "key:<id>/<label>", into the key id and the rest ("/<label>" or "").
func keyOf(source string) (id, rest string, ok bool) {
	s, found := strings.CutPrefix(source, "key:")
	if !found || s == "" {
		return "", "", false
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", true
}

// Source is a source as shown: the key's name in place of "key:<id>" when
// the name is known; the recorded text otherwise. app.js does the same.
func (n KeyNames) Source(source string) string {
	if id, rest, ok := keyOf(source); ok {
		if name, known := n[id]; known {
			return name + rest
		}
	}
	return source
}

// Named reports whether Source shows source differently, so the page puts
// the recorded source (with the key id) in a title to hover.
func (n KeyNames) Named(source string) bool { return n.Source(source) != source }
