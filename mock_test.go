package sqlfence_test

// Tests of what reaches the inner driver. A recording fake driver stands behind
// sqlfence.NewConnector and logs every call with its exact text and arguments, so the
// tests can assert byte for byte what PostgreSQL would have been sent: the
// application's own text for statements sqlfence leaves alone, the fenced text plus
// the epoch as the last argument for protected writes, nothing at all for refusals.
//
// Two fakes: fullConn implements every optional interface database/sql knows, and the
// tests check that each one is forwarded (a wrapper must not hide what the inner
// driver can do); bareConn implements only driver.Conn, and the tests check that sqlfence still fences and degrades as
// database/sql would without it.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// ---- pass-through and rewrite, byte for byte ----

// TestMockPassThroughExact: statements that write no protected table reach the inner
// driver exactly as written, arguments untouched, on every path, with or without an
// epoch on the context.
func TestMockPassThroughExact(t *testing.T) {
	stmts := []string{
		"SELECT quantity FROM inventory WHERE sku = $1",
		"  /* app=worker,route=/jobs */\tSELECT\n\t1 -- trailing\n",
		"UPDATE staging SET q = $1 WHERE sku = 'inventory'",
		"SELECT 'DELETE FROM inventory' AS text, $1::int",
		"SELECT $$TRUNCATE inventory$$, $1",
		"EXPLAIN UPDATE inventory SET quantity = $1",
		`UPDATE "INVENTORY" SET quantity = $1`,
		"SELECT 1; SELECT $1",
		"WITH x AS (SELECT 1) SELECT * FROM x WHERE 1 = $1 ;  ",
		"\n\n   ",
	}
	for _, ctx := range []context.Context{context.Background(), epoch(7)} {
		for _, q := range stmts {
			db, r := openFull(t)
			if _, err := db.ExecContext(ctx, q, "v"); err != nil {
				t.Fatalf("exec %q: %v", q, err)
			}
			rows, err := db.QueryContext(ctx, q, "v")
			if err != nil {
				t.Fatalf("query %q: %v", q, err)
			}
			rows.Close()
			st, err := db.PrepareContext(ctx, q)
			if err != nil {
				t.Fatalf("prepare %q: %v", q, err)
			}
			args := []any{}
			if numInput(q) == 1 {
				args = append(args, "v")
			}
			if _, err := st.ExecContext(ctx, args...); err != nil {
				t.Fatalf("prepared exec %q: %v", q, err)
			}
			st.Close()
			stmtArgs := normArgs(namedOf(args))
			wantCalls(t, r.statements(),
				rec{op: "exec", query: q, args: []driver.NamedValue{nv(1, "v")}},
				rec{op: "query", query: q, args: []driver.NamedValue{nv(1, "v")}},
				rec{op: "prepare", query: q},
				rec{op: "stmt.exec", query: q, args: stmtArgs},
			)
		}
	}
}

func namedOf(args []any) []driver.NamedValue {
	var out []driver.NamedValue
	for i, a := range args {
		out = append(out, nv(i+1, a))
	}
	return out
}

// golden is one file under testdata/rewrite: a statement and what sqlfence sends.
type golden struct {
	name, in, out string
}

func goldens(t *testing.T) []golden {
	t.Helper()
	files, _ := filepath.Glob("testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	var out []golden
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, sent, ok := strings.Cut(string(data), "\n---- sent ----\n")
		if !ok {
			t.Fatalf("%s: no separator", f)
		}
		out = append(out, golden{strings.TrimSuffix(filepath.Base(f), ".sql"), in, strings.TrimSuffix(sent, "\n")})
	}
	return out
}

