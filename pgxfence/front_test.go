package pgxfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

func TestNewErrors(t *testing.T) {
	p := policy(t, "")
	if _, err := pgxfence.New(nil, p); err == nil {
		t.Error("New(nil pool): no error")
	}
	if _, err := pgxfence.NewConn(nil, p); err == nil {
		t.Error("NewConn(nil conn): no error")
	}
	f := newFixture(t)
	ctx := timeout(t, context.Background())
	c, err := pgx.Connect(ctx, f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := pgxfence.NewConn(c, nil); err == nil {
		t.Error("NewConn(nil policy): no error")
	}
	if _, err := pgxfence.NewConn(c, &sqlfence.Policy{}); err == nil {
		t.Error("NewConn(hand-built policy): no error")
	}
	if _, err := pgxfence.New(f.raw, &sqlfence.Policy{}); err == nil {
		t.Error("New(hand-built policy): no error")
	}
}

// TestExactAccounting: a multi-row upsert with one fenced and one new row reports
// the fence under WithExactAccounting on Exec, Query with RETURNING and QueryRow.
func TestExactAccounting(t *testing.T) {
	p := policy(t, "")
	const upsert = `INSERT INTO inventory (sku, quantity) VALUES ('a', 1), ('z', 2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`
	for _, fr := range fronts {
		for _, path := range []string{"exec", "query returning", "batch"} {
			t.Run(fr.name+"/"+path, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				f.exec(t, `UPDATE inventory SET writer_epoch = 9 WHERE sku = 'a'`)
				d, end := fr.open(t, f, p, pgx.QueryExecModeCacheStatement)
				ctx := timeout(t, sqlfence.WithExactAccounting(sqlfence.WithEpoch(context.Background(), 7)))
				stmt := upsert
				if path != "exec" {
					stmt += ` RETURNING sku`
				}
				var err error
				if path == "batch" {
					b := &pgx.Batch{}
					b.Queue(`SELECT 1`)
					b.Queue(stmt)
					br := d.SendBatch(ctx, b)
					if _, err := br.Exec(); err != nil {
						t.Fatal(err)
					}
					_, err = br.Exec()
					if cerr := br.Close(); cerr != nil {
						t.Fatal(cerr)
					}
				} else {
					_, err = run(ctx, d, path != "exec", stmt)
				}
				var fe *sqlfence.Error
				if !errors.As(err, &fe) || !errors.Is(err, sqlfence.ErrFenced) || fe.Affected != 1 || fe.Fenced != 1 || fe.StoredEpoch != 9 {
					t.Fatalf("err = %v, want ErrFenced with 1 affected, 1 fenced, stored 9", err)
				}
				if err := end(); err != nil {
					t.Fatal(err)
				}
				if got := f.state(t, inventoryState); got != "a:10:9 b:20:5 z:2:7" {
					t.Fatalf("data %q", got)
				}
			})
		}
	}
}

// TestQueryRowFenced: a fenced single-row write with RETURNING through QueryRow
// reports the fence from Scan, and cancels the handler's context.
func TestQueryRowFenced(t *testing.T) {
	f := newFixture(t)
	d := f.pool(t, policy(t, ""), pgx.QueryExecModeCacheStatement)
	handler, cancel := context.WithCancelCause(timeout(t, context.Background()))
	defer cancel(nil)
	ctx := sqlfence.OnFenced(sqlfence.WithEpoch(handler, 3), cancel)
	var q int
	err := d.QueryRow(ctx, `UPDATE inventory SET quantity = 1 WHERE sku = $1 RETURNING quantity`, "a").Scan(&q)
	if !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("Scan: %v, want ErrFenced", err)
	}
	if !errors.Is(context.Cause(handler), sqlfence.ErrFenced) {
		t.Fatalf("handler's context: cause %v, want ErrFenced", context.Cause(handler))
	}
	// An ordinary 0-row result is no fence.
	err = d.QueryRow(sqlfence.WithEpoch(timeout(t, context.Background()), 7), `UPDATE inventory SET quantity = 1 WHERE sku = $1 RETURNING quantity`, "nope").Scan(&q)
	if !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("no matching row: %v, want pgx.ErrNoRows", err)
	}
	tag, err := d.Exec(sqlfence.WithEpoch(timeout(t, context.Background()), 7), `UPDATE inventory SET quantity = 1 WHERE sku = $1`, "nope")
	if err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("no matching row: %v, %v", tag, err)
	}
}

// TestAlreadyWritten: strict mode's second write by the same epoch.
func TestAlreadyWritten(t *testing.T) {
	f := newFixture(t)
	d := f.conn(t, policy(t, ""), pgx.QueryExecModeCacheStatement)
	ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)
	for i, want := range []error{nil, sqlfence.ErrAlreadyWritten} {
		if _, err := d.Exec(ctx, `UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'a'`); !errors.Is(err, want) {
			t.Fatalf("write %d: %v, want %v", i+1, err, want)
		}
	}
}

