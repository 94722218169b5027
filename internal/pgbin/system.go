package pgbin

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
)

// findSystem is the machine's own PostgreSQL, or "".
func findSystem() string {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		// Take postgres from next to initdb, following a symlink into the
		// installation, so that both come from one version.
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		if dir := filepath.Dir(initdb); hasServer(dir) {
			return dir
		}
	}
	// Debian and Ubuntu keep server binaries out of PATH, one directory per
	// major version.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		if err != nil {
			return -1
		}
		return v
	}
	slices.SortStableFunc(dirs, func(a, b string) int {
		va, vb := version(a), version(b)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	for _, dir := range dirs {
		if hasServer(dir) {
			return dir
		}
	}
	return ""
}