// TestMockGoldenReachesDriver drives every golden file through the driver on the
// Exec, Query and Prepare paths and asserts what the inner driver receives: the
// golden's "sent" text and the application's arguments with the epoch appended as
// the last one, at the ordinal of the fence's parameter; the input byte for byte
// for PASS; nothing for REFUSED.
func TestMockGoldenReachesDriver(t *testing.T) {
	for _, g := range goldens(t) {
		t.Run(g.name, func(t *testing.T) {
			switch {
			case strings.HasSuffix(g.name, "_pg17"):
				// The recording driver reports no server version, so a construct
				// older servers read differently is refused on it (SF706); the
				// PostgreSQL tests run it on a server that reads it as the parser does.
				db, r := openFull(t)
				_, err := db.ExecContext(epoch(7), g.in, int64(1), int64(2), int64(3))
				var fe *sqlfence.Error
				if !errors.As(err, &fe) || fe.Code != rulecode.ServerVersion {
					t.Fatalf("exec: err = %v, want SF706", err)
				}
				wantCalls(t, r.statements())
			case g.out == "PASS":
				db, r := openFull(t)
				args := make([]any, numInput(g.in))
				for i := range args {
					args[i] = int64(i + 1)
				}
				if _, err := db.ExecContext(epoch(7), g.in, args...); err != nil {
					t.Fatal(err)
				}
				wantCalls(t, r.statements(), rec{op: "exec", query: g.in, args: namedOf(args)})
			case strings.HasPrefix(g.out, "REFUSED: "):
				db, r := openFull(t)
				_, err := db.ExecContext(epoch(7), g.in)
				if !errors.Is(err, sqlfence.ErrRefused) {
					t.Fatalf("exec: err = %v, want ErrRefused", err)
				}
				notRetryable(t, err)
				_, err = db.QueryContext(epoch(7), g.in)
				if !errors.Is(err, sqlfence.ErrRefused) {
					t.Fatalf("query: err = %v, want ErrRefused", err)
				}
				_, err = db.PrepareContext(epoch(7), g.in)
				if !errors.Is(err, sqlfence.ErrRefused) {
					t.Fatalf("prepare: err = %v, want ErrRefused", err)
				}
				wantCalls(t, r.statements())
			case strings.HasPrefix(g.out, "CLAIM HELPERS ONLY: "):
				// Sent only from the claim helpers; from application code, refused.
				db, r := openFull(t)
				for _, run := range []func() error{
					func() error { _, err := db.ExecContext(epoch(7), g.in); return err },
					func() error { _, err := db.QueryContext(epoch(7), g.in); return err },
				} {
					err := run()
					if !errors.Is(err, sqlfence.ErrRefused) {
						t.Fatalf("err = %v, want ErrRefused", err)
					}
					notRetryable(t, err)
				}
				wantCalls(t, r.statements())
			case regexp.MustCompile(`^[A-Z ]+: `).MatchString(g.out):
				t.Skipf("outcome %q is not a rewrite, a pass or a refusal", g.out)
			default:
				n := numInput(g.out) // the epoch is the highest parameter of the fenced text
				args := make([]any, n-1)
				want := make([]driver.NamedValue, n)
				for i := range args {
					args[i] = int64(100 + i)
					want[i] = nv(i+1, int64(100+i))
				}
				want[n-1] = nv(n, int64(7))

				db, r := openFull(t)
				if _, err := db.ExecContext(epoch(7), g.in, args...); err != nil {
					t.Fatalf("exec: %v", err)
				}
				rows, err := db.QueryContext(epoch(7), g.in, args...)
				if err != nil {
					t.Fatalf("query: %v", err)
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("query rows: %v", err)
				}
				rows.Close()
				st, err := db.PrepareContext(context.Background(), g.in)
				if err != nil {
					t.Fatalf("prepare: %v", err)
				}
				if _, err := st.ExecContext(epoch(7), args...); err != nil {
					t.Fatalf("prepared exec: %v", err)
				}
				// No epoch: nothing more is sent, on any path.
				for _, run := range []func() error{
					func() error { _, err := db.ExecContext(context.Background(), g.in, args...); return err },
					func() error { _, err := db.QueryContext(context.Background(), g.in, args...); return err },
					func() error { _, err := st.ExecContext(context.Background(), args...); return err },
				} {
					err := run()
					if !errors.Is(err, sqlfence.ErrUnfenced) {
						t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
					}
					notRetryable(t, err)
				}
				st.Close()
				wantCalls(t, r.statements(),
					rec{op: "exec", query: g.out, args: want},
					rec{op: "query", query: g.out, args: want},
					rec{op: "prepare", query: g.out},
					rec{op: "stmt.exec", query: g.out, args: want},
				)
			}
		})
	}
}

// TestMockRewriteExact spells out one statement end to end: the text, the arguments
// (the application's, in order, then the epoch as $3 with ordinal 3), on each path.
func TestMockRewriteExact(t *testing.T) {
	const (
		in   = "/* app=worker */ UPDATE inventory\n  SET quantity = quantity - $2   -- take\n  WHERE sku = $1;"
		sent = mark + "/* app=worker */ UPDATE inventory\n  SET quantity = quantity - $2, writer_epoch = $3::bigint   -- take\n  WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint;"
	)
	db, r := openFull(t)
	if _, err := db.ExecContext(epoch(42), in, "a", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(epoch(43), in, "b", 6); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, r.statements(),
		rec{op: "exec", query: sent, args: []driver.NamedValue{nv(1, "a"), nv(2, int64(5)), nv(3, int64(42))}},
		rec{op: "exec", query: sent, args: []driver.NamedValue{nv(1, "b"), nv(2, int64(6)), nv(3, int64(43))}},
	)
	// The epoch carries no name: pgx binds by position.
	for _, c := range r.statements() {
		if e := c.args[len(c.args)-1]; e.Name != "" {
			t.Fatalf("epoch argument has a name %q", e.Name)
		}
	}
}

