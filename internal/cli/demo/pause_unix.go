//go:build unix

package demo

import (
	"os"
	"syscall"
)

func canPause() bool { return true }

func stopProcess(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

func continueProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
