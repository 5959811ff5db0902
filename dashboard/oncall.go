package dashboard

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
)

// Choice is an option of a filter's choice list, with how many rows it has.
type Choice struct {
	Value string
	Count int64
}

// Label is the option's text: the value and its count, when known.
func (c Choice) Label() string { return c.Value + c.CountText() }

// CountText is " (count)", or "" when the count is not known.
func (c Choice) CountText() string {
	if c.Count < 0 {
		return ""
	}
	return " (" + group(c.Count) + ")"
}

// choicesMax bounds the sources and resources offered in choice lists.
const choicesMax = 50

// A time range of the overview's rates: how far back, and the width of a
// bar. The bars are per-minute rates averaged over the bucket.
type timeRange struct {
	Name   string
	Label  string
	Span   time.Duration
	Bucket time.Duration
}

var timeRanges = []timeRange{
	{"hour", "Last hour", time.Hour, time.Minute},
	{"day", "Last day", 24 * time.Hour, 15 * time.Minute},
	{"week", "Last week", 7 * 24 * time.Hour, 2 * time.Hour},
}

func rangeNamed(name string) timeRange {
	for _, r := range timeRanges {
		if r.Name == name {
			return r
		}
	}
	return timeRanges[0]
}

// Rates is the overview's rates: grants, accepted and refused writes per
// minute, from the history's per-minute counts, over complete minutes
// only. Every figure ends at End, the start of the minute under way: the
// cards over the last rateWindow of them, the chart over the range.
type Rates struct {
	Range   timeRange
	Ranges  []timeRange
	Buckets []RateBucket // the range, oldest first, each complete
	// Now is the per-minute rate over [Start, End): the one window the
	// cards and the metrics page show.
	Now        RateNow
	Start, End time.Time
	Max        float64 // the tallest point, per minute
}

// rateWindow is the window of the rates shown as numbers: long enough
// that one quiet or busy minute does not swing it, and complete, so it
// does not dip while a minute is under way.
const rateWindow = 5 * time.Minute

// rateWindowWords is rateWindow as every rate's label says it.
var rateWindowWords = "the last " + strconv.Itoa(int(rateWindow/time.Minute)) + " complete minutes"

// RateNow is grants, accepted and refused writes per minute over a span.
type RateNow struct {
	Grants, Accepted, Refused float64
}

// rateKind is one of the rates: its name in classes and test ids, its
// colour on the cards, and its words.
type rateKind struct{ Name, Class, Words string }

// rateKinds are the rates, in the order the cards, the chart's lines and
// its legend show them.
var rateKinds = []rateKind{
	{"grants", "", "grants"},
	{"accepted", "ok", "writes accepted"},
	{"refused", "bad", "writes refused"},
}

// Of is this rate in n.
func (s rateKind) Of(n RateNow) float64 {
	switch s.Name {
	case "accepted":
		return n.Accepted
	case "refused":
		return n.Refused
	}
	return n.Grants
}

// RateBucket is one point of the chart: per-minute rates in [At, At+bucket).
type RateBucket struct {
	At time.Time
	RateNow
}

func (h *Handler) rates(ctx context.Context, name string) (Rates, error) {
	tr := rangeNamed(name)
	// The minute now under way is not over: a partial count would read as
	// a drop. Everything ends where it starts.
	end := h.Now().Truncate(time.Minute)
	start := end.Add(-tr.Span)
	n := int(tr.Span / tr.Bucket)
	r := Rates{Range: tr, Ranges: timeRanges, Buckets: make([]RateBucket, n), Start: end.Add(-rateWindow), End: end}
	for i := range r.Buckets {
		r.Buckets[i].At = start.Add(time.Duration(i) * tr.Bucket)
	}
	counts, err := h.History.MinuteCounts(ctx, start, end)
	if err != nil {
		return r, err
	}
	perMinute := float64(tr.Bucket / time.Minute)
	window := rateWindow.Minutes()
	for _, c := range counts {
		i := int(c.Minute.Sub(start) / tr.Bucket)
		if c.Minute.Before(start) || i >= n {
			continue
		}
		v := float64(c.N)
		inWindow := !c.Minute.Before(r.Start)
		switch c.Type {
		case fenceview.EventGrant:
			r.Buckets[i].Grants += v / perMinute
			if inWindow {
				r.Now.Grants += v / window
			}
		case fenceview.EventAccept:
			r.Buckets[i].Accepted += v / perMinute
			if inWindow {
				r.Now.Accepted += v / window
			}
		case fenceview.EventReject:
			r.Buckets[i].Refused += v / perMinute
			if inWindow {
				r.Now.Refused += v / window
			}
		}
	}
	for _, b := range r.Buckets {
		r.Max = max(r.Max, b.Grants, b.Accepted, b.Refused)
	}
	return r, nil
}

