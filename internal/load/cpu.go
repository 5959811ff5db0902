package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// CPU is what an operation cost the machine over the measured time: CPU
// time of the server (Config.ServerPID) and of this load, per operation (a
// grant cycle, a fenced write or a stale write), and how busy all CPUs
// were. On a machine the load shares with the server, throughput stops
// growing when Busy nears 1; the costs per operation then say where to cut.
type CPU struct {
	ServerUs float64 `json:"serverUsPerOp,omitempty"` // 0 without a ServerPID
	LoadUs   float64 `json:"loadUsPerOp"`
	Busy     float64 `json:"machineBusy"` // fraction of all CPUs' time, 0-1
	CPUs     int     `json:"cpus"`
}

func (c *CPU) String() string {
	s := ""
	if c.ServerUs > 0 {
		s = fmt.Sprintf("server %.0f us, ", c.ServerUs)
	}
	return fmt.Sprintf("%sload %.0f us per operation; machine %.0f%% busy (%d CPUs)", s, c.LoadUs, 100*c.Busy, c.CPUs)
}

// cpuSample is the CPU time used so far by the server, this process and
// the whole machine.
type cpuSample struct {
	server, load time.Duration
	busy, total  int64 // ticks of all CPUs
}

// clockTicks is Linux's USER_HZ, the unit of CPU times in /proc: 100 on
// every architecture Go runs on.
const clockTicks = 100

// errNoProc: CPU accounting reads Linux's /proc.
var errNoProc = errors.New("CPU accounting needs Linux's /proc")

func takeCPUSample(serverPID int) (cpuSample, error) {
	var s cpuSample
	var err error
	if serverPID > 0 {
		if s.server, err = processCPU(strconv.Itoa(serverPID)); err != nil {
			return s, err
		}
	}
	if s.load, err = processCPU("self"); err != nil {
		return s, err
	}
	s.busy, s.total, err = machineCPU()
	return s, err
}

// processCPU reads the user and system time of process pid (all its
// threads) from /proc/<pid>/stat.
func processCPU(pid string) (time.Duration, error) {
	if runtime.GOOS != "linux" {
		return 0, errNoProc
	}
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	d, err := parseProcStat(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%s/stat: %w", pid, err)
	}
	return d, nil
}

// parseProcStat gives the user plus system time in a /proc/<pid>/stat
// line. The command name, field 2, is in parentheses and may hold spaces
// and parentheses itself: fields count from the last ')'. utime and stime
// are fields 14 and 15.
func parseProcStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("too few fields")
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("CPU time %q", v)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// machineCPU reads the busy and total ticks of all CPUs from /proc/stat
// (idle and iowait are not busy).
func machineCPU() (busy, total int64, err error) {
	if runtime.GOOS != "linux" {
		return 0, 0, errNoProc
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, errors.New("/proc/stat: unexpected format")
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// measureCPU samples CPU times at from and at to, and returns a func
// that waits for the second sample and gives the cost of ops operations.
// It gives nil when the run was cancelled or the times cannot be read.
func measureCPU(ctx context.Context, serverPID int, from, to time.Time) func(ops int64) *CPU {
	samples := make(chan [2]cpuSample, 1)
	go func() {
		defer close(samples)
		var s [2]cpuSample
		for i, at := range []time.Time{from, to} {
			t := time.NewTimer(time.Until(at))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			var err error
			if s[i], err = takeCPUSample(serverPID); err != nil {
				return
			}
		}
		samples <- s
	}()
	return func(ops int64) *CPU {
		s, ok := <-samples
		if !ok || ops == 0 {
			return nil
		}
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(ops) }
		c := &CPU{
			ServerUs: per(s[1].server - s[0].server),
			LoadUs:   per(s[1].load - s[0].load),
			CPUs:     runtime.NumCPU(),
		}
		if total := s[1].total - s[0].total; total > 0 {
			c.Busy = float64(s[1].busy-s[0].busy) / float64(total)
		}
		return c
	}
}
