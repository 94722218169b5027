package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/front"
)

// TestServerParseError: text neither sqlfence's parser nor the server reads gets the
// server's own *pgconn.PgError, as without sqlfence, on every path database/sql has;
// and nothing of it runs — not even a statement of a multi-statement text that
// parses on its own. The data proves it.
func TestServerParseError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx, cancel := context.WithTimeout(sqlfence.WithEpoch(context.Background(), 7), time.Minute)
	defer cancel()
	bad := []string{
		`UPDATE inventory SET`,
		`UPDATE inventory SET quantity = 0; SELEC 1`,
		`DELETE FROM inventory; DELETE FROM staging WHERE`,
		`SELECT * FROM inventory WHERE sku = (`,
		`SELEC 1`,
	}
	check := func(how, stmt string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42601" {
			t.Errorf("%s %q: err = %v, want the server's syntax error", how, stmt, err)
		}
		if errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%s %q: %v is also a refusal", how, stmt, err)
		}
	}
	for _, stmt := range bad {
		_, err := f.fenced.ExecContext(ctx, stmt)
		check("Exec", stmt, err)
		_, err = f.fenced.QueryContext(ctx, stmt)
		check("Query", stmt, err)
		_, err = f.fenced.PrepareContext(ctx, stmt)
		check("Prepare", stmt, err)
		_, err = f.fenced.ExecContext(ctx, stmt, 1)
		check("Exec with an argument", stmt, err)
		tx, err := f.fenced.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, stmt)
		check("Exec in a transaction", stmt, err)
		// The server's error aborted the transaction, as the statement would have.
		if _, err := tx.ExecContext(ctx, `SELECT 1`); err == nil || !strings.Contains(err.Error(), "aborted") {
			t.Errorf("after %q in a transaction: %v, want the transaction aborted", stmt, err)
		}
		tx.Rollback()
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("text that does not parse changed the data: %s", got)
	}
	if got := f.state(t, `SELECT count(*)::text FROM staging`); got != "3" {
		t.Fatalf("text that does not parse changed staging: %s rows", got)
	}
}

// TestServerParseExecutesNothing: the round trip that asks the server to read a text
// executes none of it, whether the server reads it (the refusal is returned) or
// not; a text of several statements, which the simple protocol would run one by
// one, is refused as read. Called directly, so that texts sqlfence's parser would
// accept stand for those only the server reads.
func TestServerParseExecutesNothing(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, schema)
	f := &fixture{raw: raw}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	refusal := errors.New("refused")
	for _, stmt := range []string{
		`UPDATE inventory SET quantity = 0`,
		`DELETE FROM inventory`,
		`SELECT 1; UPDATE inventory SET quantity = 0`,
		`UPDATE inventory SET quantity = 0; DELETE FROM inventory`,
		`CREATE TABLE made (x int)`,
		`INSERT INTO staging VALUES ('z', 1, 'n', false) RETURNING *`,
	} {
		if err := front.ServerParse(ctx, conn.PgConn(), stmt, refusal); err != refusal {
			t.Errorf("%q: %v, want the refusal", stmt, err)
		}
	}
	if err := front.ServerParse(ctx, conn.PgConn(), "SELECT 1\x00; DELETE FROM inventory", refusal); err != refusal {
		t.Errorf("a NUL byte: %v, want the refusal", err)
	}
	if err := front.ServerParse(ctx, nil, "SELEC 1", refusal); err != refusal {
		t.Errorf("no pgx connection: %v, want the refusal", err)
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("the parse round trip changed the data: %s", got)
	}
	if got := f.state(t, `SELECT count(*)::text FROM staging`); got != "3" {
		t.Fatalf("the parse round trip changed staging: %s rows", got)
	}
	if got := f.state(t, `SELECT count(*)::text FROM pg_class WHERE relname = 'made'`); got != "0" {
		t.Fatalf("the parse round trip ran DDL")
	}
}