// TableQuery is the overview table's state, all of it in the URL: prefix,
// sort column and direction, and the position after which the page starts.
type TableQuery struct {
	Prefix string
	Sort   string
	Desc   bool
	After  string // an encoded fenceview.ResourceKey; "" for the first page
	Range  string
}

func parseTable(q url.Values) (TableQuery, *fenceview.ResourceKey, error) {
	t := TableQuery{Prefix: q.Get("q"), Sort: q.Get("sort"), Desc: q.Get("dir") == "desc", After: q.Get("after"), Range: q.Get("range")}
	if len(t.Prefix) > 160 {
		return t, nil, fmt.Errorf("a search is at most 160 bytes")
	}
	if t.Sort == "" {
		t.Sort = fenceview.SortID
	}
	if !slices.Contains(fenceview.SortKeys, t.Sort) {
		return t, nil, fmt.Errorf("unknown sort %q", t.Sort)
	}
	if t.After == "" {
		return t, nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(t.After)
	var k fenceview.ResourceKey
	if err != nil || len(raw) > 1024 || json.Unmarshal(raw, &k) != nil {
		return t, nil, fmt.Errorf("a bad page position")
	}
	return t, &k, nil
}

func encodeKey(k fenceview.ResourceKey) string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

// url is the overview with this table state changed by set.
func (t TableQuery) url(set func(*TableQuery)) string {
	c := t
	set(&c)
	q := url.Values{}
	if c.Prefix != "" {
		q.Set("q", c.Prefix)
	}
	if c.Sort != fenceview.SortID {
		q.Set("sort", c.Sort)
	}
	if c.Desc {
		q.Set("dir", "desc")
	}
	if c.After != "" {
		q.Set("after", c.After)
	}
	if c.Range != "" && c.Range != timeRanges[0].Name {
		q.Set("range", c.Range)
	}
	if len(q) == 0 {
		return "/"
	}
	return "/?" + q.Encode()
}

// SortURL is the link of a column header: the column ascending, or the
// other way round when it is already the sort; always the first page.
func (t TableQuery) SortURL(col string) string {
	return t.url(func(c *TableQuery) {
		c.Desc = c.Sort == col && !c.Desc
		if c.Sort != col {
			// Counts read best from the largest; ids and holders from A.
			c.Desc = col != fenceview.SortID && col != fenceview.SortHolder
		}
		c.Sort, c.After = col, ""
	})
}

// sortColumn is a column of the overview table that sorts it.
type sortColumn struct{ Key, Label, Class string }

// The sortable columns before the lease and the last hour, which do not
// sort, and after them.
var (
	resourceColumns = []sortColumn{
		{fenceview.SortID, "Resource", ""},
		{fenceview.SortHWM, "HWM", "num"},
		{fenceview.SortLastToken, "Last token", "num opt"},
		{fenceview.SortHolder, "Holder", ""},
	}
	countColumns = []sortColumn{
		{fenceview.SortAccepted, "Accepted", "num opt"},
		{fenceview.SortRejected, "Refused", "num"},
	}
)

// AriaSort is the aria-sort of a column header.
func (t TableQuery) AriaSort(col string) string {
	switch {
	case t.Sort != col:
		return "none"
	case t.Desc:
		return "descending"
	}
	return "ascending"
}

// RangeURL switches the rates' time range, keeping the table as it is.
func (t TableQuery) RangeURL(name string) string {
	return t.url(func(c *TableQuery) { c.Range = name })
}

// sparkBuckets is the number of points in a resource's sparkline: its
// events over the last hour, five minutes a point.
const sparkBuckets = 12

// sparkRead bounds the events a sparkline reads per row.
const sparkRead = 200

// sparkline counts a resource's events per five minutes over the hour up
// to end, the instant the page is drawn: every event the page shows
// elsewhere (the feed, the row's counts) falls in it, and its buckets are
// whole five minutes counted back from end, so the last one does not dip
// while a minute runs. A resource busier than sparkRead events an hour is
// counted from its newest ones only: more says so, and its count, all of
// them in the hour, reads "at least".
func (h *Handler) sparkline(ctx context.Context, id string, end time.Time) (out []int, more bool, err error) {
	events, err := h.History.ResourceEvents(ctx, id, sparkRead)
	if err != nil {
		return nil, false, err
	}
	start := end.Add(-time.Hour)
	out = make([]int, sparkBuckets)
	for _, e := range events {
		if !e.At.After(start) {
			break // newest first: the rest are older
		}
		i := int(e.At.Sub(start) / (5 * time.Minute))
		out[min(max(i, 0), sparkBuckets-1)]++ // an event at end is in the last bucket
	}
	more = len(events) == sparkRead && events[len(events)-1].At.After(start)
	return out, more, nil
}

// HolderData is the page of one holder: every lock it holds now, and its
// recent events.
type HolderData struct {
	Meta
	Holder      string
	Rows        []ResourceRow
	Capped      bool
	History     []fenceview.Event // newest first
	HistoryNote string
}

const holderRowsMax = 500

// A holder's recent history is its newest holderHistoryMax events among
// the last holderScan recorded: a bounded read, whatever the history's size.
const (
	holderHistoryMax = 50
	holderScan       = 20_000
)

func (h *Handler) holder(w http.ResponseWriter, r *http.Request) {
	holder := r.PathValue("holder")
	if err := guard.ValidateHolderID(holder); err != nil {
		h.errorPage(w, r, http.StatusBadRequest, "Not a holder id", "A holder id is 1 to 80 bytes of UTF-8 without control characters.")
		return
	}
	d := HolderData{Meta: h.meta(r.Context(), holder, ""), Holder: holder}
	d.Page = "holder"
	now := h.Now()
	p := h.Locks.SelectResources(fenceview.ResourceQuery{Sort: fenceview.SortHolder, After: &fenceview.ResourceKey{Str: holder}, Limit: holderRowsMax + 1,
		Scope: auth.FromContext(r.Context()).Scope()})
	for _, res := range p.Resources {
		if res.Holder != holder {
			break
		}
		d.Rows = append(d.Rows, ResourceRow{Resource: res, RemainingMs: max(res.ExpiresAt.Sub(now).Milliseconds(), 0)})
	}
	if len(d.Rows) > holderRowsMax {
		d.Rows, d.Capped = d.Rows[:holderRowsMax], true
	}
	events, err := h.History.HolderEvents(r.Context(), holder, auth.FromContext(r.Context()).Resources, holderScan, holderHistoryMax)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	d.History = events
	d.HistoryNote = "Its newest " + group(holderHistoryMax) + " events among the last " + group(holderScan) + " recorded, newest first."
	if len(events) == 0 {
		d.HistoryNote = "No events of this holder among the last " + group(holderScan) + " recorded."
	}
	h.render(w, r, http.StatusOK, HolderPage(d))
}

func holderURL(holder string) string { return "/holders/" + url.PathEscape(holder) }

// MetricsData is the readable metrics page.
type MetricsData struct {
	Meta
	M      fenceview.Metrics
	Rates  Rates
	Series []MetricSeries // from the Prometheus registry, when there is one
}

// MetricSeries is a metric made readable: a name, a help text and values.
type MetricSeries struct {
	Name, Help string
	Values     []MetricValue
}

// MetricValue is one labelled value, already formatted, and the instant
// it names when it is a time.
type MetricValue struct {
	Labels string
	Value  string
	At     time.Time
}

func (h *Handler) metricsPage(w http.ResponseWriter, r *http.Request) {
	if !auth.FromContext(r.Context()).Unrestricted() {
		h.errorPage(w, r, http.StatusForbidden, "Not for this key", "The metrics count every resource; this key sees only some of them.")
		return
	}
	d := MetricsData{Meta: h.meta(r.Context(), "Metrics", "metrics"), M: h.Metrics.Metrics()}
	d.Page = "metrics"
	var err error
	if d.Rates, err = h.rates(r.Context(), "hour"); err != nil {
		h.serverError(w, r, err)
		return
	}
	if h.Gatherer != nil {
		fams, err := h.Gatherer.Gather()
		if err != nil {
			h.Logger.Error("gathering metrics", "err", err)
		}
		d.Series = readable(fams)
	}
	h.render(w, r, http.StatusOK, MetricsPage(d))
}

// rate is a per-minute rate in the one format of every rate: one
// decimal, digits grouped as counts are ("1,234.5"); a rate too small for
// a decimal says so rather than reading as none.
func rate(f float64) string {
	if f > 0 && f < 0.05 {
		return "< 0.1"
	}
	whole, frac := math.Modf(math.Round(f*10) / 10)
	return group(int64(whole)) + "." + strconv.Itoa(int(math.Round(frac*10)))
}

func reasonLabel(reason string, n int64) string {
	return reason + " (" + group(n) + ")"
}

// The rates chart's view box: about the width the overview draws it at,
// so its labels keep their size; the plot leaves room for the y axis.
const (
	rateW, rateH        = 1200.0, 196.0
	rateLeft, rateRight = 52.0, 1192.0
	rateTop, rateBot    = 10.0, 170.0
	rateTicksMax        = 4
)

// rateTop is the value at the top of the y axis: a round number at or
// above the tallest bar.
func rateTopOf(r Rates) (top, step float64) {
	step = 1
	for r.Max/step > rateTicksMax {
		switch {
		case strconv.FormatFloat(step, 'f', -1, 64)[0] == '1':
			step *= 2
		case strconv.FormatFloat(step, 'f', -1, 64)[0] == '2':
			step = step / 2 * 5
		default:
			step *= 2
		}
	}
	for r.Max > 0 && r.Max <= step*rateTicksMax/10 && step > 0.1 {
		step /= 10 // a quiet range: ticks of tenths rather than one flat line
	}
	top = math.Ceil(r.Max/step-1e-9) * step
	if top == 0 {
		top = step
	}
	return top, step
}

// RateTick is a y-axis label of the rates chart.
type RateTick struct {
	Y     float64
	Label string
}

func rateTicks(r Rates) []RateTick {
	top, step := rateTopOf(r)
	var out []RateTick
	for i := 0; float64(i)*step <= top+1e-9; i++ {
		v := float64(i) * step
		label := strconv.FormatFloat(v, 'f', 1, 64) // steps of tenths
		if step >= 1 {
			label = strconv.FormatFloat(v, 'f', 0, 64)
		}
		out = append(out, RateTick{rateBot - (rateBot-rateTop)*v/top, label})
	}
	return out
}

// rateX is where an instant of the range goes on the rates chart.
func rateX(r Rates, t time.Time) float64 {
	start := r.End.Add(-r.Range.Span)
	return rateLeft + (rateRight-rateLeft)*float64(t.Sub(start))/float64(r.Range.Span)
}

// ratePoints is one series of the rates chart as SVG polyline points,
// each bucket at its end: the instant its count is complete.
func ratePoints(r Rates, s rateKind) string {
	n := len(r.Buckets)
	if n == 0 {
		return ""
	}
	top, _ := rateTopOf(r)
	var b strings.Builder
	for _, k := range r.Buckets {
		v := s.Of(k.RateNow)
		x := rateX(r, k.At.Add(r.Range.Bucket))
		y := rateBot - (rateBot-rateTop)*v/top
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	return strings.TrimSpace(b.String())
}

// RateTimeTick is a time on the rates chart's x axis.
type RateTimeTick struct {
	X      float64
	At     time.Time
	Anchor string
}

// rateTimeTicks are five times along the range, its end the last.
func rateTimeTicks(r Rates) []RateTimeTick {
	const n = 4
	start := r.End.Add(-r.Range.Span)
	var out []RateTimeTick
	for i := 0; i <= n; i++ {
		at := start.Add(r.Range.Span * time.Duration(i) / n)
		out = append(out, RateTimeTick{X: rateX(r, at), At: at, Anchor: xAnchor(i, n+1)})
	}
	return out
}

// rateTimeMode is how the script shows the chart's times: hours and
// minutes within a day, with the date beyond.
func rateTimeMode(r Rates) string {
	if r.Range.Span > 24*time.Hour {
		return "day"
	}
	return "minute"
}

// sparkPoints draws a sparkline scaled to its own range, lowest to
// highest, so a steady resource and a busy one do not look alike; the
// numbers beside it say how many.
func sparkPoints(p []int) string {
	lo, hi := math.MaxInt, 0
	for _, v := range p {
		lo, hi = min(lo, v), max(hi, v)
	}
	var b strings.Builder
	for i, v := range p {
		y := 8.0 // flat: a line through the middle
		if hi > lo {
			y = 15 - 14*float64(v-lo)/float64(hi-lo)
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", 60*float64(i)/float64(max(len(p)-1, 1)), y)
	}
	return strings.TrimSpace(b.String())
}

func sparkTotal(p []int) int {
	n := 0
	for _, v := range p {
		n += v
	}
	return n
}

// sparkCount is the number beside a sparkline, with what it counts.
func sparkCount(p []int, more bool) string {
	if more {
		return "≥ " + group(sparkTotal(p)) + " events"
	}
	return plural(sparkTotal(p), "event", "events")
}

func sparkLabel(p []int, more bool) string {
	lo, hi := math.MaxInt, 0
	for _, v := range p {
		lo, hi = min(lo, v), max(hi, v)
	}
	s := sparkCount(p, more) + " in the hour before this page was drawn, " + group(lo) + " to " + group(hi) + " per 5 minutes"
	if more {
		s += ", of its newest " + group(sparkRead) + " events"
	}
	return s
}

// liveAdd says whether the script may insert rows for resources it hears
// of: only on the first page of the id order, where it knows the place.
func liveAdd(d OverviewData) string {
	if d.Table.Sort == "id" && !d.Table.Desc && d.Table.After == "" && d.NextURL == "" {
		return "true"
	}
	return "false"
}

// option is an entry of a choice list as the form shows it.
type option struct {
	Value, Text string
	Selected    bool
}

// options are a choice list with chosen selected; a choice the list lacks
// (no rows now) stays in it, as missing, so the form still shows it.
func options(cs []Choice, chosen string, text func(Choice) string, missing string) []option {
	out := make([]option, 0, len(cs)+1)
	found := false
	for _, c := range cs {
		out = append(out, option{c.Value, text(c), c.Value == chosen})
		found = found || c.Value == chosen
	}
	if chosen != "" && !found {
		out = append(out, option{chosen, missing, true})
	}
	return out
}

// ReasonOptions are the reason field's choices, each with its count.
func (d RejectionsData) ReasonOptions() []option {
	return options(d.Reasons, d.Form.Reason, Choice.Label, d.Form.Reason+" (0)")
}

// SourceOptions are the source field's choices, by their key's name.
func (d RejectionsData) SourceOptions() []option {
	return options(d.Sources, d.Form.Source, func(c Choice) string { return d.Names.Source(c.Value) + c.CountText() }, d.Form.Source)
}

// bucketWords is a bucket's width in words: "minute", "15 minutes".
func bucketWords(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "minute"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	case d == time.Hour:
		return "hour"
	}
	return strconv.Itoa(int(d/time.Hour)) + " hours"
}
