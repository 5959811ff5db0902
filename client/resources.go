package client

import (
	"context"
	"net/http"
	"net/url"
)

// maxListResponse bounds what is read of one page of the resource list.
const maxListResponse = 8 << 20

// HighWaterMarks returns the high-water mark of every resource the server
// knows (GET /v1/resources, page by page), for a guard that restarts and
// must refuse every token the server's resources already moved past.
// Resources without a mark are left out.
func (c *Client) HighWaterMarks(ctx context.Context) (map[string]int64, error) {
	marks := make(map[string]int64)
	cursor := ""
	for {
		var body struct {
			Resources []struct {
				ResourceID    string `json:"resourceId"`
				HighWaterMark int64  `json:"highWaterMark"`
			} `json:"resources"`
			Next *string `json:"next"`
		}
		u := c.path("/v1/resources")
		q := url.Values{"limit": {"1000"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		u.RawQuery = q.Encode()
		if err := c.callLimit(ctx, maxListResponse, http.MethodGet, u, nil, nil, &body, refusal{}); err != nil {
			return nil, err
		}
		for _, r := range body.Resources {
			if r.HighWaterMark > 0 {
				marks[r.ResourceID] = r.HighWaterMark
			}
		}
		if body.Next == nil || *body.Next == "" || *body.Next == cursor {
			return marks, nil
		}
		cursor = *body.Next
	}
}
