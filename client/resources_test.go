package client_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
)

// /v1/resources is paged; a restarting guard still gets every mark.
func TestHighWaterMarksReadsEveryPage(t *testing.T) {
	_, c := start(t, fenceviewtest.Config{})
	ctx := context.Background()
	for batch := 0; batch < 3; batch++ {
		var reports []client.Report
		for i := 0; i < 900; i++ {
			n := batch*900 + i
			reports = append(reports, client.Report{Resource: fmt.Sprintf("r/%04d", n), Source: "p",
				Decision: guard.Decision{Accepted: true, Presented: int64(n + 1)}})
		}
		if _, err := c.Report(ctx, reports...); err != nil {
			t.Fatal(err)
		}
	}
	marks, err := c.HighWaterMarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 2700 || marks["r/0000"] != 1 || marks["r/2699"] != 2700 {
		t.Fatalf("%d marks, r/2699 = %d", len(marks), marks["r/2699"])
	}
}