// TestRaw: the pgx value behind each wrapper only on the explicit unfenced path;
// Tx.Conn and Rows.Conn hand out nothing.
func TestRaw(t *testing.T) {
	f := newFixture(t)
	strictP := policy(t, "")
	allow := policy(t, "version: 1\nepoch_column: writer_epoch\nunfenced: allow\ntables:\n  - name: inventory\n")
	ctx := timeout(t, context.Background())
	un := sqlfence.Unfenced(ctx, "bulk fix, ticket 42")
	pool := f.pool(t, strictP, pgx.QueryExecModeCacheStatement)
	if _, err := pool.Raw(un); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("Raw without unfenced: allow: %v", err)
	}
	pool = f.pool(t, allow, pgx.QueryExecModeCacheStatement)
	if _, err := pool.Raw(ctx); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("Raw without sqlfence.Unfenced: %v", err)
	}
	if raw, err := pool.Raw(un); err != nil || raw == nil {
		t.Fatalf("Raw on the unfenced path: %v", err)
	}
	conn := f.conn(t, allow, pgx.QueryExecModeCacheStatement)
	if _, err := conn.Raw(ctx); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("Conn.Raw without sqlfence.Unfenced: %v", err)
	}
	if raw, err := conn.Raw(un); err != nil || raw == nil {
		t.Fatalf("Conn.Raw on the unfenced path: %v", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if tx.Conn() != nil {
		t.Fatal("Tx.Conn() handed out the connection")
	}
	if _, err := tx.(*pgxfence.Tx).Raw(ctx); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("Tx.Raw without sqlfence.Unfenced: %v", err)
	}
	if raw, err := tx.(*pgxfence.Tx).Raw(un); err != nil || raw == nil || raw.Conn() == nil {
		t.Fatalf("Tx.Raw on the unfenced path: %v", err)
	}
	rows, err := tx.Query(ctx, `SELECT 1`)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Conn() != nil {
		t.Fatal("Rows.Conn() handed out the connection")
	}
	rows.Close()
}

// TestNamedArgs: a rewriter's text is what is decided and fenced.
func TestNamedArgs(t *testing.T) {
	for _, fr := range fronts {
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			d, end := fr.open(t, f, policy(t, ""), pgx.QueryExecModeCacheStatement)
			stmt := `UPDATE inventory SET quantity = @q WHERE sku = @sku`
			args := pgx.NamedArgs{"q": 1, "sku": "a"}
			if _, err := d.Exec(timeout(t, context.Background()), stmt, args); !errors.Is(err, sqlfence.ErrUnfenced) {
				t.Fatalf("no epoch: %v", err)
			}
			if _, err := d.Exec(sqlfence.WithEpoch(timeout(t, context.Background()), 3), stmt, args); !errors.Is(err, sqlfence.ErrFenced) {
				t.Fatalf("stale: %v", err)
			}
			ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)
			var q int
			if err := d.QueryRow(ctx, stmt+` RETURNING quantity`, pgx.NamedArgs{"q": 2, "sku": "b"}).Scan(&q); err != nil || q != 2 {
				t.Fatalf("fresh QueryRow: %d, %v", q, err)
			}
			if _, err := d.Exec(ctx, stmt, pgx.QueryExecModeExec, args); err != nil {
				t.Fatalf("fresh with an exec mode first: %v", err)
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			if got := f.state(t, inventoryState); got != "a:1:7 b:2:7" {
				t.Fatalf("data %q", got)
			}
			for _, s := range f.tr.take() {
				if strings.Contains(s, "@q") {
					t.Fatalf("sent the rewriter's input: %s", s)
				}
			}
		})
	}
}

// TestPinnedSettings: a session whose settings read text differently (changed
// where sqlfence could not see it) is refused before every statement.
func TestPinnedSettings(t *testing.T) {
	f := newFixture(t)
	d := f.conn(t, policy(t, "version: 1\nepoch_column: writer_epoch\nunfenced: allow\ntables:\n  - name: inventory\n"), pgx.QueryExecModeCacheStatement)
	ctx := timeout(t, context.Background())
	if _, err := d.Exec(ctx, `SET standard_conforming_strings = off`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("SET standard_conforming_strings: %v", err)
	}
	raw, err := d.Raw(sqlfence.Unfenced(ctx, "test"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(ctx, `SET standard_conforming_strings = off`); err != nil {
		t.Fatal(err)
	}
	var fe *sqlfence.Error
	if _, err := d.Exec(ctx, `SELECT 1`); !errors.As(err, &fe) || fe.Code != "SF704" {
		t.Fatalf("after the setting changed: %v, want SF704", err)
	}
}
