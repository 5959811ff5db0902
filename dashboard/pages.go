package dashboard

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
)

// Meta is what the page frame needs.
type Meta struct {
	Title  string
	Active string // "overview" or "rejections": the highlighted nav link
	Page   string // data-page on <body>: which live behaviour the script runs
	// LastSeq is the last event the page shows; the script resumes the
	// stream after it, so nothing between render and connect is missed.
	LastSeq   int64
	Resource  string // the stream filter of a resource page
	Semaphore string // a semaphore's page: the name whose slots it follows
	Admin     bool   // the viewer may force-expire and reset: show those actions

	CSS, JS, Icon string

	Behind         []fenceview.Resource // issuer counter behind the high-water mark
	Burst          int                  // stale writes in the window, when a burst
	BurstThreshold int
	BurstWindowMs  int64

	User    string // the name of the key logged in with, when auth is on
	UserKey string // and its id ("admin" for the admin token)
	Metrics bool   // the viewer sees every resource, so may read the metrics
	Names   KeyNames
}

// navLink is an entry of the main navigation; Key is the Active that
// marks it as the page shown.
type navLink struct{ Href, Label, Key string }

// Nav is the main navigation; the metrics only for a viewer who may read
// them.
func (m Meta) Nav() []navLink {
	nav := []navLink{{"/", "Overview", "overview"}, {"/rejections", "Rejections", "rejections"}}
	if m.Metrics {
		nav = append(nav, navLink{"/status", "Metrics", "metrics"})
	}
	return nav
}

// ResourceRow is one line of the overview table.
type ResourceRow struct {
	fenceview.Resource
	RemainingMs int64 // lease left; 0 when free
	Spark       []int // events per five minutes over the last hour; nil when not drawn
	SparkMore   bool  // Spark counts only the newest of more events
}

// OverviewData is the overview page.
type OverviewData struct {
	Meta
	Rows                     []ResourceRow     // one page
	Feed                     []fenceview.Event // newest first
	Refusals                 []fenceview.Event // the latest rejections
	Held, Accepted, Rejected int64
	Cluster                  *ClusterView // cluster mode only

	Table             TableQuery
	TableError        string
	Matched, Total    int // resources the search matched; all resources
	PageSize          int
	NextURL, FirstURL string
	Drawn             time.Time // when the page was drawn: the sparklines' hour ends here
	Rates             Rates
}

// total is one of the overview's totals, with its noun.
type total struct {
	Class, Name string
	N           int64
	One, Many   string
}

// Totals are the overview's counts at its top.
func (d OverviewData) Totals() []total {
	return []total{
		{"", "resources", int64(d.Total), "resource", "resources"},
		{"", "held", d.Held, "lock held", "locks held"},
		{"ok", "accepted", d.Accepted, "write accepted", "writes accepted"},
		{"bad", "rejected", d.Rejected, "write refused", "writes refused"},
	}
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	// The sequence number first, then the state: an event in between is
	// both in the state and replayed, and replaying is harmless.
	last := h.Locks.LastSeq()
	d := OverviewData{Meta: h.meta(r.Context(), "Overview", "overview"), PageSize: h.TableSize}
	d.Page, d.LastSeq = "overview", last
	now := h.Now()
	d.Drawn = now
	p := auth.FromContext(r.Context())
	t, after, err := parseTable(r.URL.Query())
	d.Table = t
	status := http.StatusOK
	if err != nil {
		d.TableError, status = err.Error(), http.StatusBadRequest
		d.Table, after = TableQuery{Sort: "id", Range: t.Range}, nil
	}
	page := h.Locks.SelectResources(fenceview.ResourceQuery{Prefix: d.Table.Prefix, Sort: d.Table.Sort, Desc: d.Table.Desc, After: after, Limit: h.TableSize, Scope: p.Scope()})
	d.Matched = page.Matched
	// The totals of every resource the principal sees, without listing
	// them (a server may know a million); rates span every resource, so
	// only an unrestricted principal gets them.
	var held int
	d.Total, held, d.Accepted, d.Rejected = h.Locks.Totals(p.Scope())
	d.Held = int64(held)
	for _, res := range page.Resources {
		row := ResourceRow{Resource: res}
		if res.Holder != "" {
			row.RemainingMs = max(res.ExpiresAt.Sub(now).Milliseconds(), 0)
		}
		if row.Spark, row.SparkMore, err = h.sparkline(r.Context(), res.ResourceID, now); err != nil {
			h.serverError(w, r, err)
			return
		}
		d.Rows = append(d.Rows, row)
	}
	if page.Next != nil {
		next := encodeKey(*page.Next)
		d.NextURL = d.Table.url(func(c *TableQuery) { c.After = next })
	}
	d.FirstURL = d.Table.url(func(c *TableQuery) { c.After = "" })
	if p.Unrestricted() {
		if d.Rates, err = h.rates(r.Context(), d.Table.Range); err != nil {
			h.serverError(w, r, err)
			return
		}
	}
	if h.FeedSize > 0 && last > 0 {
		events, err := h.History.EventsAfter(r.Context(), max(last-int64(h.FeedSize), 0), "", h.FeedSize)
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		for i := len(events) - 1; i >= 0; i-- {
			if events[i].Seq <= last && p.Sees(events[i].ResourceID) {
				d.Feed = append(d.Feed, events[i])
			}
		}
	}
	refusals, err := h.History.Rejections(r.Context(), fenceview.RejectionFilter{Limit: refusalsShown, Prefixes: p.Resources})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, e := range refusals {
		if e.Seq <= last {
			d.Refusals = append(d.Refusals, e)
		}
	}
	d.Cluster = h.clusterView(r.Context())
	h.render(w, r, status, Overview(d))
}

