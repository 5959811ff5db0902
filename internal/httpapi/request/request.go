// Package request reads what requests to fenceview's HTTP API and
// dashboard carry: URL query parameters, and the bounds on bodies. Every
// integer in a query goes through Int, so all parameters refuse the same
// inputs.
package request

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Bounds on a request's body and on a page of a list.
const (
	// MaxBody bounds a lock or fence request's body, in bytes.
	MaxBody = 64 << 10
	// MaxReportBody bounds a report of decisions (a plugin's batch), in bytes.
	MaxReportBody = 1 << 20
	// MaxPage is the most rows one page of a list returns.
	MaxPage = 1000
	// DefaultPage is the page length when none is asked for.
	DefaultPage = 100
)

// Int reads a strict decimal integer from lo to hi: ASCII digits, with a
// leading '-' for a negative number. A '+', a space, an underscore or a
// base prefix make ok false (strconv alone takes "+5"), as does a number
// out of range.
func Int(s string, lo, hi int64) (n int64, ok bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// limit reads the page length parameter: 1..MaxPage, DefaultPage when
// absent.
func limit(q map[string][]string) (int, error) {
	v := first(q, "limit")
	if v == "" {
		return DefaultPage, nil
	}
	n, ok := Int(v, 1, MaxPage)
	if !ok {
		return 0, fenceview.FieldErrorf(fenceview.EINVALID, "limit", "limit: an integer from 1 to %d", MaxPage)
	}
	return int(n), nil
}

// RejectionFilter reads the rejection history's query parameters
// (resource, reason, source, since, until, limit, cursor), as the JSON API
// and the dashboard both take them. Bad input is an EINVALID error.
func RejectionFilter(q map[string][]string) (fenceview.RejectionFilter, error) {
	f := fenceview.RejectionFilter{Limit: DefaultPage}
	if v := first(q, "resource"); v != "" {
		if err := guard.ValidateResourceID(v); err != nil {
			return f, fenceview.FieldErrorf(fenceview.EINVALID, "resource", "resource: %v", err)
		}
		f.ResourceID = v
	}
	for _, p := range []struct {
		name string
		max  int
		dst  *string
	}{{"reason", fenceview.MaxReasonLen, &f.Reason}, {"source", fenceview.MaxSourceLen, &f.Source}} {
		if v := first(q, p.name); v != "" {
			if len(v) > p.max || !utf8.ValidString(v) {
				return f, fenceview.FieldErrorf(fenceview.EINVALID, p.name, "%s: at most %d bytes of UTF-8", p.name, p.max)
			}
			*p.dst = v
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := first(q, p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, fenceview.FieldErrorf(fenceview.EINVALID, p.name, "%s: want an RFC 3339 time such as 2026-09-24T06:14:22Z", p.name)
			}
			*p.dst = t
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, fenceview.FieldErrorf(fenceview.EINVALID, "until", "until must be after since")
	}
	var err error
	if f.Limit, err = limit(q); err != nil {
		return f, err
	}
	if v := first(q, "cursor"); v != "" {
		if f.Before, err = Cursor(v); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Cursor decodes a place in the rejection history written by
// fenceview.Cursor.String: "<unix milliseconds>-<seq>".
func Cursor(s string) (fenceview.Cursor, error) {
	ms, seq, found := strings.Cut(s, "-")
	at, ok1 := Int(ms, 0, math.MaxInt64)
	n, ok2 := Int(seq, 1, math.MaxInt64)
	if !found || !ok1 || !ok2 {
		return fenceview.Cursor{}, fenceview.FieldErrorf(fenceview.EINVALID, "cursor", "cursor: use the next value of the previous page")
	}
	return fenceview.Cursor{At: time.UnixMilli(at).UTC(), Seq: n}, nil
}

// ResourceList selects a page of the resource list, ordered by id.
type ResourceList struct {
	Prefix string // only ids starting with it
	After  string // the last id of the previous page ("" for the first)
	Limit  int
}

// ParseResourceList reads the resource list's query parameters: limit
// (1..MaxPage, default DefaultPage), cursor (the previous page's next, as
// ResourceCursor wrote it) and prefix.
func ParseResourceList(q map[string][]string) (ResourceList, error) {
	p := ResourceList{Prefix: first(q, "prefix"), Limit: DefaultPage}
	var err error
	if p.Limit, err = limit(q); err != nil {
		return p, err
	}
	if p.Prefix != "" {
		if err := guard.ValidateResourceID(p.Prefix); err != nil {
			return p, fenceview.FieldErrorf(fenceview.EINVALID, "prefix", "prefix: %v", err)
		}
	}
	if v := first(q, "cursor"); v != "" {
		id, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || guard.ValidateResourceID(string(id)) != nil {
			return p, fenceview.FieldErrorf(fenceview.EINVALID, "cursor", "cursor: use the next value of the previous page")
		}
		p.After = string(id)
	}
	return p, nil
}

// ResourceCursor is the cursor of the page after the one ending at id: the
// id in base64url, so any id travels in a URL as it is.
func ResourceCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// Since reads the event stream's since parameter: a sequence number from
// 0, or -1 when absent.
func Since(q map[string][]string) (int64, error) {
	v := first(q, "since")
	if v == "" {
		return -1, nil
	}
	n, ok := Int(v, 0, math.MaxInt64)
	if !ok {
		return 0, fenceview.FieldErrorf(fenceview.EINVALID, "since", "since: a non-negative event sequence number")
	}
	return n, nil
}
