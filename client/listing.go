package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/wire"
	"github.com/fenceview/fenceview/internal/wire/op"
)

// Resource is what the server knows of one resource: its token counter,
// its high-water mark, its lock and its fencing history.
type Resource struct {
	Resource        string
	HighWaterMark   int64
	LastToken       int64 // the last token issued; 0 when none
	Holder          string
	HoldCount       int
	ExpiresAt       time.Time // zero when free
	Accepted        int64
	Rejected        int64
	LastRejectionAt time.Time
	CounterAlarm    int64 // the mark that raised the counter alarm; 0 when none
}

func resourceOf(w wire.Resource) Resource {
	return Resource{Resource: w.ResourceID, HighWaterMark: w.HighWaterMark, LastToken: w.LastToken, Holder: string(w.Holder),
		HoldCount: w.HoldCount, ExpiresAt: time.Time(w.ExpiresAt), Accepted: w.Accepted, Rejected: w.Rejected,
		LastRejectionAt: time.Time(w.LastRejectionAt), CounterAlarm: w.CounterAlarm}
}

// ResourceQuery selects a page of resources.
type ResourceQuery struct {
	Prefix string // only ids starting with it
	Limit  int    // 1..1000; 0 is the server's default (100)
	Cursor string // a previous page's Next
}

// ResourcePage is one page of resources; Next is "" on the last.
type ResourcePage struct {
	Resources []Resource
	Next      string
}

// Resources returns one page of the resources the server knows
// (GET /v1/resources), in id order.
func (c *Client) Resources(ctx context.Context, q ResourceQuery) (ResourcePage, error) {
	v := url.Values{}
	if q.Prefix != "" {
		v.Set("prefix", q.Prefix)
	}
	var out struct {
		Resources []wire.Resource `json:"resources"`
		Next      string          `json:"next"` // null on the last page
	}
	if err := c.getPage(ctx, "/v1/resources", v, q.Limit, q.Cursor, &out); err != nil {
		return ResourcePage{}, err
	}
	p := ResourcePage{Resources: make([]Resource, 0, len(out.Resources)), Next: out.Next}
	for _, w := range out.Resources {
		p.Resources = append(p.Resources, resourceOf(w))
	}
	return p, nil
}

// AllResources walks every page of Resources. It stops at the first error,
// which it yields.
func (c *Client) AllResources(ctx context.Context, q ResourceQuery) iter.Seq2[Resource, error] {
	return allPages(q.Cursor, func(cursor string) ([]Resource, string, error) {
		q.Cursor = cursor
		p, err := c.Resources(ctx, q)
		return p.Resources, p.Next, err
	})
}

// allPages walks the pages page returns from cursor on, until a page with
// no next cursor (or the same one), yielding the first error.
func allPages[T any](cursor string, page func(cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" || next == cursor {
				return
			}
			cursor = next
		}
	}
}

