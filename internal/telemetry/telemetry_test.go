package telemetry

import (
	"errors"
	"testing"
	"time"
)

// A checkpoint's time and the WAL's length are recorded; a failed one is
// counted and leaves the last length standing.
func TestObserveCheckpoint(t *testing.T) {
	m := New()
	m.ObserveCheckpoint(3*time.Millisecond, 812, nil)
	m.ObserveCheckpoint(time.Millisecond, 9000, errors.New("disk I/O error"))
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, s := range f.Metric {
			switch {
			case s.Histogram != nil:
				got[f.GetName()] = float64(s.Histogram.GetSampleCount())
			case s.Counter != nil:
				got[f.GetName()] = s.Counter.GetValue()
			case s.Gauge != nil:
				got[f.GetName()] = s.Gauge.GetValue()
			}
		}
	}
	want := map[string]float64{
		"fenceview_sqlite_checkpoint_seconds":        1,
		"fenceview_sqlite_checkpoint_failures_total": 1,
		"fenceview_sqlite_wal_frames":                812,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}
}
