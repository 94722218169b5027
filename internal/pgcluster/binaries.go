package pgcluster

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
)

// BinEnv names the environment variable that chooses the server binaries: the
// directory holding initdb and postgres of one PostgreSQL version (the suite runs
// its corpora once per version with it; see the root package's TestServerVersions).
// Set, it is the only place looked at.
const BinEnv = "SQLFENCE_TEST_PG_BIN"

func findBinaries() (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
		return "", fmt.Errorf("%w: %s=%s holds no initdb and postgres", ErrNoServer, BinEnv, dir)
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		// Take postgres from next to initdb, following a symlink into the
		// installation, so that both come from one version.
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			initdb = real
		}
		dir := filepath.Dir(initdb)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
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
	slices.SortFunc(dirs, func(a, b string) int { return -cmpFloat(version(a), version(b)) })
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoServer
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func postgresUser() (*account, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root, but PostgreSQL refuses to run as root and there is no 'postgres' user to run it as (%v); create one or run as an unprivileged user", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: postgres user: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: postgres user: gid %q: %w", u.Gid, err)
	}
	return &account{uid: uid, gid: gid}, nil
}
