package dbtest_test

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fenceview/fenceview/internal/dbtest"
)

// Each server starts, accepts TCP on loopback, and is gone (its PID
// reaped, its port closed) once its test's cleanup ran.
func TestServersStartAndStop(t *testing.T) {
	for _, s := range []struct {
		name  string
		start func(testing.TB) *dbtest.Server
	}{{"redis", func(t testing.TB) *dbtest.Server { return dbtest.Redis(t) }}, {"mariadb", func(t testing.TB) *dbtest.Server { return dbtest.MariaDB(t) }}, {"postgresql", dbtest.PostgreSQL}} {
		var srv *dbtest.Server
		t.Run(s.name, func(t *testing.T) {
			srv = s.start(t)
			t.Logf("%s at %s, pid %d", srv.Version, srv.Addr, srv.PID())
			c, err := net.Dial("tcp", srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if uid := processUID(t, srv.PID()); os.Geteuid() == 0 && uid == 0 {
				t.Errorf("%s runs as root; tests run as root start servers as an unprivileged user", s.name)
			}
		})
		if srv == nil {
			continue // skipped
		}
		if err := syscall.Kill(srv.PID(), 0); err != syscall.ESRCH {
			t.Errorf("%s: pid %d still exists after the test (kill 0: %v)", s.name, srv.PID(), err)
		}
		if c, err := net.Dial("tcp", srv.Addr); err == nil {
			c.Close()
			t.Errorf("%s: %s still accepts connections after the test", s.name, srv.Addr)
		}
	}
}

// processUID reads the real uid of pid from /proc.
func processUID(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if os.IsNotExist(err) && os.Geteuid() != 0 {
		return -1 // no /proc (macOS): nothing to check when not root anyway
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line for pid %d", pid)
	return -1
}
