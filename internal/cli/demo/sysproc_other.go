//go:build !linux

package demo

import "syscall"

func workerSysProcAttr() *syscall.SysProcAttr { return nil }