// TestMockPrepared: a prepared protected write is prepared once with the fenced text,
// reports its parameters without the epoch, and binds the epoch of each execution's
// context, not the one it was prepared under.
func TestMockPrepared(t *testing.T) {
	const (
		in   = "UPDATE inventory SET quantity = $2 WHERE sku = $1"
		sent = mark + "UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint"
	)
	db, r := openFull(t)
	st, err := db.PrepareContext(epoch(1), in)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(epoch(7), "a", 1); err != nil {
		t.Fatal(err)
	}
	rows, err := st.QueryContext(epoch(8), "b", 2)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	// database/sql checks the count against NumInput, which excludes the epoch.
	if _, err := st.ExecContext(epoch(9), "a", 1, 9); err == nil || !strings.Contains(err.Error(), "expected 2 arguments, got 3") {
		t.Fatalf("three arguments: err = %v, want database/sql's count error", err)
	}
	if _, err := st.ExecContext(context.Background(), "a", 1); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
	}
	wantCalls(t, r.statements(),
		rec{op: "prepare", query: sent},
		rec{op: "stmt.exec", query: sent, args: []driver.NamedValue{nv(1, "a"), nv(2, int64(1)), nv(3, int64(7))}},
		rec{op: "stmt.query", query: sent, args: []driver.NamedValue{nv(1, "b"), nv(2, int64(2)), nv(3, int64(8))}},
	)

	// At the driver level: NumInput of the fenced statement is the application's count.
	c, err := sqlfence.NewConnector(&fullConnector{r: newRecorder()}, mockPolicy(t)).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for q, want := range map[string]int{in: 2, "SELECT $1, $2, $3": 3, "DELETE FROM inventory": 0} {
		ds, err := c.(driver.ConnPrepareContext).PrepareContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := ds.NumInput(); got != want {
			t.Errorf("NumInput(%q) = %d, want %d", q, got, want)
		}
		ds.Close()
	}
}

