//go:build !linux

package pgcluster

import "errors"

var errNoProcfs = errors.New("pgcluster: process trees are found through /proc, which only Linux has")

func listProcs() (map[int]procInfo, error) { return nil, errNoProcfs }

func cmdlineHas(pid int, s string) bool { return false }
