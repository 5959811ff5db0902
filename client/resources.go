package client

import (
	"context"
	"net/http"
)

// maxListResponse bounds what is read of a listing of every resource.
const maxListResponse = 64 << 20

// HighWaterMarks returns the high-water mark of every resource the server
// knows (GET /v1/resources), for a guard that restarts and must refuse
// every token the server's resources already moved past. Resources without
// a mark are left out.
func (c *Client) HighWaterMarks(ctx context.Context) (map[string]int64, error) {
	var body struct {
		Resources []struct {
			ResourceID    string `json:"resourceId"`
			HighWaterMark int64  `json:"highWaterMark"`
		} `json:"resources"`
	}
	if err := c.callLimit(ctx, maxListResponse, http.MethodGet, c.path("/v1/resources"), nil, nil, &body, nil); err != nil {
		return nil, err
	}
	marks := make(map[string]int64, len(body.Resources))
	for _, r := range body.Resources {
		if r.HighWaterMark > 0 {
			marks[r.ResourceID] = r.HighWaterMark
		}
	}
	return marks, nil
}
