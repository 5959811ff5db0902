package dbtest

import "syscall"

// dieWithParent makes the kernel kill the server if the test process dies
// without running its cleanups (a -timeout panic, a SIGKILL), so no server
// outlives its test. Go sets it after switching credentials, which would
// otherwise clear it.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
