package dashboard

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
)

// Chart is a resource's tokens over time, laid out for a server-rendered
// SVG: grants, accepted writes and rejections as marks of different shapes,
// and the high-water mark as a step line.
type Chart struct {
	Width, Height            float64
	Left, Right, Top, Bot    float64 // the plot area
	Marks                    []Mark
	HWM                      string // SVG path of the high-water mark; "" when none
	YTicks, XTicks           []Tick
	Grants, Accepts, Rejects int
	Summary                  string
}

// Mark is one event on the chart.
type Mark struct {
	Kind  string // grant, accept or reject
	X, Y  float64
	Title string
}

// Tick is an axis label at a position; a time axis's tick has its
// instant, which the script shows in the viewer's zone.
type Tick struct {
	Pos   float64
	Label string
	At    time.Time
}

// newChart lays out events (newest first, as the history gives them),
// sources by their key's name where n knows it. The view box is about the
// size the resource page draws it at, so its 13 px labels stay 13 px.
// The step line follows the issuer's rule for the mark, as of res: a claim
// above the last token issued raises the alarm, not the mark, so the line
// ends where the Lock card's high-water mark is.
func newChart(events []fenceview.Event, n KeyNames, res fenceview.Resource) Chart {
	c := Chart{Width: 760, Height: 340, Left: 64, Right: 744, Top: 16, Bot: 292}
	pts := chartPoints(events)
	if len(pts) == 0 {
		c.Summary = "No grants or fenced writes yet."
		return c
	}
	y := c.tokenAxis(pts)
	x := c.timeAxis(pts)
	c.plot(pts, x, y, n, res)
	t0, t1 := pts[0].At, pts[len(pts)-1].At
	c.Summary = plural(c.Grants, "grant", "grants") + ", " + plural(c.Accepts, "accepted write", "accepted writes") + " and " +
		plural(c.Rejects, "rejection", "rejections") + " between " + exactUTC(t0) + " and " + exactUTC(t1) + "."
	return c
}

// chartPoints are the events the chart draws, oldest first: grants and
// fencing decisions (events come newest first).
func chartPoints(events []fenceview.Event) []fenceview.Event {
	var pts []fenceview.Event
	for i := len(events) - 1; i >= 0; i-- {
		switch events[i].Type {
		case fenceview.EventGrant, fenceview.EventAccept, fenceview.EventReject:
			pts = append(pts, events[i])
		}
	}
	return pts
}

