package dashboard

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

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

// group is a count or token as people read it, in one format everywhere:
// digits in groups of three, "12,345" (app.js: group). itoa stays for
// attributes and URLs, which programs read.
func group[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

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
		if e.Access == fenceview.AccessRead {
			return "read"
		}
		return "accepted"
	case fenceview.EventReject:
		read := e.Access == fenceview.AccessRead
		switch {
		case read && e.Reason == guard.ReasonStale:
			return "stale read"
		case read:
			return "read refused"
		case e.Reason == guard.ReasonStale:
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

// sourceTitle is the title of an event's details: the raw source, when
// its key's name is shown in its place.
func sourceTitle(e fenceview.Event, n KeyNames) templ.Attributes {
	if n.Named(e.Source) {
		return templ.Attributes{"title": e.Source}
	}
	return nil
}

// detail describes an event in a line, sources by their key's name when
// known. app.js has the same wording.
func detail(e fenceview.Event, n KeyNames) string {
	from := func(source string) string { return from(n.Source(source)) }
	switch e.Type {
	case fenceview.EventGrant:
		return "token " + group(e.Token) + " to " + e.Holder
	case fenceview.EventRenew:
		return "token " + group(e.Token) + " renewed by " + e.Holder
	case fenceview.EventRelease:
		return "token " + group(e.Token) + " released by " + e.Holder
	case fenceview.EventExpire:
		s := "token " + group(e.Token) + " of " + e.Holder
		if e.Reason == fenceview.ExpireForced {
			return s + " force-expired"
		}
		if e.LockDelayMs > 0 {
			return s + ": lease ran out; lock-delay " + group(e.LockDelayMs) + " ms"
		}
		return s + ": lease ran out"
	case fenceview.EventProclaim:
		return "term " + group(e.Token) + ": " + e.Holder + " set its value"
	case fenceview.EventAccept:
		return "token " + group(e.Token) + " accepted" + forRead(e) + from(e.Source)
	case fenceview.EventReject:
		return "token " + group(e.Presented) + " refused" + forRead(e) + " (" + e.Reason + "), needs ≥ " + group(e.Required) + from(e.Source)
	case fenceview.EventAlarm:
		return alarmEventText(e) + from(e.Source)
	case fenceview.EventReset:
		return "token counter raised to " + group(e.Token) + " (floor " + group(e.Required) + ") by " + n.Source(e.Source)
	case fenceview.EventRecover:
		mark, counter := e.Replaced()
		return "recovered by " + n.Source(e.Source) + ": counter " + group(counter) + " → " + group(e.Token) + ", mark " + group(mark) + " → ≤ " + group(e.Token)
	}
	return ""
}

// forRead marks the decision on a read.
func forRead(e fenceview.Event) string {
	if e.Access == fenceview.AccessRead {
		return " for a read"
	}
	return ""
}

// lockMode names how the lock is held.
func lockMode(l fenceview.LockState) string {
	switch {
	case !l.Locked:
		return "—"
	case l.Shared:
		return "shared: " + plural(len(l.Holders), "reader", "readers")
	}
	return "exclusive"
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
		return r.Holder + " ×" + group(r.HoldCount)
	}
	return r.Holder
}

// plural is a count with its noun, "1 lock" and "2 locks" (app.js: plural).
func plural(n int, one, many string) string {
	return group(n) + " " + noun(n, one, many)
}

// noun is the word that goes with a count shown apart from it.
func noun[T ~int | ~int64](n T, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func lockHolder(l fenceview.LockState) string {
	if !l.Locked {
		return "nobody"
	}
	if l.HoldCount > 1 {
		return l.Holder + " (held " + group(l.HoldCount) + " times)"
	}
	return l.Holder
}

func grantToken(l fenceview.LockState, r fenceview.Resource) string {
	if !l.Locked {
		return "—"
	}
	return group(r.Token)
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
// and the resource page (app.js: alarmText). Before this server issued
// any token for the resource there is no "last token issued" to compare
// with, so it says so. Once the counter has passed the mark (the first
// grant above a mark set elsewhere, or grants since), the alarm stays
// until a reset, and says the mark was in use rather than that the
// issuer is behind it.
func alarmText(r fenceview.Resource) string {
	mark := alarmMark(r)
	switch {
	case r.LastToken == 0 && r.HighWaterMark < mark:
		return "token " + group(mark) + " in use at a guard before this server issued any; the mark stays at " + group(r.HighWaterMark)
	case r.LastToken == 0:
		return "token " + group(mark) + " in use at a guard before this server issued any"
	case mark <= r.LastToken:
		return "token " + group(mark) + " was in use at a guard above the token counter, last token issued " + group(r.LastToken)
	}
	return "token " + group(mark) + " in use at a guard, last token issued " + group(r.LastToken)
}

// alarmEventText is an alarm event in words: the mark it claims (its
// token) beside the last token issued (its required), in the banner's
// words for the counter alarm (app.js: alarmEventText).
func alarmEventText(e fenceview.Event) string {
	mark := "token " + group(e.Token) + " in use at a guard"
	switch {
	case e.Reason == fenceview.AlarmForeignMark && e.Token > fenceview.MaxReportedMark:
		return mark + ", above any mark a report may set; the mark stays at " + group(int64(fenceview.MaxReportedMark)) + " (" + e.Reason + ")"
	case e.Reason == fenceview.AlarmForeignMark:
		return mark + " before this server issued any; its first token goes above it (" + e.Reason + ")"
	}
	return mark + ", last token issued " + group(e.Required) + " (" + e.Reason + ")"
}

// whoTitle is the hover text of the logged-in name: which key it is.
func whoTitle(keyID string) string {
	if keyID == "admin" {
		return "the admin token"
	}
	return "key " + keyID
}
