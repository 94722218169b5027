package pgcluster

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/sqlfence/sqlfence/internal/pgbin"
)

// BinEnv names the environment variable that chooses the server binaries: the
// directory holding initdb and postgres of one PostgreSQL version (the suite runs
// its corpora once per version with it; see the root package's TestServerVersions).
// Set, it is the only place looked at.
const BinEnv = pgbin.BinEnv

// findBinaries is internal/pgbin's lookup, which fetches a server into the cache
// when the machine has none; what it fetches is reported on stderr. tools are the
// programs needed besides initdb and postgres (pgbin.FindWith).
func findBinaries(ctx context.Context, tools ...string) (string, error) {
	return pgbin.FindWith(ctx, os.Stderr, tools...)
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