// TestMockTransaction: BeginTx reaches the inner driver with its options, each
// statement in the transaction is fenced with the epoch of its own context, and
// Commit and Rollback are the inner transaction's.
func TestMockTransaction(t *testing.T) {
	const (
		in   = "DELETE FROM inventory WHERE sku = $1"
		sent = mark + "DELETE FROM inventory WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint"
	)
	db, r := openFull(t)
	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(epoch(7), in, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(epoch(8), in, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(context.Background(), in, "c"); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch in a transaction: err = %v, want ErrUnfenced", err)
	}
	st, err := tx.PrepareContext(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(epoch(9), "d"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, r.ops("begin", "exec", "prepare", "stmt.exec", "commit"),
		rec{op: "begin"},
		rec{op: "exec", query: sent, args: []driver.NamedValue{nv(1, "a"), nv(2, int64(7))}},
		rec{op: "exec", query: sent, args: []driver.NamedValue{nv(1, "b"), nv(2, int64(8))}},
		rec{op: "prepare", query: sent},
		rec{op: "stmt.exec", query: sent, args: []driver.NamedValue{nv(1, "d"), nv(2, int64(9))}},
		rec{op: "commit"},
	)
	if b := r.ops("begin")[0]; b.opts != (driver.TxOptions{Isolation: driver.IsolationLevel(sql.LevelSerializable), ReadOnly: true}) {
		t.Fatalf("BeginTx options reached the inner driver as %+v", b.opts)
	}

	r.reset()
	tx, err = db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, r.ops("begin", "rollback"), rec{op: "begin"}, rec{op: "rollback"})
}

// mark is the guard's marker the driver puts before a fenced write of inventory.
const mark = "/*sqlfence fenced: inventory*/ "

// classifyReply scripts a fenced write that affected no rows: the write returns 0
// rows, and the classification query (any other SELECT) finds stored epoch stored
// (nil: no row matches).
func classifyReply(write string, stored any) func(op, query string, args []driver.NamedValue) (any, error) {
	return func(op, query string, args []driver.NamedValue) (any, error) {
		switch {
		case query == write && strings.HasSuffix(op, "exec"):
			return driver.RowsAffected(0), nil
		case query == write:
			return &fakeRows{cols: []string{"sku"}}, nil
		case strings.HasPrefix(query, "SELECT ") && op == "query":
			return &fakeRows{cols: []string{"max", "count"}, data: [][]driver.Value{{stored, int64(0)}}}, nil
		}
		return nil, nil
	}
}

// TestMockZeroRows: a fenced write that affected no rows costs one classification
// query, and only then: ErrFenced when a newer epoch is stored, the "already written"
// error for the same epoch in strict mode, a plain 0-row result when nothing matches.
// Through QueryContext, a RETURNING write reports the fence from rows.Err().
func TestMockZeroRows(t *testing.T) {
	const (
		in   = "UPDATE inventory SET quantity = $2 WHERE sku = $1 RETURNING sku"
		sent = mark + "UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint RETURNING sku"
	)
	for _, c := range []struct {
		name   string
		stored any
		want   error
	}{
		{"newer epoch stored", int64(9), sqlfence.ErrFenced},
		{"same epoch, strict", int64(5), sqlfence.ErrAlreadyWritten},
		{"older epoch stored", int64(4), nil},
		{"no row matches", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(t *testing.T, r *recorder, err error, op string) {
				t.Helper()
				if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
					t.Fatalf("err = %v, want %v", err, c.want)
				}
				if c.want == sqlfence.ErrFenced {
					var fe *sqlfence.Error
					if !errors.As(err, &fe) || fe.Epoch != 5 || fe.StoredEpoch != 9 || !fe.HasStored || fe.Table != "inventory" || fe.Statement != in {
						t.Fatalf("fence error %#v: want table inventory, epoch 5, stored 9, the application's statement", fe)
					}
				}
				if err != nil {
					notRetryable(t, err)
				}
				calls := r.statements()
				if len(calls) != 2 || calls[0].op != op || calls[0].query != sent || calls[1].op != "query" {
					t.Fatalf("want the write then one classification query, got:\n  %s", joinRecs(calls))
				}
				cl := calls[1]
				if !strings.HasPrefix(cl.query, "SELECT ") || !strings.Contains(cl.query, "writer_epoch") {
					t.Fatalf("classification query %q", cl.query)
				}
				// It binds the argument its WHERE uses ($1, the sku) and the epoch.
				if !reflect.DeepEqual(cl.args, []driver.NamedValue{nv(1, "a"), nv(2, int64(5))}) {
					t.Fatalf("classification query %s", cl)
				}
			}
			t.Run("exec", func(t *testing.T) {
				db, r := openFull(t)
				r.reply = classifyReply(sent, c.stored)
				res, err := db.ExecContext(epoch(5), in, "a", 1)
				check(t, r, err, "exec")
				if err == nil {
					if n, _ := res.RowsAffected(); n != 0 {
						t.Fatalf("%d rows affected", n)
					}
				}
			})
			t.Run("query", func(t *testing.T) {
				db, r := openFull(t)
				r.reply = classifyReply(sent, c.stored)
				rows, err := db.QueryContext(epoch(5), in, "a", 1)
				if err != nil {
					t.Fatalf("QueryContext: %v (the fence belongs in rows.Err)", err)
				}
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
				check(t, r, err, "query")
			})
			t.Run("prepared", func(t *testing.T) {
				db, r := openFull(t)
				r.reply = classifyReply(sent, c.stored)
				st, err := db.Prepare(in)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				r.reset()
				_, err = st.ExecContext(epoch(5), "a", 1)
				check(t, r, err, "stmt.exec")
			})
		})
	}

	t.Run("rows affected: no extra round trip", func(t *testing.T) {
		db, r := openFull(t)
		if _, err := db.ExecContext(epoch(5), in, "a", 1); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(epoch(5), in, "a", 1)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n := len(r.statements()); n != 2 {
			t.Fatalf("%d statements reached the driver, want the two writes only:\n  %s", n, joinRecs(r.statements()))
		}
	})

	t.Run("OnFenced cancels the handler", func(t *testing.T) {
		db, r := openFull(t)
		r.reply = classifyReply(sent, int64(9))
		ctx, cancel := context.WithCancelCause(epoch(5))
		defer cancel(nil)
		_, err := db.ExecContext(sqlfence.OnFenced(ctx, cancel), in, "a", 1)
		if !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("err = %v", err)
		}
		if !errors.Is(context.Cause(ctx), sqlfence.ErrFenced) {
			t.Fatalf("handler context cause = %v, want ErrFenced", context.Cause(ctx))
		}
	})
}

