package pgbouncer_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const policyYAML = `version: 1
catalog_refresh: 1h
tables:
  - name: inventory
`

// fixture is a database with a protected inventory table and the guard
// installed, an application role that may write it, an operator role, and
// the policy file.
type fixture struct {
	db, app, ops string
	policy       string
	admin        *pgx.Conn // superuser, on db, directly (not through PgBouncer)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	root, err := pgx.Connect(ctx, pgtest.AdminDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close(context.WithoutCancel(ctx))
	f := &fixture{app: newRole(t, root, "app"), ops: newRole(t, root, "ops")}
	dsn := pgtest.NewDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	f.db = strings.TrimPrefix(u.Path, "/")
	if f.admin, err = pgx.Connect(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.admin.Close(context.Background()) })
	for _, s := range []string{
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO inventory (sku, quantity, writer_epoch) SELECT 'sku-' || i, 10, 5 FROM generate_series(1, 20) i`,
		fmt.Sprintf(`GRANT SELECT, INSERT, UPDATE, DELETE ON inventory TO %s, %s`, f.app, f.ops),
	} {
		if _, err := f.admin.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	f.policy = filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(f.policy, []byte(policyYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := guard.Run([]string{"--policy", f.policy, "--apply", "--dsn", dsn}, &stdout, &stderr); code != 0 {
		t.Fatalf("sqlfence guard --apply: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	return f
}

// markRole is the setting the guard's marker takes behind PgBouncer: the
// application role's default in this database.
func (f *fixture) markRole(t *testing.T) {
	t.Helper()
	if _, err := f.admin.Exec(t.Context(), fmt.Sprintf(`ALTER ROLE %s IN DATABASE %s SET sqlfence.fenced = on`, f.app, f.db)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) row(t *testing.T, sku string) (qty int, epoch int64) {
	t.Helper()
	if err := f.admin.QueryRow(t.Context(), `SELECT quantity, writer_epoch FROM inventory WHERE sku = $1`, sku).Scan(&qty, &epoch); err != nil {
		t.Fatal(err)
	}
	return qty, epoch
}

// open opens the registered sqlfence driver through the bouncer.
func (f *fixture) open(t *testing.T, b *bouncer, params ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlfence", b.dsn(f.app, f.db, append(params, "sqlfence_policy="+url.QueryEscape(f.policy))...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

const ship = `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`

// PgBouncer refuses startup parameters it does not know, and sqlfence's driver
// sends sqlfence.fenced — the guard's marker — in its startup message. Listed
// under ignore_startup_parameters, the parameter is dropped, and the marker
// has to come from the role instead.
func TestStartupParameters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()

	t.Run("refused", func(t *testing.T) {
		b := startBouncer(t, pgtest.AdminDSN(t), []string{f.app}, bouncerConfig{})
		err := f.open(t, b).PingContext(ctx)
		if err == nil || !strings.Contains(err.Error(), "unsupported startup parameter") || !strings.Contains(err.Error(), sqlfence.GuardSetting) {
			t.Fatalf("connecting through PgBouncer without ignore_startup_parameters: %v; want PgBouncer's refusal of %s", err, sqlfence.GuardSetting)
		}
		t.Logf("as expected: %v", err)
	})

	// Ignored, and no role setting: the driver connects, but the sessions do
	// not carry the marker, so the guard rejects even fenced writes.
	t.Run("ignored", func(t *testing.T) {
		b := startBouncer(t, pgtest.AdminDSN(t), []string{f.app}, bouncerConfig{ignore: []string{sqlfence.GuardSetting}})
		db := f.open(t, b, "default_query_exec_mode=exec")
		_, err := db.ExecContext(sqlfence.WithEpoch(ctx, 6), ship, "sku-1", 1)
		if sqlState(err) != "SF001" {
			t.Fatalf("fenced write through PgBouncer without the role setting: %v; want the guard's SF001", err)
		}
		if qty, epoch := f.row(t, "sku-1"); qty != 10 || epoch != 5 {
			t.Errorf("sku-1 = %d, epoch %d; want unchanged", qty, epoch)
		}
	})

	// Ignored, with the role setting: the server sessions PgBouncer opens for
	// the role carry the marker, whatever the client sends.
	t.Run("role setting", func(t *testing.T) {
		f.markRole(t)
		b := startBouncer(t, pgtest.AdminDSN(t), []string{f.app, f.ops}, bouncerConfig{ignore: []string{sqlfence.GuardSetting}})
		db := f.open(t, b, "default_query_exec_mode=exec")
		if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 6), ship, "sku-1", 1); err != nil {
			t.Fatalf("fenced write through PgBouncer with the role setting: %v", err)
		}
		if qty, epoch := f.row(t, "sku-1"); qty != 9 || epoch != 6 {
			t.Errorf("sku-1 = %d, epoch %d; want 9, 6", qty, epoch)
		}
		// The caveat: the marker now belongs to the role, not to the driver.
		// Another role through the same bouncer is still rejected...
		ops, err := pgx.Connect(ctx, b.dsn(f.ops, f.db, "default_query_exec_mode=exec"))
		if err != nil {
			t.Fatal(err)
		}
		defer ops.Close(context.Background())
		if _, err := ops.Exec(ctx, ship, "sku-2", 1); sqlState(err) != "SF001" {
			t.Errorf("plain write as %s through PgBouncer: %v; want the guard's SF001", f.ops, err)
		}
		// ...and so is a plain write as the application role: the role setting
		// stands in for the session marker, but each statement must still carry the
		// driver's marker. Only a client that forges it passes (the documented limit).
		raw, err := pgx.Connect(ctx, b.dsn(f.app, f.db, "default_query_exec_mode=exec"))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close(context.Background())
		if _, err := raw.Exec(ctx, ship, "sku-3", 1); sqlState(err) != "SF001" {
			t.Errorf("plain write as the application role: %v; want the guard's SF001", err)
		}
		if _, err := raw.Exec(ctx, "/*sqlfence fenced: inventory*/ "+ship, "sku-3", 1); err != nil {
			t.Errorf("a write as the application role that forges the driver's marker: %v; the guard cannot tell it (the documented limit)", err)
		}
	})
}

// Fenced writes through PgBouncer in transaction pooling, judged on the data:
// a fresh epoch writes and stamps, a stale one is fenced (the classification
// query runs through the bouncer too), none is refused before anything is
// sent. Many clients share two server connections.
func TestFencedWritesBehindPgBouncer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.markRole(t)
	b := startBouncer(t, pgtest.AdminDSN(t), []string{f.app}, bouncerConfig{ignore: []string{sqlfence.GuardSetting}, poolSize: 2})
	db := f.open(t, b, "default_query_exec_mode=exec")
	db.SetMaxOpenConns(16)
	ctx := t.Context()

	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for i := 1; i <= 20; i++ {
		sku := fmt.Sprintf("sku-%d", i)
		wg.Go(func() {
			// fresh, in a transaction (pinned to one server connection)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			if _, err := tx.ExecContext(sqlfence.WithEpoch(ctx, 7), ship, sku, 2); err != nil {
				tx.Rollback()
				errs <- fmt.Errorf("%s fresh: %w", sku, err)
				return
			}
			if err := tx.Commit(); err != nil {
				errs <- err
				return
			}
			// stale, outside a transaction
			if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 6), ship, sku, 1); !errors.Is(err, sqlfence.ErrFenced) {
				errs <- fmt.Errorf("%s stale: %v; want ErrFenced", sku, err)
			}
			// none
			if _, err := db.ExecContext(ctx, ship, sku, 1); !errors.Is(err, sqlfence.ErrUnfenced) {
				errs <- fmt.Errorf("%s without an epoch: %v; want ErrUnfenced", sku, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := 1; i <= 20; i++ {
		if qty, epoch := f.row(t, fmt.Sprintf("sku-%d", i)); qty != 8 || epoch != 7 {
			t.Errorf("sku-%d = %d, epoch %d; want 8, 7: only the fresh write lands", i, qty, epoch)
		}
	}
	if t.Failed() {
		t.Log(b.log())
	}
}

// Prepared statements in transaction pooling. PgBouncer before 1.21 does not
// track protocol-level prepared statements: pgx's default statement cache
// names a statement on one server connection and finds it missing, or
// already there, on another. The query exec modes that prepare nothing by
// name (exec, cache_describe) work, and database/sql's own Prepare, which
// always prepares by name, does not.
func TestPreparedStatementsBehindPgBouncer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.markRole(t)
	v := pgbouncerVersion(t)
	t.Logf("PgBouncer %d.%d.%d", v[0], v[1], v[2])
	tracks := v[0] > 1 || v[1] >= 21
	// One server connection: every client takes turns on it.
	b := startBouncer(t, pgtest.AdminDSN(t), []string{f.app}, bouncerConfig{ignore: []string{sqlfence.GuardSetting}, poolSize: 1})
	ctx := t.Context()

	// twoClients runs the fenced write on two client connections of db, one
	// after the other, sharing the one server connection.
	twoClients := func(t *testing.T, db *sql.DB, sku string, epoch int64) error {
		t.Helper()
		c1, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c1.Close()
		c2, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer c2.Close()
		for _, c := range []*sql.Conn{c1, c2, c1} {
			if _, err := c.ExecContext(sqlfence.WithEpoch(ctx, epoch), ship, sku, 1); err != nil {
				return err
			}
			epoch++
		}
		return nil
	}

	for _, mode := range []string{"exec", "cache_describe"} {
		t.Run(mode, func(t *testing.T) {
			db := f.open(t, b, "default_query_exec_mode="+mode)
			sku := map[string]string{"exec": "sku-1", "cache_describe": "sku-2"}[mode]
			if err := twoClients(t, db, sku, 10); err != nil {
				t.Fatalf("default_query_exec_mode=%s through PgBouncer: %v", mode, err)
			}
			if qty, epoch := f.row(t, sku); qty != 7 || epoch != 12 {
				t.Errorf("%s = %d, epoch %d; want 7, 12", sku, qty, epoch)
			}
		})
	}

	t.Run("cache_statement", func(t *testing.T) {
		db := f.open(t, b) // pgx's default mode
		err := twoClients(t, db, "sku-3", 10)
		if tracks {
			t.Skip("PgBouncer >= 1.21 may track prepared statements (max_prepared_statements); not configured here")
		}
		if code := sqlState(err); code != "42P05" && code != "26000" {
			t.Fatalf("pgx's statement cache through PgBouncer %d.%d: %v; want a prepared-statement error (42P05 or 26000)", v[0], v[1], err)
		}
		t.Logf("as expected: %v", err)
	})

	t.Run("database/sql Prepare", func(t *testing.T) {
		db := f.open(t, b, "default_query_exec_mode=exec")
		c1, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close()
		c2, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		s1, err1 := c1.PrepareContext(ctx, ship)
		s2, err2 := c2.PrepareContext(ctx, ship)
		if s1 != nil {
			defer s1.Close()
		}
		if s2 != nil {
			defer s2.Close()
		}
		err = errors.Join(err1, err2)
		if err == nil {
			_, err = s1.ExecContext(sqlfence.WithEpoch(ctx, 10), "sku-4", 1)
		}
		if tracks {
			t.Skip("PgBouncer >= 1.21 may track prepared statements (max_prepared_statements); not configured here")
		}
		if code := sqlState(err); code != "42P05" && code != "26000" {
			t.Fatalf("database/sql Prepare on two clients through PgBouncer %d.%d: %v; want a prepared-statement error (42P05 or 26000)", v[0], v[1], err)
		}
		t.Logf("as expected: %v", err)
	})
}