// refusalsShown is the length of the overview's "latest refusals" list;
// app.js keeps it the same.
const refusalsShown = 6

// ResourceData is a resource's page.
type ResourceData struct {
	Meta
	Res     fenceview.Resource
	Lock    fenceview.LockState
	Chart   Chart
	History []fenceview.Event // newest first
	// DelayMs is what a running lock-delay has left (0: none runs).
	DelayMs int64
	Times   TimesData
	// Semaphore and Slot, when the resource is a semaphore's slot.
	Semaphore string
	Slot      int
}

// pageFor admits a page for one thing: a 400 page (title, text) unless
// valid, a 403 unless the viewer may see the resource id seen. False once
// answered.
func (h *Handler) pageFor(w http.ResponseWriter, r *http.Request, valid bool, seen, title, text string) bool {
	if !valid {
		h.errorPage(w, r, http.StatusBadRequest, title, text)
		return false
	}
	if !auth.FromContext(r.Context()).Sees(seen) {
		h.forbidden(w, r)
		return false
	}
	return true
}

// resourceView is what a resource's page (and an election's) shows: the
// resource, its lock, and its newest events, all as of the last durable
// event, so the page and its live feed (which resumes after last) meet.
type resourceView struct {
	last   int64
	res    fenceview.Resource
	lock   fenceview.LockState
	events []fenceview.Event
}

// readResource reads id's view; ENOTFOUND when the server knows no id.
func (h *Handler) readResource(ctx context.Context, id string) (resourceView, error) {
	v := resourceView{last: h.Locks.LastSeq()}
	var err error
	if v.res, err = h.Locks.Resource(id); err != nil {
		return v, err
	}
	if v.lock, err = h.Locks.Lock(id); err != nil {
		return v, err
	}
	events, err := h.History.ResourceEvents(ctx, id, h.HistorySize)
	for _, e := range events {
		if e.Seq <= v.last {
			v.events = append(v.events, e)
		}
	}
	return v, err
}

func (h *Handler) resource(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("resource")
	if r.URL.Path == "/resource" {
		id = r.URL.Query().Get("id")
	}
	if !h.pageFor(w, r, guard.ValidateResourceID(id) == nil, id, "Not a resource id",
		"A resource id is 1 to 160 bytes of UTF-8 without control characters.") {
		return
	}
	v, err := h.readResource(r.Context(), id)
	if fenceview.ErrorCode(err) == fenceview.ENOTFOUND {
		h.errorPage(w, r, http.StatusNotFound, "No such resource",
			"fenceview has issued no token and recorded no decision for “"+id+"”.")
		return
	} else if err != nil {
		h.serverError(w, r, err)
		return
	}
	res, lock := v.res, v.lock
	d := ResourceData{Meta: h.meta(r.Context(), id, ""), Res: res, Lock: lock, History: v.events}
	d.Page, d.LastSeq, d.Resource = "resource", v.last, id
	d.Chart = newChart(d.History, d.Names, res)
	d.DelayMs = delayRemaining(lock, res, h.Now())
	d.Times = TimesData{LockTimes: h.Locks.LockTimes(id), Waiters: lock.Waiters}
	d.Semaphore, d.Slot, _ = fenceview.ParseSlotID(id)
	h.render(w, r, http.StatusOK, ResourcePage(d))
}

