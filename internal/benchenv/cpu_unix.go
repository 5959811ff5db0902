//go:build unix

package benchenv

import (
	"syscall"
	"time"
)

// CPUTime is the process's user+system CPU time so far, the kernel's share
// of writes and fsyncs included: what a benchmark's work costs a busy
// server. It is 0 when the system does not say.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
