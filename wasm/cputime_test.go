package wasm

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// onCPU reports, next to ns/op (wall time), the time the benchmark's
// thread actually ran per op ("cpu-ns/op"): on a machine shared with other
// work, wall time includes time the thread waited for a core, CPU time
// does not. Call it right before the benchmark's loop (after its setup),
// in a benchmark that runs on one goroutine. With checksPerOp, it also
// reports cpu-ns/check. Its clock leaves out setup inside the loop.
func onCPU(b *testing.B, checksPerOp ...int) *cpuClock {
	runtime.LockOSThread()
	c := &cpuClock{}
	start := threadCPU()
	b.Cleanup(func() {
		used := threadCPU() - start - c.excluded
		runtime.UnlockOSThread()
		if b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
			for _, n := range checksPerOp {
				b.ReportMetric(float64(used.Nanoseconds())/float64(b.N*n), "cpu-ns/check")
			}
		}
	})
	return c
}

// cpuClock leaves out of cpu-ns/op the CPU time of setup inside the loop,
// as b.StopTimer and b.StartTimer do for ns/op.
type cpuClock struct {
	excluded time.Duration
	stopped  time.Duration
}

// stop stops b's timer and this clock.
func (c *cpuClock) stop(b *testing.B) {
	b.StopTimer()
	c.stopped = threadCPU()
}

// start starts them again.
func (c *cpuClock) start(b *testing.B) {
	c.excluded += threadCPU() - c.stopped
	b.StartTimer()
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
