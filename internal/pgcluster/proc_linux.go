package pgcluster

import (
	"bytes"
	"os"
	"strconv"
)

// listProcs reads every process's parent, state and start time from /proc.
func listProcs() (map[int]procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := make(map[int]procInfo, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if p, ok := parseStat(b); ok {
			out[pid] = p
		}
	}
	return out, nil
}

// parseStat reads "pid (comm) state ppid ... starttime ...". The command name
// may hold spaces and parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (procInfo, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{ppid: ppid, state: f[0][0], start: start}, true
}

// cmdlineHas reports whether the command line of pid holds s as one argument or
// part of one, to check that a pid read from a file is still the process meant.
func cmdlineHas(pid int, s string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && bytes.Contains(b, []byte(s))
}
