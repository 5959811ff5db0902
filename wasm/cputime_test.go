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
// reports cpu-ns/check.
func onCPU(b *testing.B, checksPerOp ...int) {
	runtime.LockOSThread()
	start := threadCPU()
	b.Cleanup(func() {
		used := threadCPU() - start
		runtime.UnlockOSThread()
		if b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
			for _, n := range checksPerOp {
				b.ReportMetric(float64(used.Nanoseconds())/float64(b.N*n), "cpu-ns/check")
			}
		}
	})
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
