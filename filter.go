package fenceview

import (
	"strconv"
	"time"

	"github.com/fenceview/fenceview/guard"
)

// ParseRejectionFilter reads the rejection history's query parameters
// (resource, reason, source, since, until, limit, cursor), as the JSON API
// and the dashboard both take them. Bad input is an EINVALID error.
func ParseRejectionFilter(q map[string][]string) (RejectionFilter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	f := RejectionFilter{Limit: DefaultPage}
	if v := get("resource"); v != "" {
		if err := guard.ValidateResourceID(v); err != nil {
			return f, Errorf(EINVALID, "resource: %v", err)
		}
		f.ResourceID = v
	}
	if v := get("reason"); v != "" {
		if len(v) > MaxReasonLen {
			return f, Errorf(EINVALID, "reason: at most %d bytes", MaxReasonLen)
		}
		f.Reason = v
	}
	if v := get("source"); v != "" {
		if len(v) > MaxSourceLen {
			return f, Errorf(EINVALID, "source: at most %d bytes", MaxSourceLen)
		}
		f.Source = v
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, Errorf(EINVALID, "%s: want an RFC 3339 time such as 2026-09-24T06:14:22Z", p.name)
			}
			*p.dst = t
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, Errorf(EINVALID, "until must be after since")
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPage {
			return f, Errorf(EINVALID, "limit: an integer from 1 to %d", MaxPage)
		}
		f.Limit = n
	}
	if v := get("cursor"); v != "" {
		c, err := ParseCursor(v)
		if err != nil {
			return f, err
		}
		f.Before = c
	}
	return f, nil
}
