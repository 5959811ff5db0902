package loopport

import (
	"net"
	"strconv"
	"testing"
)

// Picked ports are distinct, below the ephemeral range, and bindable.
func TestPicksAreDistinctAndBelowTheEphemeralRange(t *testing.T) {
	addrs, err := Picks(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		if port < low || port >= ceiling {
			t.Fatalf("%s is outside [%d, %d)", a, low, ceiling)
		}
	}
	ln, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatalf("a picked port cannot be bound: %v", err)
	}
	defer ln.Close()
	// The same address again is taken, and InUse says so.
	_, err = net.Listen("tcp", addrs[0])
	if !InUse(err) {
		t.Fatalf("InUse(%v) = false for a port already listened on", err)
	}
	if InUse(nil) {
		t.Fatal("InUse(nil) = true")
	}
}