// TestMockNothingSent: refusals and unfenced writes send nothing at all, on every
// path, and are errors database/sql does not retry on another connection.
func TestMockNothingSent(t *testing.T) {
	for _, c := range []struct {
		stmt string
		ctx  context.Context
		args []any
		want error
	}{
		{"TRUNCATE inventory", epoch(7), nil, sqlfence.ErrRefused},
		{"COPY inventory (sku) FROM STDIN", epoch(7), nil, sqlfence.ErrRefused},
		{"UPDATE inventory SET writer_epoch = 1", epoch(7), nil, sqlfence.ErrRefused},
		{"INSERT INTO inventory VALUES ('a', 1)", epoch(7), nil, sqlfence.ErrRefused},
		{"DELETE FROM inventory WHERE CURRENT OF c", epoch(7), nil, sqlfence.ErrRefused},
		{"SELECT 1; DELETE FROM inventory", epoch(7), nil, sqlfence.ErrRefused},
		{"PREPARE p AS DELETE FROM inventory", epoch(7), nil, sqlfence.ErrRefused},
		{"CALL billing.recalc()", epoch(7), nil, sqlfence.ErrRefused},
		{"DELETE FROM inventory WHERE", epoch(7), nil, sqlfence.ErrRefused},
		{"DELETE FROM inventory WHERE sku = $1", epoch(7), []any{sql.Named("sku", "a")}, sqlfence.ErrRefused},
		{"DELETE FROM inventory WHERE sku = $1", epoch(7), []any{"a", "extra"}, sqlfence.ErrRefused},
		{"DELETE FROM inventory WHERE sku = $1", context.Background(), []any{"a"}, sqlfence.ErrUnfenced},
		{"DELETE FROM inventory WHERE sku = $1", epoch(0), []any{"a"}, sqlfence.ErrUnfenced},
		{"DELETE FROM inventory WHERE sku = $1", sqlfence.Unfenced(context.Background(), "repair"), []any{"a"}, sqlfence.ErrUnfenced},
	} {
		t.Run(c.stmt, func(t *testing.T) {
			db, r := openFull(t)
			_, err := db.ExecContext(c.ctx, c.stmt, c.args...)
			if !errors.Is(err, c.want) {
				t.Fatalf("exec: err = %v, want %v", err, c.want)
			}
			notRetryable(t, err)
			_, err = db.QueryContext(c.ctx, c.stmt, c.args...)
			if !errors.Is(err, c.want) {
				t.Fatalf("query: err = %v, want %v", err, c.want)
			}
			notRetryable(t, err)
			if len(r.statements()) != 0 {
				t.Fatalf("sent:\n  %s", joinRecs(r.statements()))
			}
			if r.connections() != 1 {
				t.Fatalf("%d connections: the error made database/sql retry", r.connections())
			}
		})
	}
}

// TestMockErrorsPassThrough: the inner driver's own errors reach the application as
// they are, so errors.As on the driver's error type keeps working.
func TestMockErrorsPassThrough(t *testing.T) {
	serverErr := &fakeServerError{code: "23505"}
	db, r := openFull(t)
	r.reply = func(op, query string, args []driver.NamedValue) (any, error) {
		if op == "exec" || op == "query" {
			return nil, serverErr
		}
		return nil, nil
	}
	for _, q := range []string{"INSERT INTO inventory (sku) VALUES ($1)", "INSERT INTO staging (sku) VALUES ($1)"} {
		_, err := db.ExecContext(epoch(7), q, "a")
		var fe *fakeServerError
		if !errors.As(err, &fe) || fe != serverErr {
			t.Fatalf("%s: err = %v, want the inner driver's error", q, err)
		}
		_, err = db.QueryContext(epoch(7), q, "a")
		if !errors.As(err, &fe) || fe != serverErr {
			t.Fatalf("%s: query err = %v, want the inner driver's error", q, err)
		}
	}
}

type fakeServerError struct{ code string }

func (e *fakeServerError) Error() string { return "fake server error " + e.code }

// TestMockClassificationBadConn: when the classification query fails with
// driver.ErrBadConn (the connection broke after the write), the error must not be
// ErrBadConn, or database/sql runs the whole write again on another connection.
func TestMockClassificationBadConn(t *testing.T) {
	const in = "UPDATE inventory SET quantity = $2 WHERE sku = $1"
	db, r := openFull(t)
	base := classifyReply(mark+"UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint", int64(9))
	r.reply = func(op, query string, args []driver.NamedValue) (any, error) {
		if op == "query" && strings.HasPrefix(query, "SELECT ") {
			return nil, driver.ErrBadConn
		}
		return base(op, query, args)
	}
	_, err := db.ExecContext(epoch(5), in, "a", 1)
	if err == nil {
		t.Fatal("classification failed, but the write reported success")
	}
	if errors.Is(err, driver.ErrBadConn) || r.connections() != 1 || len(r.ops("exec")) != 1 {
		t.Fatalf("a failed classification query wraps driver.ErrBadConn with %%w, so database/sql retries the write: err = %v after %d connections and %d writes", err, r.connections(), len(r.ops("exec")))
	}
}

// TestMockDollarZeroNoPanic: $0 is not a parameter PostgreSQL accepts, but an inner
// driver may still answer; sqlfence must not panic classifying the result.
func TestMockDollarZeroNoPanic(t *testing.T) {
	const in = "UPDATE inventory SET quantity = 1 WHERE sku = $0"
	db, r := openFull(t)
	r.reply = func(op, query string, args []driver.NamedValue) (any, error) {
		if op == "exec" {
			return driver.RowsAffected(0), nil
		}
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("ExecContext panicked classifying a 0-row write that uses $0 (the classifier binds argument index -1): %v", p)
		}
	}()
	db.ExecContext(epoch(5), in)
}

