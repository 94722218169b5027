//go:build !linux

package pgcluster

import (
	"errors"
	"syscall"
)

func sysProcAttr(runAs *account) (*syscall.SysProcAttr, error) {
	if runAs != nil {
		return nil, errors.New("pgcluster: running the server as the postgres user is only supported on Linux; run as an unprivileged user")
	}
	return nil, nil
}
