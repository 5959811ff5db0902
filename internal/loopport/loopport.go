// Package loopport picks loopback TCP ports for servers that must be told
// their port before they listen: etcd members that learn each other's peer
// URLs up front, database servers and scripts started by tests.
//
// A port chosen by listening on 127.0.0.1:0 and closing comes from the
// kernel's ephemeral range, the same range every outgoing connection's
// local port is taken from; under a busy `go test ./...` another test's
// connection can take it before the server binds it. The ports here come
// from below that range, which connections never use. Two tests can still
// pick the same port at the same moment, so a caller whose server fails
// with EADDRINUSE picks again (InUse tells).
package loopport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// low is the first port handed out: above the well-known and most
// registered services' ports.
const low = 10000

var (
	mu      sync.Mutex
	given   = map[int]bool{} // never hand the same port out twice in a process
	ceiling = ephemeralStart()
)

// Pick returns "127.0.0.1:port" for a port that was free a moment ago and
// lies below the ephemeral range.
func Pick() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := low + rand.IntN(ceiling-low)
		if given[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		given[port] = true
		return addr, nil
	}
	return "", errors.New("loopport: no free loopback port below the ephemeral range")
}

// Picks returns n distinct addresses from Pick.
func Picks(n int) ([]string, error) {
	out := make([]string, 0, n)
	for range n {
		a, err := Pick()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// InUse reports whether err says an address was already taken, as a
// listener's error does (or its text, for servers that only print it).
func InUse(err error) bool {
	return err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
}

// ephemeralStart reads where the kernel's ephemeral ports begin, 32768
// (Linux's default) when it cannot say.
func ephemeralStart() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= low+1000 {
		return fallback
	}
	return lo
}
