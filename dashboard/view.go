package dashboard

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
)

// resourceURL is the page of a resource. The id is one escaped path
// segment, so "a/b" or "<script>" stay one id; "." and ".." would be
// resolved away by the browser and go in the query instead.
func resourceURL(id string) string {
	if id == "." || id == ".." {
		return "/resource?id=" + url.QueryEscape(id)
	}
	return "/resources/" + url.PathEscape(id)
}

// rejectionsURL lists the rejections of one resource.
func rejectionsURL(id string) string {
	return "/rejections?" + url.Values{"resource": {id}}.Encode()
}

func isoUTC(t time.Time) string   { return wire.FormatTime(t) }
func exactUTC(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// The text a <time> shows until the script puts it in the viewer's zone.
func clockUTC(t time.Time) string { return t.UTC().Format("15:04:05") + " UTC" }
func dateUTC(t time.Time) string  { return t.UTC().Format("2006-01-02 15:04:05") + " UTC" }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// remaining is a lease countdown as text; the script keeps it ticking.
func remaining(ms int64) string {
	if ms <= 0 {
		return "expired"
	}
	s := (ms + 999) / 1000
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh %02dm left", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm %02ds left", s/60, s%60)
	}
	return fmt.Sprintf("%ds left", s)
}

// label is the word shown beside an event's icon, so colour is never the
// only signal. app.js has the same table.
func label(e fenceview.Event) string {
	switch e.Type {
	case fenceview.EventGrant:
		return "granted"
	case fenceview.EventRenew:
		return "renewed"
	case fenceview.EventRelease:
		return "released"
	case fenceview.EventExpire:
		return "expired"
	case fenceview.EventAccept:
		return "accepted"
	case fenceview.EventReject:
		if e.Reason == guard.ReasonStale {
			return "stale"
		}
		return "refused"
	case fenceview.EventAlarm:
		return "alarm"
	case fenceview.EventReset:
		return "reset"
	case fenceview.EventRecover:
		return "recovered"
	case fenceview.EventProclaim:
		return "proclaimed"
	}
	return e.Type
}

// detail describes an event in a line, sources by their key's name when
// known. app.js has the same wording.
func detail(e fenceview.Event, n KeyNames) string {
	from := func(source string) string { return from(n.Source(source)) }
	switch e.Type {
	case fenceview.EventGrant:
		return "token " + itoa(e.Token) + " to " + e.Holder
	case fenceview.EventRenew:
		return "token " + itoa(e.Token) + " renewed by " + e.Holder
	case fenceview.EventRelease:
		return "token " + itoa(e.Token) + " released by " + e.Holder
	case fenceview.EventExpire:
		s := "token " + itoa(e.Token) + " of " + e.Holder
		if e.Reason == fenceview.ExpireForced {
			return s + " force-expired"
		}
		if e.LockDelayMs > 0 {
			return s + ": lease ran out; lock-delay " + itoa(e.LockDelayMs) + " ms"
		}
		return s + ": lease ran out"
	case fenceview.EventProclaim:
		return "term " + itoa(e.Token) + ": " + e.Holder + " set its value"
	case fenceview.EventAccept:
		return "token " + itoa(e.Token) + " accepted" + from(e.Source)
	case fenceview.EventReject:
		return "token " + itoa(e.Presented) + " refused (" + e.Reason + "), needs ≥ " + itoa(e.Required) + from(e.Source)
	case fenceview.EventAlarm:
		return e.Reason + ": mark " + itoa(e.Token) + " above the last token issued, " + itoa(e.Required) + from(e.Source)
	case fenceview.EventReset:
		return "token counter raised to " + itoa(e.Token) + " (floor " + itoa(e.Required) + ") by " + n.Source(e.Source)
	case fenceview.EventRecover:
		mark, counter := e.Replaced()
		return "recovered by " + n.Source(e.Source) + ": counter " + itoa(counter) + " → " + itoa(e.Token) + ", mark " + itoa(mark) + " → ≤ " + itoa(e.Token)
	}
	return ""
}

func from(source string) string {
	if source == "" {
		return ""
	}
	return " from " + source
}

// holderText is who holds a lock, "free" when nobody.
func holderText(r fenceview.Resource) string {
	if r.Holder == "" {
		return "free"
	}
	if r.HoldCount > 1 {
		return r.Holder + " ×" + strconv.Itoa(r.HoldCount)
	}
	return r.Holder
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func lockHolder(l fenceview.LockState) string {
	if !l.Locked {
		return "nobody"
	}
	if l.HoldCount > 1 {
		return l.Holder + " (held " + strconv.Itoa(l.HoldCount) + " times)"
	}
	return l.Holder
}

func grantToken(l fenceview.LockState, r fenceview.Resource) string {
	if !l.Locked {
		return "—"
	}
	return itoa(r.Token)
}

func xAnchor(i, n int) string {
	switch {
	case i == 0:
		return "start"
	case i == n-1:
		return "end"
	}
	return "middle"
}

// alarmText is a behind resource's alarm in words, the same on the banner
// and the resource page (app.js: alarmText).
func alarmText(r fenceview.Resource) string {
	return "token " + itoa(alarmMark(r)) + " in use at a guard, last token issued " + itoa(r.LastToken)
}

// whoTitle is the hover text of the logged-in name: which key it is.
func whoTitle(keyID string) string {
	if keyID == "admin" {
		return "the admin token"
	}
	return "key " + keyID
}
