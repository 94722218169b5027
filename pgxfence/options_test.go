package pgxfence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// rewriteTo is a query rewriter that replaces the call's text and arguments, and
// records whether pgx handed it a connection.
type rewriteTo struct {
	sql    string
	args   []any
	gotNil *bool
}

func (r rewriteTo) RewriteQuery(_ context.Context, conn *pgx.Conn, _ string, _ []any) (string, []any, error) {
	if r.gotNil != nil {
		*r.gotNil = conn == nil
	}
	return r.sql, r.args, nil
}

// TestRewriterOptions: a rewriter whose returned arguments begin with what pgx reads
// as an option — a second rewriter that turns the decided SELECT into an unfenced
// UPDATE of a protected table, an exec mode (the simple protocol's client-side
// interpolation), result formats — is refused with SF710 before anything is sent,
// through every front, exec mode and method, with no, a stale and a fresh epoch;
// the rows stay as they were. The rewriter itself gets no connection.
func TestRewriterOptions(t *testing.T) {
	const unfenced = `UPDATE inventory SET quantity = 0, writer_epoch = 0`
	evil := rewriteTo{sql: unfenced}
	payloads := []struct {
		name string
		sql  string
		args []any
	}{
		{"a rewriter", `SELECT $1::int`, []any{evil}},
		{"an exec mode, then a rewriter", `SELECT $1::int`, []any{pgx.QueryExecModeExec, evil}},
		{"the simple protocol", `SELECT $1::text`, []any{pgx.QueryExecModeSimpleProtocol, "x'; " + unfenced + "; --"}},
		{"result formats, then a rewriter", `SELECT $1::int`, []any{pgx.QueryResultFormats{pgx.TextFormatCode}, evil}},
		{"named arguments", `SELECT $1::int`, []any{pgx.NamedArgs{"x": 1}}},
	}
	p := policy(t, "")
	for _, fr := range fronts {
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			for _, mode := range modes {
				db, end := fr.open(t, f, p, mode)
				for _, pl := range payloads {
					for _, epoch := range []int64{0, 3, 7} {
						for _, method := range []string{"Exec", "Query", "QueryRow", "SendBatch"} {
							name := fmt.Sprintf("%s/%s/%s/epoch %d", mode, pl.name, method, epoch)
							ctx := timeout(t, context.Background())
							if epoch != 0 {
								ctx = sqlfence.WithEpoch(ctx, epoch)
							}
							option := optionFor(method, pl.args[0])
							if !option && fr.name != "pool" && fr.name != "conn" {
								continue // the server's error would end the transaction the rows are judged after
							}
							gotNil := false
							rw := rewriteTo{sql: pl.sql, args: pl.args, gotNil: &gotNil}
							var err error
							switch method {
							case "Exec":
								_, err = db.Exec(ctx, `SELECT 1`, rw)
							case "Query":
								var rows pgx.Rows
								if rows, err = db.Query(ctx, `SELECT 1`, rw); err == nil {
									rows.Close()
									err = rows.Err()
								}
							case "QueryRow":
								var x any
								err = db.QueryRow(ctx, `SELECT 1`, rw).Scan(&x)
							case "SendBatch":
								b := &pgx.Batch{}
								b.Queue(`SELECT 1`, rw)
								br := db.SendBatch(ctx, b)
								_, err = br.Exec()
								br.Close()
							}
							// What pgx does not read as an option for the method (result
							// formats in Exec and a batch, an exec mode in a batch) is a value
							// to it, and the server refuses the argument the text has no
							// parameter for; every other payload is refused before anything
							// is sent.
							var se *sqlfence.Error
							if option && (!errors.As(err, &se) || se.Code != rulecode.OptionArgument) {
								t.Fatalf("%s: %v, want %s", name, err, rulecode.OptionArgument)
							}
							if !option && err == nil {
								t.Fatalf("%s: passed", name)
							}
							if !gotNil {
								t.Fatalf("%s: the rewriter was handed the connection", name)
							}
							if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
								t.Fatalf("%s: rows changed: %s", name, got)
							}
						}
					}
				}
				if err := end(); err != nil {
					t.Fatal(err)
				}
				// In a transaction the rows are judged once it committed.
				if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
					t.Fatalf("%s: rows changed: %s", mode, got)
				}
			}
		})
	}
}

// TestRewriterValues: a rewriter whose arguments are values passes, through every
// front and method, and its text is the one fenced.
func TestRewriterValues(t *testing.T) {
	p := policy(t, "")
	f := newFixture(t)
	for _, mode := range modes {
		db := f.pool(t, p, mode)
		ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 6+int64(mode))
		rw := rewriteTo{sql: `UPDATE inventory SET quantity = $1 WHERE sku = $2`, args: []any{int(mode), "a"}}
		if _, err := db.Exec(ctx, `SELECT 1`, rw); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if got := f.state(t, `SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'a'`); got != fmt.Sprintf("%d:%d", int(mode), 6+int(mode)) {
			t.Fatalf("%s: %s", mode, got)
		}
	}
}

// optionFor reports whether pgx reads a as an option of method (pgx's conn.go).
func optionFor(method string, a any) bool {
	switch a.(type) {
	case pgx.QueryRewriter:
		return true
	case pgx.QueryExecMode:
		return method != "SendBatch"
	case pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
		return method == "Query" || method == "QueryRow"
	}
	return false
}
