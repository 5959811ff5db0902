package demo

import (
	"context"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/issuer"
)

// memStore keeps nothing: the simulation is about the service's behaviour.
type memStore struct{}

func (memStore) Apply(context.Context, []*fenceview.Resource, []fenceview.Event) error { return nil }

// The simulation tells the dashboard's stories: every resource gets grants
// and accepted writes, the plugin reports, and the paused client is fenced
// out with a stale-token rejection. Stop leaves every lock free.
func TestSimulation(t *testing.T) {
	svc := issuer.New(memStore{}, nil, 0, issuer.Config{Issuer: "demo", SweepInterval: time.Millisecond})
	defer svc.Close()
	sub := svc.Subscribe("", 1<<16)
	sim := Start(svc, Config{Speed: 200, Seed: 1})

	want := map[string]bool{
		"grant " + Orders: false, "accept " + Orders: false, "release " + Orders: false,
		"grant " + Reports: false, "renew " + Reports: false,
		"accept " + Ledger + " plugin:postgres":               false,
		"expire " + Inventory:                                 false,
		"reject " + Inventory + " demo:indexer-a stale-token": false,
	}
	missing := len(want)
	deadline := time.After(60 * time.Second) // a hang guard, not a timing assertion
	for missing > 0 {
		select {
		case batch := <-sub.Events():
			for _, e := range batch {
				for _, k := range []string{
					e.Type + " " + e.ResourceID,
					e.Type + " " + e.ResourceID + " " + e.Source,
					e.Type + " " + e.ResourceID + " " + e.Source + " " + e.Reason,
				} {
					if seen, ok := want[k]; ok && !seen {
						want[k] = true
						missing--
					}
				}
			}
		case <-sub.Lost():
			t.Fatal("subscription dropped")
		case <-deadline:
			t.Fatalf("never saw: %v", want)
		}
	}
	sim.Stop()
	for _, r := range svc.Resources() {
		if r.Holder != "" {
			t.Errorf("%s still held by %s after Stop", r.ResourceID, r.Holder)
		}
	}
}
