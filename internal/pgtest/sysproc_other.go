//go:build !linux

package pgtest

import (
	"errors"
	"syscall"
)

func sysProcAttr(runAs *account) (*syscall.SysProcAttr, error) {
	if runAs != nil {
		return nil, errors.New("pgtest: running the server as the postgres user is only supported on Linux; run the tests as an unprivileged user")
	}
	return nil, nil
}
