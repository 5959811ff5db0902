package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Semaphores and elections are made of ordinary locks: a
// semaphore's page gathers its slots, an election's page its lock's
// leader and the terms and values in the lock's history.

// SemaphoreData is a semaphore's page.
type SemaphoreData struct {
	Meta
	Sem   fenceview.Semaphore
	Slots []SlotRow // every slot below the permits, and held ones above
}

// SlotRow is one slot of a semaphore, held or free.
type SlotRow struct {
	Slot        int
	ResourceID  string
	Held        bool
	Holder      string
	Token       int64
	RemainingMs int64
	Draining    bool // above the permits (lowered while held): not granted again
}

// nameOf is the name in the path, or in ?name= on single (the route for
// "." and "..", which cannot be a path segment).
func nameOf(r *http.Request, single string) string {
	if r.URL.Path == single {
		return r.URL.Query().Get("name")
	}
	return r.PathValue("name")
}

func (h *Handler) semaphore(w http.ResponseWriter, r *http.Request) {
	name := nameOf(r, "/semaphore")
	// Its slots are name#0, name#1, ...: a key sees the semaphore when it
	// sees every slot, that is when one of its prefixes starts "name#".
	valid := guard.ValidateResourceID(name) == nil && len(name) <= fenceview.MaxSemaphoreNameLen && !strings.Contains(name, "#")
	if !h.pageFor(w, r, valid, name+"#", "Not a semaphore name",
		"A semaphore name is 1 to 150 bytes of UTF-8 without control characters or “#”.") {
		return
	}
	last := h.Locks.LastSeq()
	sem, err := h.Locks.Semaphore(name)
	if fenceview.ErrorCode(err) == fenceview.ENOTFOUND {
		h.errorPage(w, r, http.StatusNotFound, "No such semaphore", "No permit of “"+name+"” was ever acquired.")
		return
	} else if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := SemaphoreData{Meta: h.meta(r.Context(), name, ""), Sem: sem}
	d.Page, d.LastSeq, d.Semaphore = "semaphore", last, name
	d.Slots = slotRows(sem, h.Now())
	h.render(w, r, http.StatusOK, SemaphorePage(d))
}

// slotRows lists slots 0..permits-1, free or held, then the held slots
// above the permits.
func slotRows(sem fenceview.Semaphore, now time.Time) []SlotRow {
	held := make(map[int]fenceview.Slot, len(sem.Held))
	top := sem.Permits
	for _, s := range sem.Held {
		held[s.Slot] = s
		top = max(top, s.Slot+1)
	}
	rows := make([]SlotRow, 0, top)
	for i := 0; i < top && i < fenceview.MaxPermits; i++ {
		s, ok := held[i]
		if !ok && i >= sem.Permits {
			continue
		}
		row := SlotRow{Slot: i, ResourceID: fenceview.SlotID(sem.Name, i), Draining: i >= sem.Permits}
		if ok {
			row.Held, row.Holder, row.Token = true, s.Holder, s.Token
			row.RemainingMs = max(s.ExpiresAt.Sub(now).Milliseconds(), 0)
		}
		rows = append(rows, row)
	}
	return rows
}

// ElectionData is an election's page.
type ElectionData struct {
	Meta
	Name        string
	Leader      *fenceview.Leader
	RemainingMs int64 // the leader's lease left
	Waiters     int   // candidates waiting
	Terms       []TermEvent
}

// TermEvent is a change of leader or value, newest first.
type TermEvent struct {
	fenceview.Event
	What string // "elected", "proclaimed", "resigned", "lease ran out", "removed"
}

func (h *Handler) election(w http.ResponseWriter, r *http.Request) {
	name := nameOf(r, "/election")
	if !h.pageFor(w, r, guard.ValidateResourceID(name) == nil, name, "Not an election name",
		"An election's name is a resource id: 1 to 160 bytes of UTF-8 without control characters.") {
		return
	}
	v, err := h.readResource(r.Context(), name)
	if fenceview.ErrorCode(err) == fenceview.ENOTFOUND || (err == nil && !v.res.Election) {
		h.errorPage(w, r, http.StatusNotFound, "No such election", "Nobody ever campaigned in “"+name+"”.")
		return
	} else if err != nil {
		h.serverError(w, r, err)
		return
	}
	leader, err := h.Locks.Leader(name)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d := ElectionData{Meta: h.meta(r.Context(), name, ""), Name: name, Leader: leader, Waiters: v.lock.Waiters}
	d.Page, d.LastSeq, d.Resource = "election", v.last, name
	if leader != nil {
		d.RemainingMs = max(leader.ExpiresAt.Sub(h.Now()).Milliseconds(), 0)
	}
	for _, e := range v.events {
		if what := termChange(e); what != "" {
			d.Terms = append(d.Terms, TermEvent{e, what})
		}
	}
	h.render(w, r, http.StatusOK, ElectionPage(d))
}

// termChanges name the election events that change its leader or value;
// the others (renewals, fenced writes) have none.
var termChanges = map[string]string{
	fenceview.EventGrant:    "elected",
	fenceview.EventProclaim: "proclaimed",
	fenceview.EventRelease:  "resigned",
	fenceview.EventExpire:   "lease ran out",
}

// termChange names an election event that changes its leader or value,
// "" for the others.
func termChange(e fenceview.Event) string {
	if e.Type == fenceview.EventExpire && e.Reason == fenceview.ExpireForced {
		return "removed"
	}
	return termChanges[e.Type]
}

func semaphoreURL(name string) string {
	if name == "." || name == ".." {
		return "/semaphore?name=" + url.QueryEscape(name)
	}
	return "/semaphores/" + url.PathEscape(name)
}

func electionURL(name string) string {
	if name == "." || name == ".." {
		return "/election?name=" + url.QueryEscape(name)
	}
	return "/elections/" + url.PathEscape(name)
}

// TimesData is the wait and hold times card of a lock, slot or election.
type TimesData struct {
	fenceview.LockTimes
	Waiters int
}

// ms is a duration for the times card: milliseconds below 10 s, seconds
// above, minutes above 10 min.
func ms(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// delayRemaining is how long a running lock-delay has left, 0 when none.
func delayRemaining(l fenceview.LockState, r fenceview.Resource, now time.Time) int64 {
	at := l.AvailableAt
	if at.IsZero() {
		at = r.AvailableAt
	}
	return max(at.Sub(now).Milliseconds(), 0)
}

// DurationStats is a window of wait or hold times.
type DurationStats = fenceview.DurationStats

const (
	timedResources = fenceview.TimedResources
	timedSamples   = fenceview.TimedSamples
)