// ---- transparency: every optional interface forwarded ----

// TestMockTransparencyFull: every optional interface of the inner driver is used
// through sqlfence as database/sql would use it without sqlfence.
func TestMockTransparencyFull(t *testing.T) {
	db, r := openFull(t)
	ctx := context.Background()

	// Pinger.
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.ops("ping")) != 1 {
		t.Fatalf("Ping not forwarded: %s", joinRecs(r.all()))
	}
	pingErr := errors.New("ping failed")
	r.reply = func(op, _ string, _ []driver.NamedValue) (any, error) {
		if op == "ping" {
			return nil, pingErr
		}
		return nil, nil
	}
	if err := db.PingContext(ctx); !errors.Is(err, pingErr) {
		t.Fatalf("Ping error = %v, want the inner driver's", err)
	}
	r.reply = nil

	// SessionResetter and Validator: database/sql resets and validates a pooled
	// connection before reusing it.
	r.reset()
	for range 2 {
		if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.ops("reset")) == 0 || len(r.ops("valid")) == 0 {
		t.Fatalf("ResetSession / IsValid not forwarded: %s", joinRecs(r.all()))
	}
	// An invalid connection is discarded and a new one made.
	r.mu.Lock()
	r.valid = false
	r.mu.Unlock()
	before := r.connections()
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if r.connections() == before {
		t.Fatal("IsValid false did not make database/sql replace the connection")
	}
	r.mu.Lock()
	r.valid = true
	r.mu.Unlock()

	// NamedValueChecker: a type only the inner driver accepts, on a pass-through, a
	// fenced write, and a prepared fenced write.
	r.reset()
	arg := special{"x"}
	if _, err := db.ExecContext(ctx, "SELECT $1", arg); err != nil {
		t.Fatalf("pass-through with a driver-specific argument: %v", err)
	}
	if _, err := db.ExecContext(epoch(7), "DELETE FROM inventory WHERE note = $1", arg); err != nil {
		t.Fatalf("fenced write with a driver-specific argument: %v", err)
	}
	st, err := db.Prepare("DELETE FROM inventory WHERE note = $1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(epoch(8), arg); err != nil {
		t.Fatalf("prepared fenced write with a driver-specific argument: %v", err)
	}
	st.Close()
	const sent = mark + "DELETE FROM inventory WHERE (note = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint"
	wantCalls(t, r.statements(),
		rec{op: "exec", query: "SELECT $1", args: []driver.NamedValue{nv(1, arg)}},
		rec{op: "exec", query: sent, args: []driver.NamedValue{nv(1, arg), nv(2, int64(7))}},
		rec{op: "prepare", query: sent},
		rec{op: "stmt.exec", query: sent, args: []driver.NamedValue{nv(1, arg), nv(2, int64(8))}},
	)
	if len(r.ops("check")) < 3 {
		t.Fatalf("CheckNamedValue not forwarded: %s", joinRecs(r.all()))
	}

	// Rows: NextResultSet and every ColumnType* on a pass-through query and on the
	// rows of a fenced write with RETURNING, which sqlfence wraps.
	types := []fakeType{{reflect.TypeFor[int64](), "INT8", 8, false, 0, 0}, {reflect.TypeFor[string](), "NUMERIC", 40, true, 10, 2}}
	r.reply = func(op, query string, _ []driver.NamedValue) (any, error) {
		if op != "query" {
			return nil, nil
		}
		second := &fakeRows{cols: []string{"z"}, data: [][]driver.Value{{"second"}}, types: types[:1]}
		return &fakeRows{cols: []string{"a", "b"}, data: [][]driver.Value{{int64(1), "1.5"}}, types: types, next: second}, nil
	}
	for _, q := range []struct {
		ctx  context.Context
		stmt string
	}{
		{ctx, "SELECT a, b FROM inventory"},
		{epoch(7), "UPDATE inventory SET quantity = 1 RETURNING quantity, note"},
	} {
		rows, err := db.QueryContext(q.ctx, q.stmt)
		if err != nil {
			t.Fatal(err)
		}
		cts, err := rows.ColumnTypes()
		if err != nil {
			t.Fatal(err)
		}
		for i, ct := range cts {
			w := types[i]
			l, lok := ct.Length()
			n, nok := ct.Nullable()
			p, s, dok := ct.DecimalSize()
			if ct.ScanType() != w.scan || ct.DatabaseTypeName() != w.name || l != w.length || !lok || n != w.nullable || !nok || p != w.precision || s != w.frac || !dok {
				t.Errorf("%s: column %d type not forwarded: %v %q %d %v %v %v %d %d %v", q.stmt, i, ct.ScanType(), ct.DatabaseTypeName(), l, lok, n, nok, p, s, dok)
			}
		}
		for rows.Next() {
		}
		if !rows.NextResultSet() {
			t.Fatalf("%s: NextResultSet not forwarded (err %v)", q.stmt, rows.Err())
		}
		var z string
		if !rows.Next() || rows.Scan(&z) != nil || z != "second" {
			t.Fatalf("%s: second result set not read: %q %v", q.stmt, z, rows.Err())
		}
		rows.Close()
	}
	r.reply = nil

	// Connector Close: DB.Close closes the connections and then the connector.
	r.reset()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(r.ops("connector.close")) != 1 {
		t.Fatalf("DB.Close did not reach the inner connector: %s", joinRecs(r.all()))
	}
}

// TestMockTransparencyBare: an inner driver with none of the optional interfaces.
// database/sql falls back to Prepare for Exec and Query, and the prepared path fences
// just the same; the rest behaves as database/sql does with the bare driver itself.
func TestMockTransparencyBare(t *testing.T) {
	const (
		in   = "UPDATE inventory SET quantity = $2 WHERE sku = $1"
		sent = mark + "UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint"
	)
	db, r := openBare(t)
	ctx := context.Background()

	if _, err := db.ExecContext(epoch(7), in, "a", 1); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(epoch(8), in+" RETURNING sku", "b", 2)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	if _, err := db.ExecContext(ctx, "SELECT $1", "pass"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, in, "a", 1)
	if !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch: err = %v", err)
	}
	notRetryable(t, err)
	_, err = db.ExecContext(epoch(7), "TRUNCATE inventory")
	if !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("TRUNCATE: err = %v", err)
	}
	notRetryable(t, err)
	wantCalls(t, r.ops("prepare", "stmt.exec", "stmt.query"),
		rec{op: "prepare", query: sent},
		rec{op: "stmt.exec", query: sent, args: []driver.NamedValue{nv(1, "a"), nv(2, int64(1)), nv(3, int64(7))}},
		rec{op: "prepare", query: sent + " RETURNING sku"},
		rec{op: "stmt.query", query: sent + " RETURNING sku", args: []driver.NamedValue{nv(1, "b"), nv(2, int64(2)), nv(3, int64(8))}},
		rec{op: "prepare", query: "SELECT $1"},
		rec{op: "stmt.exec", query: "SELECT $1", args: []driver.NamedValue{nv(1, "pass")}},
		// The unfenced write prepared its fenced text, then sent nothing.
		rec{op: "prepare", query: sent},
	)

	// No Pinger, SessionResetter, Validator: a healthy connection, reused.
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if r.connections() != 1 {
		t.Fatalf("%d connections, want one reused", r.connections())
	}
	// No NamedValueChecker: database/sql's default conversion, the same with and
	// without sqlfence.
	_, errFenced := db.ExecContext(ctx, "SELECT $1", special{"x"})
	plain := sql.OpenDB(&bareConnector{r: newRecorder()})
	defer plain.Close()
	_, errPlain := plain.ExecContext(ctx, "SELECT $1", special{"x"})
	if errFenced == nil || errPlain == nil || errFenced.Error() != errPlain.Error() {
		t.Fatalf("unsupported argument type: through sqlfence %v, without %v", errFenced, errPlain)
	}
	// No ConnBeginTx: plain Begin works, options are an error rather than ignored.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(epoch(9), in, "c", 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err == nil {
		t.Fatal("BeginTx with options on a driver without ConnBeginTx succeeded")
	}
	// No ColumnType*: the same answers database/sql gives for the bare driver.
	rows, err = db.QueryContext(epoch(7), in+" RETURNING sku", "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	plainRows, err := plain.QueryContext(ctx, "SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	plainCts, err := plainRows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(columnTypes(cts)) != fmt.Sprint(columnTypes(plainCts)) {
		t.Fatalf("column types through sqlfence %v, without %v", columnTypes(cts), columnTypes(plainCts))
	}
	rows.Close()
	plainRows.Close()
	// No io.Closer on the connector: DB.Close still works.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func columnTypes(cts []*sql.ColumnType) []string {
	var out []string
	for _, ct := range cts {
		l, lok := ct.Length()
		n, nok := ct.Nullable()
		p, s, dok := ct.DecimalSize()
		out = append(out, fmt.Sprint(ct.ScanType(), ct.DatabaseTypeName(), l, lok, n, nok, p, s, dok))
	}
	return out
}

