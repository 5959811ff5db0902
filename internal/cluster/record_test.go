package cluster

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fenceview/fenceview"
)

// Every field of a resource and an event survives etcd's records: a field
// added to the domain and forgotten here would be lost at the next leader
// change (a lock-delay, a semaphore's permits, a leader's value).
func TestRecordsKeepEveryField(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_123).UTC()
	r := fenceview.Resource{ResourceID: "jobs#0", HighWaterMark: 7, LastToken: 9, Holder: "h", OwnerKey: "k",
		HoldCount: 2, Token: 9, ExpiresAt: at, GrantedAt: at.Add(-time.Second), LeaseMs: 1000, Accepted: 3, Rejected: 4,
		LastRejectionAt: at, CounterAlarm: 11, LockDelayMs: 5000, AvailableAt: at.Add(time.Minute), Permits: 8,
		Election: true, Value: "10.0.0.1"}
	owner := r.OwnerKey
	got := roundTrip(t, recordOf(&r)).resource()
	got.OwnerKey = owner // the owner is kept apart (see recordOf)
	if !reflect.DeepEqual(*got, r) {
		t.Fatalf("resource record:\n got %+v\nwant %+v", *got, r)
	}
	e := fenceview.Event{Seq: 5, Type: fenceview.EventExpire, ResourceID: "r", Token: 9, Holder: "h", Presented: 1,
		Required: 2, Reason: "lease-expired", Source: "s", At: at, Value: "v", LockDelayMs: 5000, Permits: 8}
	if got := roundTrip(t, eventRecordOf(e)).event(); !reflect.DeepEqual(got, e) {
		t.Fatalf("event record:\n got %+v\nwant %+v", got, e)
	}
}

func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