// tokenAxis lays out the y axis over the tokens pts show, at round
// steps, widening the left margin for its labels, and returns where a
// token goes.
func (c *Chart) tokenAxis(pts []fenceview.Event) (y func(int64) float64) {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, e := range pts {
		for _, t := range []int64{e.Token, e.Presented, e.Required} {
			if e.Type != fenceview.EventReject && t != e.Token {
				continue
			}
			if t > 0 {
				lo, hi = min(lo, t), max(hi, t)
			}
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	step := niceStep(hi - lo)
	lo = max(lo/step*step-step, 0)
	if hi > math.MaxInt64-step { // tokens near the top: no room for a round tick above
		hi = math.MaxInt64
	} else {
		hi = (hi/step + 1) * step
	}
	y = func(t int64) float64 {
		return c.Bot - float64(t-lo)/float64(hi-lo)*(c.Bot-c.Top)
	}
	widest := 0.0
	for t := lo; ; t += step { // stepping by count, so a tick near 2^63 cannot wrap
		label := group(t)
		// 13 px digits are about 8 units wide, the group commas half that.
		widest = max(widest, 8*float64(len(label))-4*float64(strings.Count(label, ",")))
		c.YTicks = append(c.YTicks, Tick{Pos: y(t), Label: label})
		if t > hi-step {
			break
		}
	}
	// Room for the widest label.
	c.Left = max(c.Left, 34+widest)
	return y
}

// timeAxis lays out the x axis: time, unless everything happened in one
// instant, then the order. It returns where the i-th point goes. Call it
// after tokenAxis, which sets the left margin.
func (c *Chart) timeAxis(pts []fenceview.Event) (x func(i int) float64) {
	t0, t1 := pts[0].At, pts[len(pts)-1].At
	span := t1.Sub(t0)
	const pad = 12.0
	w := c.Right - c.Left - 2*pad
	x = func(i int) float64 {
		if span <= 0 {
			if len(pts) == 1 {
				return c.Left + pad + w/2
			}
			return c.Left + pad + w*float64(i)/float64(len(pts)-1)
		}
		return c.Left + pad + w*float64(pts[i].At.Sub(t0))/float64(span)
	}
	c.XTicks = []Tick{{Pos: x(0), Label: clockUTC(t0), At: t0}}
	if span > 0 {
		// Five times along the axis when the span has seconds to tell apart.
		ticks := 1
		if span >= 4*time.Second {
			ticks = 4
		}
		for i := 1; i <= ticks; i++ {
			at := t0.Add(span * time.Duration(i) / time.Duration(ticks))
			c.XTicks = append(c.XTicks, Tick{Pos: c.Left + pad + w*float64(i)/float64(ticks), Label: clockUTC(at), At: at})
		}
	}
	return x
}

// plot places a mark for every point and draws the high-water mark as a
// step line, by the issuer's rule (internal/issuer, decide): an accepted
// token raises it, and so may the mark a refusing guard names (its
// required token; the server's own fence names the mark it already has, so
// its refusals never move the line). A superseded refusal's required token
// is the last token issued, not a mark: it moves nothing. A claim above the
// last token issued (res.LastToken) raises the alarm, never the mark.
func (c *Chart) plot(pts []fenceview.Event, x func(int) float64, y func(int64) float64, n KeyNames, res fenceview.Resource) {
	raise := func(mark, claim int64) int64 {
		if res.LastToken == 0 || claim <= res.LastToken {
			return max(mark, claim)
		}
		return mark
	}
	var hwm int64
	var path strings.Builder
	var grants []Mark
	for i, e := range pts {
		m := Mark{Kind: e.Type, X: x(i)}
		when := exactUTC(e.At)
		prev := hwm
		switch e.Type {
		case fenceview.EventGrant:
			m.Y, m.Title = y(e.Token), "granted token "+group(e.Token)+" to "+e.Holder+" at "+when
			c.Grants++
		case fenceview.EventAccept:
			m.Y, m.Title = y(e.Token), "accepted token "+group(e.Token)+from(n.Source(e.Source))+" at "+when
			hwm = raise(hwm, e.Token)
			c.Accepts++
		case fenceview.EventReject:
			m.Y = y(e.Presented)
			m.Title = "refused token " + group(e.Presented) + " (" + e.Reason + "), needed " + group(e.Required) + from(n.Source(e.Source)) + " at " + when
			if e.Reason != guard.ReasonSuperseded {
				hwm = raise(hwm, e.Required)
			}
			c.Rejects++
		}
		if hwm != prev {
			if prev == 0 {
				path.WriteString("M" + ftoa(m.X) + " " + ftoa(y(hwm)))
			} else {
				path.WriteString(" H" + ftoa(m.X) + " V" + ftoa(y(hwm)))
			}
		}
		if m.Kind == fenceview.EventGrant {
			grants = append(grants, m)
		} else {
			c.Marks = append(c.Marks, m)
		}
	}
	// Grants are rings drawn last: a write with the grant's token, a moment
	// later, sits inside its ring instead of hiding it.
	c.Marks = append(c.Marks, grants...)
	if path.Len() > 0 {
		path.WriteString(" H" + ftoa(c.Right))
		c.HWM = path.String()
	}
}

// niceStep is a round tick step showing about four intervals of span.
func niceStep(span int64) int64 {
	step := int64(1)
	for span/step > 4 {
		switch {
		case strconv.FormatInt(step, 10)[0] == '1':
			step *= 2
		case strconv.FormatInt(step, 10)[0] == '2':
			step = step / 2 * 5
		default:
			step *= 2
		}
	}
	return step
}