// FilterForm is the rejection filter as the viewer typed it, for the form.
type FilterForm struct {
	Resource, Reason, Source, Since, Until string
}

// RejectionsData is the rejection history page.
type RejectionsData struct {
	Meta
	Form      FilterForm
	Error     string // a bad filter: shown instead of results
	Rows      []fenceview.Event
	Filtered  bool
	NewestURL string // the first page of this filter, when not on it
	NextURL   string // the next (older) page, when there is one
	CSVURL    string
	Resources []Choice // the most refused resources, for the resource field
	Reasons   []Choice // every reason recorded, with counts
	Sources   []Choice // the most frequent sources, with counts
}

// choices fills the filter's choice lists: every reason recorded (and the
// documented ones), the most frequent sources, the most refused resources.
func (h *Handler) choices(ctx context.Context, d *RejectionsData) error {
	p := auth.FromContext(ctx)
	if !p.Unrestricted() {
		// Counts span every resource: a limited key gets the documented
		// reasons and its own most refused resources, without counts.
		for _, k := range fenceview.KnownReasons {
			d.Reasons = append(d.Reasons, Choice{k, -1})
		}
		d.Resources = h.mostRefused(p)
		return nil
	}
	names, counts, err := h.History.RejectionReasons(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, n := range names {
		d.Reasons, seen[n] = append(d.Reasons, Choice{n, counts[i]}), true
	}
	for _, k := range fenceview.KnownReasons {
		if !seen[k] {
			d.Reasons = append(d.Reasons, Choice{k, 0})
		}
	}
	if names, counts, err = h.History.RejectionSources(ctx, choicesMax); err != nil {
		return err
	}
	for i, n := range names {
		d.Sources = append(d.Sources, Choice{n, counts[i]})
	}
	d.Resources = h.mostRefused(p)
	return nil
}

func (h *Handler) mostRefused(p *auth.Principal) []Choice {
	var out []Choice
	page := h.Locks.SelectResources(fenceview.ResourceQuery{Sort: fenceview.SortRejected, Desc: true, Limit: choicesMax, Scope: p.Scope()})
	for _, r := range page.Resources {
		if r.Rejected > 0 {
			out = append(out, Choice{r.ResourceID, r.Rejected})
		}
	}
	return out
}

func (h *Handler) rejections(w http.ResponseWriter, r *http.Request) {
	d := RejectionsData{Meta: h.meta(r.Context(), "Rejections", "rejections")}
	d.Page = "rejections"
	p := auth.FromContext(r.Context())
	if err := h.choices(r.Context(), &d); err != nil {
		h.serverError(w, r, err)
		return
	}
	q := r.URL.Query()
	d.Form = FilterForm{Resource: q.Get("resource"), Reason: q.Get("reason"), Source: q.Get("source"), Since: q.Get("since"), Until: q.Get("until")}
	f, err := h.parseFilter(r.Context(), q)
	if err != nil {
		d.Error = fenceview.ErrorMessage(err)
		h.render(w, r, http.StatusBadRequest, RejectionsPage(d))
		return
	}
	if f.ResourceID != "" && !p.Sees(f.ResourceID) {
		h.forbidden(w, r)
		return
	}
	d.Form.Since, d.Form.Until = formTime(f.Since), formTime(f.Until)
	d.Filtered = f.ResourceID != "" || f.Reason != "" || f.Source != "" || !f.Since.IsZero() || !f.Until.IsZero()
	if d.Rows, err = h.History.Rejections(r.Context(), f); err != nil {
		h.serverError(w, r, err)
		return
	}
	if !f.Before.IsZero() {
		d.NewestURL = "/rejections" + filterQuery(f, fenceview.Cursor{}, q.Get("limit"))
	}
	if len(d.Rows) == f.Limit {
		d.NextURL = "/rejections" + filterQuery(f, fenceview.CursorOf(d.Rows[len(d.Rows)-1]), q.Get("limit"))
	}
	d.CSVURL = "/rejections.csv" + filterQuery(f, fenceview.Cursor{}, "")
	h.render(w, r, http.StatusOK, RejectionsPage(d))
}

// rejectionsCSV exports every rejection the filter matches (from the
// cursor on, when one is given), newest first, up to CSVMax rows.
func (h *Handler) rejectionsCSV(w http.ResponseWriter, r *http.Request) {
	f, err := h.parseFilter(r.Context(), r.URL.Query())
	if err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Bad filter", fenceview.ErrorMessage(err))
		return
	}
	if f.ResourceID != "" && !auth.FromContext(r.Context()).Sees(f.ResourceID) {
		h.forbidden(w, r)
		return
	}
	f.Limit = csvPage
	// The first page is read before anything is written, so a failing
	// database still gets a proper error status.
	page, err := h.History.Rejections(r.Context(), f)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="fenceview-rejections.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "at", "resourceId", "presented", "required", "reason", "source", "holder"})
	for n := 0; len(page) > 0; {
		for _, e := range page {
			cw.Write([]string{
				strconv.FormatInt(e.Seq, 10), isoUTC(e.At), csvText(e.ResourceID),
				strconv.FormatInt(e.Presented, 10), strconv.FormatInt(e.Required, 10),
				csvText(e.Reason), csvText(e.Source), csvText(e.Holder),
			})
			if n++; n >= h.CSVMax {
				cw.Flush()
				return
			}
		}
		if len(page) < f.Limit {
			break
		}
		f.Before = fenceview.CursorOf(page[len(page)-1])
		if page, err = h.History.Rejections(r.Context(), f); err != nil {
			// Too late for a status: end the file early and say why in the log.
			h.Logger.Error("exporting rejections", "err", err)
			break
		}
	}
	cw.Flush()
}

