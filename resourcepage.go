package fenceview

import (
	"encoding/base64"
	"strconv"

	"github.com/fenceview/fenceview/guard"
)

// ResourcePage selects a page of the resource list, ordered by id.
type ResourcePage struct {
	Prefix string // only ids starting with it
	After  string // the last id of the previous page ("" for the first)
	Limit  int
}

// ParseResourcePage reads the resource list's query parameters: limit
// (1..MaxPage, default DefaultPage), cursor (the previous page's next) and
// prefix, as the JSON API and the dashboard both take them.
func ParseResourcePage(q map[string][]string) (ResourcePage, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	p := ResourcePage{Prefix: get("prefix"), Limit: DefaultPage}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPage || v[0] == '+' {
			return p, Errorf(EINVALID, "limit: an integer from 1 to %d", MaxPage)
		}
		p.Limit = n
	}
	if p.Prefix != "" {
		if err := guard.ValidateResourceID(p.Prefix); err != nil {
			return p, Errorf(EINVALID, "prefix: %v", err)
		}
	}
	if v := get("cursor"); v != "" {
		id, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || guard.ValidateResourceID(string(id)) != nil {
			return p, Errorf(EINVALID, "cursor: use the next value of the previous page")
		}
		p.After = string(id)
	}
	return p, nil
}

// ResourceCursor is the cursor of the page after the one ending at id: the
// id in base64url, so any id travels in a URL as it is.
func ResourceCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }
