package pgxfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
)

// TestServerParseError: through every pgxfence entry point and exec mode, text that
// neither sqlfence's parser nor the server reads gets the server's own
// *pgconn.PgError, and nothing of it runs (the data proves it).
func TestServerParseError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := timeout(t, sqlfence.WithEpoch(context.Background(), 7))
	bad := []string{`UPDATE inventory SET`, `DELETE FROM inventory; SELEC 1`, `SELECT * FROM inventory WHERE sku = (`}
	check := func(how, stmt string, err error) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42601" || errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%s %q: err = %v, want only the server's syntax error", how, stmt, err)
		}
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		pool := f.pool(t, policy(t, ""), mode)
		for _, stmt := range bad {
			_, err := pool.Exec(ctx, stmt)
			check(mode.String()+" Exec", stmt, err)
			_, err = pool.Query(ctx, stmt)
			check(mode.String()+" Query", stmt, err)
			var n int
			check(mode.String()+" QueryRow", stmt, pool.QueryRow(ctx, stmt).Scan(&n))
			b := &pgx.Batch{}
			b.Queue(`SELECT 1`)
			b.Queue(stmt)
			br := pool.SendBatch(ctx, b)
			_, err = br.Exec()
			if err == nil {
				_, err = br.Exec()
			}
			check(mode.String()+" SendBatch", stmt, err)
			br.Close()
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.Exec(ctx, stmt)
			check(mode.String()+" Tx.Exec", stmt, err)
			tx.Rollback(ctx)
		}
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("text that does not parse changed the data: %s", got)
	}
}
