//go:build !linux

package dbtest

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; elsewhere
// a test process that dies without its cleanups leaves its server running.
func dieWithParent(*syscall.SysProcAttr) {}
