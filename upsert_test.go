package sqlfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// TestUpsertClassification: an INSERT … ON CONFLICT DO UPDATE that wrote nothing is
// explained by the rows its conflict target matches, like an UPDATE: a newer epoch is
// a fence, this epoch in strict mode is "already written" (and does not cancel the
// handler), no match is an ordinary result. Judged on the data.
func TestUpsertClassification(t *testing.T) {
	t.Parallel()
	const policy = "version: 1\ncatalog_refresh: 1h\nmode: strict\ntables:\n  - inventory\n  - stock\n  - name: billing.invoices\n    mode: repeatable\n"
	const stock = `CREATE TABLE stock (site text, sku text, qty int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0, PRIMARY KEY (site, sku));
		INSERT INTO stock VALUES ('s1', 'a', 1, 5), ('s1', 'b', 2, 9), ('s2', 'a', 3, 5)`
	const stockState = `SELECT string_agg(site || '/' || sku || ':' || qty || ':' || writer_epoch, ' ' ORDER BY site, sku) FROM stock`
	const upsert = `INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`

	type outcome struct {
		err   error // nil, or the sentinel
		n     int64 // rows affected when err is nil
		state string
	}
	cases := []struct {
		name  string
		prep  string // run through plain pgx first
		epoch int64
		exact bool
		query bool // QueryContext (RETURNING)
		stmt  string
		args  []any
		state string
		want  outcome
	}{
		{name: "stale", epoch: 3, stmt: upsert, args: []any{"a", 1},
			want: outcome{err: sqlfence.ErrFenced, state: "a:10:5 b:20:5"}},
		{name: "same epoch strict", epoch: 5, stmt: upsert, args: []any{"a", 1},
			want: outcome{err: sqlfence.ErrAlreadyWritten, state: "a:10:5 b:20:5"}},
		{name: "fresh", epoch: 7, stmt: upsert, args: []any{"a", 1},
			want: outcome{n: 1, state: "a:1:7 b:20:5"}},
		{name: "fresh insert", epoch: 7, stmt: upsert, args: []any{"c", 1},
			want: outcome{n: 1, state: "a:10:5 b:20:5 c:1:7"}},
		{name: "same epoch returning", epoch: 5, query: true, stmt: upsert + ` RETURNING sku`, args: []any{"a", 1},
			want: outcome{err: sqlfence.ErrAlreadyWritten, state: "a:10:5 b:20:5"}},
		{name: "stale returning", epoch: 3, query: true, stmt: upsert + ` RETURNING sku`, args: []any{"a", 1},
			want: outcome{err: sqlfence.ErrFenced, state: "a:10:5 b:20:5"}},
		{name: "alias cast and reordered parameters", epoch: 3,
			stmt: `INSERT INTO public.inventory AS i (quantity, sku) VALUES ($2, $1::text) ON CONFLICT (sku) DO UPDATE SET quantity = i.quantity + 1`, args: []any{"b", 1},
			want: outcome{err: sqlfence.ErrFenced, state: "a:10:5 b:20:5"}},
		{name: "literal key", epoch: 5, stmt: `INSERT INTO inventory (sku, quantity) VALUES ('b', 1) ON CONFLICT (sku) DO UPDATE SET quantity = 1`,
			want: outcome{err: sqlfence.ErrAlreadyWritten, state: "a:10:5 b:20:5"}},
		{name: "own where, table only, fenced", epoch: 3,
			stmt: upsert + ` WHERE inventory.quantity < 100`, args: []any{"a", 1},
			want: outcome{err: sqlfence.ErrFenced, state: "a:10:5 b:20:5"}},
		{name: "own where, table only, not matched", epoch: 7,
			stmt: upsert + ` WHERE inventory.quantity > 100`, args: []any{"a", 1},
			want: outcome{n: 0, state: "a:10:5 b:20:5"}},
		{name: "multi-row, some fenced", epoch: 7, prep: `UPDATE inventory SET writer_epoch = 9 WHERE sku = 'b'`,
			stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4), ($5, $6) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`,
			args: []any{"a", 1, "b", 2, "c", 3},
			want: outcome{n: 2, state: "a:1:7 b:20:9 c:3:7"}},
		{name: "multi-row, some fenced, exact", epoch: 7, exact: true, prep: `UPDATE inventory SET writer_epoch = 9 WHERE sku = 'b'`,
			stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4), ($5, $6) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`,
			args: []any{"a", 1, "b", 2, "c", 3},
			want: outcome{err: sqlfence.ErrFenced, state: "a:1:7 b:20:9 c:3:7"}},
		{name: "multi-row, all fresh, exact", epoch: 7, exact: true,
			stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`,
			args: []any{"a", 1, "c", 3},
			want: outcome{n: 2, state: "a:1:7 b:20:5 c:3:7"}},
		{name: "composite key, same epoch", epoch: 5, state: stockState,
			stmt: `INSERT INTO stock (site, sku, qty) VALUES ($1, $2, $3), ('s2', 'a', 4) ON CONFLICT (site, sku) DO UPDATE SET qty = excluded.qty`,
			args: []any{"s1", "a", 7},
			want: outcome{err: sqlfence.ErrAlreadyWritten, state: "s1/a:1:5 s1/b:2:9 s2/a:3:5"}},
		{name: "composite key, newer on one", epoch: 5, state: stockState,
			stmt: `INSERT INTO stock (site, sku, qty) VALUES ('s1', 'b', 4), ('s2', 'a', 4) ON CONFLICT (site, sku) DO UPDATE SET qty = excluded.qty`,
			want: outcome{err: sqlfence.ErrFenced, state: "s1/a:1:5 s1/b:2:9 s2/a:3:5"}},
		{name: "composite key, fresh", epoch: 7, state: stockState,
			stmt: `INSERT INTO stock (site, sku, qty) VALUES ('s1', 'a', 4), ('s3', 'a', 4) ON CONFLICT (site, sku) DO UPDATE SET qty = excluded.qty`,
			want: outcome{n: 2, state: "s1/a:4:7 s1/b:2:9 s2/a:3:5 s3/a:4:7"}},
		{name: "on constraint with own where, not matched", epoch: 7,
			stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT ON CONSTRAINT inventory_pkey DO UPDATE SET quantity = excluded.quantity WHERE inventory.quantity > 100`,
			args: []any{"a", 1},
			want: outcome{n: 0, state: "a:10:5 b:20:5"}},
		// The conflicting rows cannot be read back by constraint name: a 0-row result
		// is a fence (exact for repeatable tables, where this epoch is admitted).
		{name: "on constraint, repeatable", epoch: 3,
			state: `SELECT string_agg(id || ':' || total || ':' || writer_epoch, ' ') FROM billing.invoices`,
			stmt:  `INSERT INTO billing.invoices (id, total) VALUES ($1, $2) ON CONFLICT ON CONSTRAINT invoices_pkey DO UPDATE SET total = excluded.total`,
			args:  []any{1, 5},
			want:  outcome{err: sqlfence.ErrFenced, state: "1:100:5"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, writePolicy(t, policy))
			if _, err := f.raw.Exec(stock); err != nil {
				t.Fatal(err)
			}
			if c.prep != "" {
				if _, err := f.raw.Exec(c.prep); err != nil {
					t.Fatal(err)
				}
			}
			var cause error
			ctx := sqlfence.OnFenced(sqlfence.WithEpoch(context.Background(), c.epoch), func(err error) { cause = err })
			if c.exact {
				ctx = sqlfence.WithExactAccounting(ctx)
			}
			var n int64
			var err error
			if c.query {
				rows, qerr := f.fenced.QueryContext(ctx, c.stmt, c.args...)
				if err = qerr; err == nil {
					for rows.Next() {
						n++
					}
					err = rows.Err()
					rows.Close()
				}
			} else {
				res, xerr := f.fenced.ExecContext(ctx, c.stmt, c.args...)
				if err = xerr; err == nil {
					n, _ = res.RowsAffected()
				}
			}
			switch {
			case c.want.err == nil && err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.want.err != nil && !errors.Is(err, c.want.err):
				t.Fatalf("err = %v, want %v", err, c.want.err)
			case c.want.err == nil && n != c.want.n:
				t.Errorf("%d rows affected, want %d", n, c.want.n)
			}
			if errors.Is(err, sqlfence.ErrAlreadyWritten) && errors.Is(err, sqlfence.ErrFenced) {
				t.Errorf("already written is also a fence: %v", err)
			}
			if fenced := errors.Is(err, sqlfence.ErrFenced); fenced != (cause != nil) {
				t.Errorf("OnFenced cancel called with %v for err %v", cause, err)
			}
			state := c.state
			if state == "" {
				state = inventoryState
			}
			if got := f.state(t, state); got != c.want.state {
				t.Errorf("state %q, want %q", got, c.want.state)
			}
			var fe *sqlfence.Error
			if errors.As(err, &fe) {
				switch c.name {
				case "stale":
					if !fe.HasStored || fe.StoredEpoch != 5 {
						t.Errorf("stored epoch %d (%v), want 5", fe.StoredEpoch, fe.HasStored)
					}
				case "multi-row, some fenced, exact":
					if fe.Affected != 2 || fe.Fenced != 1 || fe.StoredEpoch != 9 {
						t.Errorf("affected %d fenced %d stored %d, want 2, 1, 9", fe.Affected, fe.Fenced, fe.StoredEpoch)
					}
				}
			}
		})
	}
}

// TestUpsertTwiceSameEpoch is the bug as GORM met it: the same upsert twice under one
// epoch in strict mode. The second is "already written", not a fence, and the
// handler's context is not cancelled.
func TestUpsertTwiceSameEpoch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	hctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx := sqlfence.OnFenced(sqlfence.WithEpoch(hctx, 7), cancel)
	const upsert = `INSERT INTO "inventory" ("sku","quantity") VALUES ($1,$2) ON CONFLICT ("sku") DO UPDATE SET "quantity"="excluded"."quantity"`
	if _, err := f.fenced.ExecContext(ctx, upsert, "a", 1); err != nil {
		t.Fatal(err)
	}
	_, err := f.fenced.ExecContext(ctx, upsert, "a", 2)
	if !errors.Is(err, sqlfence.ErrAlreadyWritten) || errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("second upsert: err = %v, want ErrAlreadyWritten", err)
	}
	if hctx.Err() != nil {
		t.Fatalf("the handler was cancelled: %v", context.Cause(hctx))
	}
	if got := f.state(t, inventoryState); got != "a:1:7 b:20:5" {
		t.Fatalf("state %q", got)
	}
}
