//go:build !unix

package demo

import (
	"errors"
	"os"
)

func canPause() bool { return false }

var errNoStop = errors.New("pausing a process needs SIGSTOP, which this system does not have")

func stopProcess(*os.Process) error { return errNoStop }

func continueProcess(*os.Process) error { return errNoStop }
