package main

import (
	"testing"

	"github.com/fenceview/fenceview/internal/demo"
)

// --demo keeps its simulated history out of the default database.
func TestDemoFlagDatabase(t *testing.T) {
	for _, c := range []struct {
		args []string
		db   string
		demo bool
	}{
		{nil, "fenceview.db", false},
		{[]string{"--demo"}, "fenceview-demo.db", true},
		{[]string{"-demo", "--db", "mine.db"}, "mine.db", true},
		{[]string{"--db=mine.db", "--demo"}, "mine.db", true},
	} {
		m := NewMain()
		if err := m.ParseFlags(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if m.DBPath != c.db || m.Demo != c.demo {
			t.Errorf("%v: db %q demo %v, want %q %v", c.args, m.DBPath, m.Demo, c.db, c.demo)
		}
	}
}

// With Demo set the simulated clients drive the real server, and Close
// stops them.
func TestDemoRunsAndStops(t *testing.T) {
	s := startServer(t, func(m *Main) { m.Demo = true })
	events := s.stream("?resource=" + demo.Orders)
	if e := events.next(); e.Type != "grant" || e.ResourceID != demo.Orders {
		t.Fatalf("first demo event: %+v", e)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