// csvPage is how many rows an export reads from the history at a time.
var csvPage = 1000

// csvText defuses values a spreadsheet would run as a formula: ids and
// sources come from clients, and an export is opened by a person.
func csvText(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r') {
		return "'" + s
	}
	return s
}

// localTime is what a datetime-local input sends: no zone. The form labels
// it UTC.
var localTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?$`)

// parseFilter reads the filter with the API's rules, also taking the
// zone-less times of the form's datetime inputs as UTC.
func (h *Handler) parseFilter(ctx context.Context, q url.Values) (fenceview.RejectionFilter, error) {
	q2 := url.Values{}
	for k, v := range q {
		q2[k] = v
	}
	for _, k := range []string{"since", "until"} {
		if v := q.Get(k); localTime.MatchString(v) {
			if len(v) == len("2006-01-02T15:04") {
				v += ":00"
			}
			q2.Set(k, v+"Z")
		}
	}
	if q.Get("limit") == "" {
		q2.Set("limit", strconv.Itoa(h.PageSize))
	}
	f, err := request.RejectionFilter(q2)
	// A key limited to some resources sees their rejections only.
	f.Prefixes = auth.FromContext(ctx).Resources
	return f, err
}

func (h *Handler) forbidden(w http.ResponseWriter, r *http.Request) {
	h.errorPage(w, r, http.StatusForbidden, "Not for this key",
		"The key you logged in with may not see this resource.")
}

// filterQuery is the query string of f, with a cursor unless before is zero.
func filterQuery(f fenceview.RejectionFilter, before fenceview.Cursor, limit string) string {
	q := url.Values{}
	if f.ResourceID != "" {
		q.Set("resource", f.ResourceID)
	}
	if f.Reason != "" {
		q.Set("reason", f.Reason)
	}
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	if !f.Since.IsZero() {
		q.Set("since", isoUTC(f.Since))
	}
	if !f.Until.IsZero() {
		q.Set("until", isoUTC(f.Until))
	}
	if limit != "" {
		q.Set("limit", limit)
	}
	if !before.IsZero() {
		q.Set("cursor", before.String())
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// formTime is t as a datetime-local input wants it, in UTC.
func formTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	if t.Nanosecond() != 0 {
		return t.Format("2006-01-02T15:04:05.000")
	}
	return t.Format("2006-01-02T15:04:05")
}

func (h *Handler) serverError(w http.ResponseWriter, r *http.Request, err error) {
	h.Logger.Error("dashboard", "path", r.URL.Path, "err", err)
	h.errorPage(w, r, http.StatusInternalServerError, "Something went wrong",
		"fenceview could not read its records; the server log says why.")
}
