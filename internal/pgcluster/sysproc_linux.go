package pgcluster

import "syscall"

func sysProcAttr(runAs *account) (*syscall.SysProcAttr, error) {
	// Pdeathsig kills the server when the process that started it dies without calling
	// Stop, for example on a panic, a test timeout or a Ctrl-C.
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if runAs != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(runAs.uid), Gid: uint32(runAs.gid)}
	}
	return attr, nil
}
