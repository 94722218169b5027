package pgxfence_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// guarded is a fixture database with the guard installed for inventory, and the
// policy file.
func guarded(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(path, []byte("version: 1\ntables:\n  - name: inventory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := guard.Run([]string{"--policy", path, "--apply", "--dsn", f.dsn}, &out, &errOut); code != 0 {
		t.Fatalf("sqlfence guard --apply: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	return f, path
}

func withQuery(t *testing.T, dsn string, kv ...string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestOpen: one DSN serves both fronts on a database with the guard: the registered
// driver and pgxfence.Open take it as it is, and their fenced writes land; a stale
// epoch is fenced; a write past the fence is rejected by the guard.
func TestOpen(t *testing.T) {
	f, path := guarded(t)
	ctx := timeout(t, context.Background())
	dsn := withQuery(t, f.dsn, sqlfence.PolicyParam, path)

	pool, err := pgxfence.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(sqlfence.WithEpoch(ctx, 7), `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`); err != nil {
		t.Fatalf("pgxfence.Open's fenced write under the guard: %v", err)
	}
	if _, err := pool.Exec(sqlfence.WithEpoch(ctx, 6), `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale epoch through pgxfence.Open: %v, want ErrFenced", err)
	}
	db, err := sql.Open("sqlfence", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 8), `UPDATE inventory SET quantity = 2 WHERE sku = 'b'`); err != nil {
		t.Fatalf("the registered driver with the same DSN: %v", err)
	}
	var pe *pgconn.PgError
	if _, err := f.raw.Exec(ctx, `UPDATE inventory SET quantity = 0`); !errors.As(err, &pe) || pe.Code != "SF001" {
		t.Fatalf("raw write: %v, want the guard's SF001", err)
	}
	if got := f.state(t, inventoryState); got != "a:1:7 b:2:8" {
		t.Fatalf("data %q", got)
	}

	// The policy from the environment, and the config for settings a DSN cannot hold.
	t.Setenv(sqlfence.PolicyEnv, path)
	cfg, p, err := pgxfence.ParseConfig(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.RuntimeParams[sqlfence.GuardSetting] != "on" || p.Tables[0].Name != "inventory" {
		t.Errorf("ParseConfig: runtime params %v, policy %v", cfg.ConnConfig.RuntimeParams, p.Tables)
	}
}

// TestOpenErrors: no policy, a misspelt parameter, a bad DSN.
func TestOpenErrors(t *testing.T) {
	t.Setenv(sqlfence.PolicyEnv, "")
	ctx := timeout(t, context.Background())
	for _, c := range []struct{ dsn, want string }{
		{"postgres://localhost/x", "pgxfence: no policy: add sqlfence_policy=PATH"},
		{"postgres://localhost/x?sqlfence_polcy=../testdata/sqlfence.yaml", `unknown DSN parameter "sqlfence_polcy" (did you mean sqlfence_policy?)`},
		{"host=localhost sqlfence_plicy=../testdata/sqlfence.yaml", `unknown DSN parameter "sqlfence_plicy" (did you mean sqlfence_policy?)`},
		{"postgres://u:secret@localhost:port/x?sqlfence_policy=../testdata/sqlfence.yaml", "bad DSN"},
	} {
		pool, err := pgxfence.Open(ctx, c.dsn)
		if err == nil {
			pool.Close()
			t.Errorf("%s: Open succeeded", c.dsn)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want it to mention %q", c.dsn, err, c.want)
		}
	}
}

// TestNewWithoutGuardSetting: New and NewConn on connections without the guard's
// setting fail at once where the guard is installed, with the fix (SF711); with the
// setting from the role instead of the startup message (PgBouncer) they pass, and
// so they do where no guard is installed.
func TestNewWithoutGuardSetting(t *testing.T) {
	f, path := guarded(t)
	ctx := timeout(t, context.Background())
	p, err := sqlfence.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := pgxpool.New(ctx, f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	_, err = pgxfence.New(plain, p)
	var se *sqlfence.Error
	if !errors.As(err, &se) || se.Code != "SF711" || !errors.Is(err, sqlfence.ErrRefused) ||
		!strings.Contains(err.Error(), "pgxfence.Open") || !strings.Contains(err.Error(), "RuntimeParams[sqlfence.GuardSetting]") {
		t.Fatalf("New on a pool without the guard's setting: %v, want SF711 with the fix", err)
	}
	conn, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := pgxfence.NewConn(conn, p); !errors.As(err, &se) || se.Code != "SF711" {
		t.Fatalf("NewConn without the guard's setting: %v, want SF711", err)
	}

	// The setting as a database default, as behind PgBouncer.
	var db string
	if err := f.raw.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := f.raw.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET sqlfence.fenced = on"); err != nil {
		t.Fatal(err)
	}
	byDefault, err := pgxpool.New(ctx, f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer byDefault.Close()
	fp, err := pgxfence.New(byDefault, p)
	if err != nil {
		t.Fatalf("New with the setting as a database default: %v", err)
	}
	if _, err := fp.Exec(sqlfence.WithEpoch(ctx, 9), `UPDATE inventory SET quantity = 3 WHERE sku = 'a'`); err != nil {
		t.Fatalf("fenced write with the setting as a database default: %v", err)
	}

	// No guard: nothing to carry.
	g := newFixture(t)
	noGuard, err := pgxpool.New(ctx, g.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer noGuard.Close()
	if _, err := pgxfence.New(noGuard, p); err != nil {
		t.Fatalf("New without the guard installed: %v", err)
	}
}
