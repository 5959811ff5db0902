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
// change (a lock-delay, a semaphore's permits, a leader's value, the key
// that holds the lock). SharedPhase and Expired are kept in memory only
// (see fenceview.Resource), so they are left out.
func TestRecordsKeepEveryField(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_123).UTC()
	r := fenceview.Resource{ResourceID: "jobs#0", HighWaterMark: 7, LastToken: 9, Holder: "h", OwnerKey: "k",
		HoldCount: 2, Token: 9, ExpiresAt: at, GrantedAt: at.Add(-time.Second), LeaseMs: 1000, Accepted: 3, Rejected: 4,
		LastRejectionAt: at, CounterAlarm: 11, LockDelayMs: 5000, AvailableAt: at.Add(time.Minute), Permits: 8,
		Election: true, Value: "10.0.0.1"}
	got := roundTrip(t, recordOf(&r)).resource()
	if !reflect.DeepEqual(*got, r) {
		t.Fatalf("resource record:\n got %+v\nwant %+v", *got, r)
	}
	e := fenceview.Event{Seq: 5, Type: fenceview.EventExpire, ResourceID: "r", Token: 9, Holder: "h", Presented: 1,
		Required: 2, Reason: "lease-expired", Source: "s", At: at, Value: "v", LockDelayMs: 5000, Permits: 8, Access: fenceview.AccessRead}
	if got := roundTrip(t, eventRecordOf(e)).event(); !reflect.DeepEqual(got, e) {
		t.Fatalf("event record:\n got %+v\nwant %+v", got, e)
	}
}

// A record written before the holder's key was kept loads as held with no
// key, as the lock was taken.
func TestRecordWithoutOwnerKeyLoads(t *testing.T) {
	var rec resourceRecord
	if err := json.Unmarshal([]byte(`{"id":"r","last":3,"holder":"h","holds":1,"token":3}`), &rec); err != nil {
		t.Fatal(err)
	}
	if r := rec.resource(); r.Holder != "h" || r.OwnerKey != "" || r.Token != 3 {
		t.Fatalf("old record: %+v", r)
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

// A lock held in shared mode keeps its readers oldest first, with their
// holds, across a leader change: the next leader lists them (GET
// /v1/locks) and hands off in the order the last one granted.
func TestRecordsKeepReadersInOrder(t *testing.T) {
	at := time.UnixMilli(1_780_000_000_123).UTC()
	var readers []fenceview.Hold
	for i, h := range []string{"rw0", "rw5", "rw2", "rw1"} {
		readers = append(readers, fenceview.Hold{Holder: h, OwnerKey: "k" + h, HoldCount: 1 + i%2,
			GrantedAt: at.Add(time.Duration(i) * time.Second), ExpiresAt: at.Add(time.Hour), LeaseMs: 600000, LockDelayMs: int64(i)})
	}
	r := fenceview.Resource{ResourceID: "lin-rw", LastToken: 4, Token: 4, Holder: "rw0", HoldCount: 1, Readers: readers}
	got := roundTrip(t, recordOf(&r)).resource()
	if !reflect.DeepEqual(got.Readers, readers) || got.Token != 4 || got.LastToken != 4 {
		t.Fatalf("readers after a leader change:\n got %+v (token %d, last %d)\nwant %+v", got.Readers, got.Token, got.LastToken, readers)
	}
}