// HighWaterMarks returns the high-water mark of every resource the server
// knows (GET /v1/resources, page by page), for a guard that restarts and
// must refuse every token the server's resources already moved past.
// Resources without a mark are left out.
func (c *Client) HighWaterMarks(ctx context.Context) (map[string]int64, error) {
	marks := make(map[string]int64)
	for r, err := range c.AllResources(ctx, ResourceQuery{Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		if r.HighWaterMark > 0 {
			marks[r.Resource] = r.HighWaterMark
		}
	}
	return marks, nil
}

// Resource returns one resource; an *APIError with status 404 when the
// server has never seen it.
func (c *Client) Resource(ctx context.Context, resource string) (Resource, error) {
	var w wire.Resource
	if err := c.getOne(ctx, &op.Resource, resource, &w); err != nil {
		return Resource{}, err
	}
	return resourceOf(w), nil
}

// Rejection is one refused write from the server's history.
type Rejection struct {
	ID        int64 // the event's sequence number
	Resource  string
	Presented int64
	Required  int64
	Reason    string
	Source    string
	Holder    string
	At        time.Time
}

// RejectionQuery filters the rejection history; every field is optional.
type RejectionQuery struct {
	Resource, Reason, Source string
	Since, Until             time.Time // Until is exclusive
	Limit                    int       // 1..1000; 0 is the server's default (100)
	Cursor                   string    // a previous page's Next
}

// RejectionPage is one page of rejections, newest first; Next is "" on the
// last.
type RejectionPage struct {
	Rejections []Rejection
	Next       string
}

// Rejections returns one page of the rejection history (GET /v1/rejections).
func (c *Client) Rejections(ctx context.Context, q RejectionQuery) (RejectionPage, error) {
	v := url.Values{}
	for k, s := range map[string]string{"resource": q.Resource, "reason": q.Reason, "source": q.Source} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	var out struct {
		Rejections []wire.Rejection `json:"rejections"`
		Next       string           `json:"next"` // null on the last page
	}
	if err := c.getPage(ctx, "/v1/rejections", v, q.Limit, q.Cursor, &out); err != nil {
		return RejectionPage{}, err
	}
	p := RejectionPage{Rejections: make([]Rejection, 0, len(out.Rejections)), Next: out.Next}
	for _, r := range out.Rejections {
		p.Rejections = append(p.Rejections, Rejection{ID: r.ID, Resource: r.ResourceID, Presented: r.Presented, Required: r.Required,
			Reason: r.Reason, Source: r.Source, Holder: r.Holder, At: time.Time(r.At)})
	}
	return p, nil
}

// AllRejections walks every page of Rejections, newest first.
func (c *Client) AllRejections(ctx context.Context, q RejectionQuery) iter.Seq2[Rejection, error] {
	return allPages(q.Cursor, func(cursor string) ([]Rejection, string, error) {
		q.Cursor = cursor
		p, err := c.Rejections(ctx, q)
		return p.Rejections, p.Next, err
	})
}

// ResetResult is a resource's counter after Reset.
type ResetResult struct {
	Resource      string
	LastToken     int64
	HighWaterMark int64
	NextToken     int64 // what the next grant takes
}

// Reset raises resource's token counter to at least floor and clears its
// counter alarm (POST /v1/locks/{resource}/reset), with the admin token of
// Config.AdminToken: the deliberate answer to a counter alarm, after making
// sure no token above floor is in use anywhere.
func (c *Client) Reset(ctx context.Context, resource string, floor int64) (ResetResult, error) {
	if err := guard.ValidateResourceID(resource); err != nil {
		return ResetResult{}, invalid("resource", err)
	}
	if err := guard.ValidateToken(floor); err != nil {
		return ResetResult{}, invalid("floor", fmt.Errorf("floor: %w", err))
	}
	h := http.Header{}
	if c.admin != "" {
		h.Set("Authorization", "Bearer "+c.admin)
	}
	var out struct {
		LastToken     int64 `json:"lastToken"`
		HighWaterMark int64 `json:"highWaterMark"`
		NextToken     int64 `json:"nextToken"`
	}
	if err := c.call(ctx, http.MethodPost, c.specURL(&op.Reset, resource), h, map[string]int64{"floor": floor}, &out, refusal{}); err != nil {
		return ResetResult{}, err
	}
	return ResetResult{Resource: resource, LastToken: out.LastToken, HighWaterMark: out.HighWaterMark, NextToken: out.NextToken}, nil
}

// maxListResponse bounds what is read of one page of a listing: a page of
// 1000 resources with long ids and holders passes maxResponse.
const maxListResponse = 8 << 20

// getPage GETs one page of a listing at path, filtered by v, into out:
// limit is 1..1000 (0: the server's default), cursor a previous page's
// next.
func (c *Client) getPage(ctx context.Context, path string, v url.Values, limit int, cursor string, out any) error {
	if limit != 0 {
		if limit < 1 || limit > 1000 {
			return invalid("limit", fmt.Errorf("limit %d: want 1..1000", limit))
		}
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	return c.callLimit(ctx, maxListResponse, http.MethodGet, c.pathQuery(path, v), nil, nil, out, refusal{})
}

// pathQuery is base + p with the query q.
func (c *Client) pathQuery(p string, q url.Values) *url.URL {
	u := *c.base
	u.Path = c.base.Path + p
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return &u
}
