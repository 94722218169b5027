package demo

import "syscall"

// workerSysProcAttr kills a worker when the demo dies without cleaning up (a crash,
// SIGKILL): a worker left paused with SIGSTOP would otherwise stay forever.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
