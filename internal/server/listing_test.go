package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/server"
	"github.com/fenceview/fenceview/internal/servertest"
)

// countingLists is the server's lock service, counting the ids a list
// asks its scope about: the entries it visits.
type countingLists struct {
	fenceview.Services
	visited *atomic.Int64
}

func (c countingLists) ListResources(prefix, after string, limit int, scope fenceview.Scope) ([]fenceview.Resource, bool) {
	sees := scope.Sees
	scope.Sees = func(id string) bool {
		c.visited.Add(1)
		return sees == nil || sees(id)
	}
	return c.Services.ListResources(prefix, after, limit, scope)
}

// GET /v1/resources with a key limited to a prefix visits that prefix's
// resources, not the 2,000 of another team that sort before them.
func TestPrefixLimitedListVisitsItsOwnPrefix(t *testing.T) {
	s := servertest.Start(t, server.Config{AdminToken: admin})
	ctx := context.Background()
	for batch := range 2 {
		var reports []fenceview.Report
		for i := range 1000 {
			reports = append(reports, fenceview.Report{ResourceID: fmt.Sprintf("team-a/%d-%d", batch, i), Token: 1, Accepted: true, Source: "seed"})
		}
		if _, err := s.Service.Report(ctx, reports); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		call(t, nil, "POST", s.URL()+fmt.Sprintf("/v1/locks/team-b%%2F%d/acquire", i), admin, acquireBody("h"))
	}
	_, b := newKey(t, s, "team-b", "viewer", "team-b/")
	var visited atomic.Int64
	s.API.Service = countingLists{Services: s.API.Service, visited: &visited}

	res := call(t, nil, "GET", s.URL()+"/v1/resources?limit=3", b, nil)
	if res.Status != 200 || strings.Contains(res.Raw, "team-a") || strings.Count(res.Raw, `"resourceId"`) != 3 || res.Body["next"] == nil {
		t.Fatalf("a page of team-b's: %d %s", res.Status, res.Raw)
	}
	if n := visited.Load(); n > 4 {
		t.Fatalf("a page of 3 visited %d entries; want at most 4 (team-a's 2,000 sort first)", n)
	}
}
