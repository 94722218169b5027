package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// TestRegisteredConnConfig: a name from stdlib.RegisterConnConfig opens through the
// registered driver "sqlfence" as it does through "pgx": the registered config (here
// its application_name) is used, and sqlfence's startup parameters are pinned over it.
// Not parallel: it sets the policy environment variable.
func TestRegisteredConnConfig(t *testing.T) {
	dsn, raw := newRawDB(t, schema)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "registered-by-test"
	cfg.RuntimeParams["standard_conforming_strings"] = "off" // sqlfence pins it on
	name := stdlib.RegisterConnConfig(cfg)
	t.Cleanup(func() { stdlib.UnregisterConnConfig(name) })

	check := func(t *testing.T, db *sql.DB) {
		t.Helper()
		for setting, want := range map[string]string{
			"application_name":            "registered-by-test",
			sqlfence.GuardSetting:         "on",
			"standard_conforming_strings": "on",
			"client_encoding":             "UTF8",
		} {
			var got string
			if err := db.QueryRow("SELECT pg_catalog.current_setting($1)", setting).Scan(&got); err != nil {
				t.Fatalf("%s: %v", setting, err)
			}
			if got != want {
				t.Errorf("%s = %q, want %q", setting, got, want)
			}
		}
		const write = `UPDATE inventory SET quantity = quantity + 1 WHERE sku = $1`
		if _, err := db.ExecContext(sqlfence.WithEpoch(context.Background(), 3), write, "a"); !errors.Is(err, sqlfence.ErrFenced) {
			t.Errorf("stale write: err = %v, want ErrFenced", err)
		}
		if _, err := db.ExecContext(context.Background(), write, "a"); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Errorf("write without an epoch: err = %v, want ErrUnfenced", err)
		}
	}

	t.Run("policy in the DSN", func(t *testing.T) {
		db, err := sql.Open("sqlfence", name+" sqlfence_policy=testdata/sqlfence.yaml")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		check(t, db)
		if _, err := db.ExecContext(sqlfence.WithEpoch(context.Background(), 8), `UPDATE inventory SET quantity = 0 WHERE sku = $1`, "b"); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := raw.QueryRow(`SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'b'`).Scan(&got); err != nil || got != "0:8" {
			t.Fatalf("row b = %q (%v), want 0:8", got, err)
		}
	})
	t.Run("policy from the environment", func(t *testing.T) {
		t.Setenv(sqlfence.PolicyEnv, "testdata/sqlfence.yaml")
		db, err := sql.Open("sqlfence", name)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		check(t, db)
	})
	t.Run("unregistered name", func(t *testing.T) {
		db, err := sql.Open("sqlfence", "registeredConnConfigNone sqlfence_policy=testdata/sqlfence.yaml")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Ping(); err == nil {
			t.Fatal("an unregistered name connected")
		}
	})
	t.Run("keyword/value with spaces around =", func(t *testing.T) {
		db, err := sql.Open("sqlfence", "host = 127.0.0.1 sqlfence_policy = testdata/sqlfence.yaml")
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	})
}

// TestQuestionPlaceholders: a statement with ? placeholders (sqlx without the bind
// type, SQL written for MySQL) is refused with the fix, not only a syntax error.
func TestQuestionPlaceholders(t *testing.T) {
	t.Parallel()
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE inventory SET quantity = ? WHERE sku = ?`,
		`UPDATE inventory SET quantity=? WHERE sku=?`,
		`INSERT INTO inventory (sku, quantity) VALUES (?, ?)`,
		`SELECT quantity FROM inventory WHERE sku = ?`,
	} {
		err := p.Plan(q).Err
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%s: err = %v, want ErrRefused", q, err)
			continue
		}
		for _, want := range []string{"the statement uses ? placeholders", "PostgreSQL numbers parameters $1, $2…", `sqlx.BindDriver("sqlfence", sqlx.DOLLAR)`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\ndoes not say %q", q, err, want)
			}
		}
	}
	// The jsonb operators ?, ?| and ?& are operators, not placeholders.
	for _, q := range []string{`SELECT '{"a":1}'::jsonb ? 'a'`, `SELECT '{"a":1}'::jsonb ?| array['a']`} {
		if err := p.Plan(q).Err; err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if err := p.Plan(`SELECT '{"a":1}'::jsonb ?| FROM`).Err; err == nil || strings.Contains(err.Error(), "placeholders") {
		t.Errorf("a syntax error next to ?| blames placeholders: %v", err)
	}
}

// TestORMHints: the refusals an ORM model runs into name the fix.
func TestORMHints(t *testing.T) {
	t.Parallel()
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO "inventory" ("sku","quantity","writer_epoch") VALUES ($1,$2,$3)`,              // GORM
		`UPDATE "inventory" SET "quantity"=$1,"writer_epoch"=$2 WHERE "sku" = $3`,                  // GORM Save
		`INSERT INTO "inventory" AS "item" ("sku", "quantity", "writer_epoch") VALUES ('a', 1, 0)`, // bun
	} {
		err := p.Plan(q).Err
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Fatalf("%s: err = %v, want ErrRefused", q, err)
		}
		for _, want := range []string{"sqlfencegorm", `gorm:"->"`, `bun:",scanonly"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\ndoes not mention %s", q, err, want)
			}
		}
	}
}

// TestPlanCheck: Plan exposes the query the driver runs after a 0-row write, with the
// statement's arguments it takes, for tests that stand in for the database.
func TestPlanCheck(t *testing.T) {
	t.Parallel()
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stmt  string
		check string
		args  []int
	}{
		{`UPDATE inventory SET quantity = $2 WHERE sku = $1`,
			`SELECT pg_catalog.max(inventory.writer_epoch)::bigint, pg_catalog.count(*) FILTER (WHERE inventory.writer_epoch OPERATOR(pg_catalog.>) $2::bigint) FROM inventory WHERE (sku = $1)`,
			[]int{0}},
		{`INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`,
			`SELECT pg_catalog.max(inventory.writer_epoch)::bigint, pg_catalog.count(*) FILTER (WHERE inventory.writer_epoch OPERATOR(pg_catalog.>) $3::bigint) FROM inventory WHERE inventory.sku IN ($1, $2)`,
			[]int{0, 2}},
		{`INSERT INTO inventory (sku, quantity) VALUES ($1, $2)`, "", nil},
	} {
		plan := p.Plan(c.stmt)
		if plan.Err != nil {
			t.Fatal(plan.Err)
		}
		if plan.Check != c.check || !equalInts(plan.CheckArgs, c.args) {
			t.Errorf("%s:\ncheck %s %v\nwant  %s %v", c.stmt, plan.Check, plan.CheckArgs, c.check, c.args)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
