package pgxfence_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// guardedPool installs the guard for policy (a policy file's YAML) with sqlfence guard
// --apply, runs each of then on a plain connection, and opens a pgxfence pool (the
// statement cache, the guard's session setting) that the test's end closes.
func (f *fixture) guardedPool(t *testing.T, policy string, then ...string) *pgxfence.Pool {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := guard.Run([]string{"--policy", path, "--apply", "--dsn", f.dsn}, &out, &errOut); code != 0 {
		t.Fatalf("sqlfence guard --apply: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, sql := range then {
		f.exec(t, sql)
	}
	cfg := f.poolConfig(t, pgx.QueryExecModeCacheStatement)
	cfg.ConnConfig.RuntimeParams[sqlfence.GuardSetting] = "on"
	pgxPool, err := pgxpool.NewWithConfig(timeout(t, context.Background()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sqlfence.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxfence.New(pgxPool, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