// TestMockBareZeroRows: without QueryerContext on the inner connection, a fenced
// write that affected no rows still has to be classified (fenced, already written, or nothing matched), for example
// through a prepared query; otherwise the stale worker sees a plain 0-row success.
func TestMockBareZeroRows(t *testing.T) {
	const (
		in   = "UPDATE inventory SET quantity = $2 WHERE sku = $1"
		sent = mark + "UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint"
	)
	db, r := openBare(t)
	r.reply = func(op, query string, args []driver.NamedValue) (any, error) {
		switch {
		case op == "stmt.exec" && query == sent:
			return driver.RowsAffected(0), nil
		case op == "stmt.query" && strings.HasPrefix(query, "SELECT "):
			return &fakeRows{cols: []string{"max", "count"}, data: [][]driver.Value{{int64(9), int64(0)}}}, nil
		}
		return nil, nil
	}
	_, err := db.ExecContext(epoch(5), in, "a", 1)
	if !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("a fenced write over an inner driver without QueryerContext is not classified: err = %v, want ErrFenced", err)
	}
}

// TestMockOwnConnector: sqlfence's connector under sql.OpenDB, the way an application
// wraps another driver, makes connections only on demand and closes the inner
// connector with the DB.
func TestMockOwnConnector(t *testing.T) {
	r := newRecorder()
	c := sqlfence.NewConnector(&fullConnector{r: r}, mockPolicy(t))
	if _, ok := c.(io.Closer); !ok {
		t.Fatal("sqlfence's connector hides the inner connector's Close")
	}
	db := sql.OpenDB(c)
	if r.connections() != 0 {
		t.Fatalf("OpenDB connected %d times", r.connections())
	}
	if _, err := db.ExecContext(epoch(3), "INSERT INTO reports (body) VALUES ($1)", "x"); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, r.statements(), rec{op: "exec", query: "/*sqlfence fenced: reports*/ INSERT INTO reports (body, fence_epoch) VALUES ($1, $2::bigint)",
		args: []driver.NamedValue{nv(1, "x"), nv(2, int64(3))}})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(r.ops("close")) != 1 || len(r.ops("connector.close")) != 1 {
		t.Fatalf("DB.Close: %s", joinRecs(r.all()))
	}
	// A nil policy is a mistake at construction, never an unfenced driver.
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil policy") {
				t.Fatalf("NewConnector with a nil policy: recovered %v, want a panic naming the nil policy", r)
			}
		}()
		sqlfence.NewConnector(&fullConnector{r: newRecorder()}, nil)
	}()
}

// TestMockInnerErrSkip: an inner driver may answer ExecContext or QueryContext with
// driver.ErrSkip at run time; database/sql then prepares the statement, and that path
// is fenced too: the fenced text is prepared and run with the epoch.
func TestMockInnerErrSkip(t *testing.T) {
	const (
		in   = "DELETE FROM inventory WHERE sku = $1"
		sent = mark + "DELETE FROM inventory WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $2::bigint"
	)
	db, r := openFull(t)
	r.reply = func(op, query string, args []driver.NamedValue) (any, error) {
		if op == "exec" || op == "query" {
			return nil, driver.ErrSkip
		}
		return nil, nil
	}
	if _, err := db.ExecContext(epoch(7), in, "a"); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(epoch(8), in, "b")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if _, err := db.ExecContext(context.Background(), in, "c"); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch: err = %v", err)
	}
	wantCalls(t, r.statements(),
		rec{op: "exec", query: sent, args: []driver.NamedValue{nv(1, "a"), nv(2, int64(7))}},
		rec{op: "prepare", query: sent},
		rec{op: "stmt.exec", query: sent, args: []driver.NamedValue{nv(1, "a"), nv(2, int64(7))}},
		rec{op: "query", query: sent, args: []driver.NamedValue{nv(1, "b"), nv(2, int64(8))}},
		rec{op: "prepare", query: sent},
		rec{op: "stmt.query", query: sent, args: []driver.NamedValue{nv(1, "b"), nv(2, int64(8))}},
	)
}

// TestMockClassifierKeepsLiterals: the classification query is built from the
// statement's own text, and must keep its literals as they are: a literal that happens
// to spell sqlfence's internal placeholder must not become a parameter.
func TestMockClassifierKeepsLiterals(t *testing.T) {
	const (
		in   = "UPDATE inventory SET quantity = 1 WHERE note = 'sqlfence_epoch_marker'"
		sent = mark + "UPDATE inventory SET quantity = 1, writer_epoch = $1::bigint WHERE (note = 'sqlfence_epoch_marker') AND inventory.writer_epoch OPERATOR(pg_catalog.<) $1::bigint"
	)
	db, r := openFull(t)
	r.reply = classifyReply(sent, int64(9))
	_, err := db.ExecContext(epoch(5), in)
	calls := r.statements()
	if len(calls) != 2 {
		t.Fatalf("want the write and the classification query:\n  %s", joinRecs(calls))
	}
	if !strings.Contains(calls[1].query, "'sqlfence_epoch_marker'") {
		t.Fatalf("the classification query replaced the statement's literal 'sqlfence_epoch_marker' with the epoch parameter: %s (err %v)", calls[1].query, err)
	}
}
