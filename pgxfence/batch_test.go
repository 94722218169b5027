package pgxfence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
)

// TestBatch: each queued statement is decided on its own; a fenced one reports
// ErrFenced for its own result, in order, through Exec, Query, QueryRow and the
// queued queries' callbacks.
func TestBatch(t *testing.T) {
	p := policy(t, "")
	for _, fr := range fronts {
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.exec(t, `UPDATE inventory SET writer_epoch = 9 WHERE sku = 'b'`)
			d, end := fr.open(t, f, p, pgx.QueryExecModeCacheStatement)
			ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)

			b := &pgx.Batch{}
			b.Queue(`UPDATE inventory SET quantity = $1 WHERE sku = $2`, 1, "a")
			b.Queue(`UPDATE inventory SET quantity = $1 WHERE sku = $2`, 2, "b") // fenced: b is at 9
			b.Queue(`SELECT quantity FROM inventory WHERE sku = $1`, "a")
			b.Queue(`UPDATE inventory SET quantity = @q WHERE sku = @sku RETURNING quantity`, pgx.NamedArgs{"q": 3, "sku": "b"}) // fenced
			var cb []error
			b.Queue(`INSERT INTO inventory (sku, quantity) VALUES ($1, $2)`, "c", 4).Exec(func(tag pgconn.CommandTag) error {
				cb = append(cb, nil)
				return nil
			})
			br := d.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				t.Fatalf("item 1: %v", err)
			}
			if _, err := br.Exec(); !errors.Is(err, sqlfence.ErrFenced) {
				t.Fatalf("item 2: %v, want ErrFenced", err)
			}
			var q int
			if err := br.QueryRow().Scan(&q); err != nil || q != 1 {
				t.Fatalf("item 3: %d, %v", q, err)
			}
			rows, _ := br.Query()
			for rows.Next() {
			}
			rows.Close()
			if !errors.Is(rows.Err(), sqlfence.ErrFenced) {
				t.Fatalf("item 4: %v, want ErrFenced", rows.Err())
			}
			if err := br.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if len(cb) != 1 {
				t.Fatalf("item 5's callback ran %d times", len(cb))
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			if got := f.state(t, inventoryState); got != "a:1:7 b:20:9 c:4:7" {
				t.Fatalf("data %q", got)
			}
			// The program's batch is as it queued it.
			if b.QueuedQueries[0].SQL != `UPDATE inventory SET quantity = $1 WHERE sku = $2` || len(b.QueuedQueries[0].Arguments) != 2 {
				t.Fatalf("the batch was left changed: %q %v", b.QueuedQueries[0].SQL, b.QueuedQueries[0].Arguments)
			}
		})
	}
}

// TestBatchRefused: a refused statement refuses the whole batch before anything is
// sent.
func TestBatchRefused(t *testing.T) {
	f := newFixture(t)
	d := f.pool(t, policy(t, ""), pgx.QueryExecModeCacheStatement)
	ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)
	b := &pgx.Batch{}
	b.Queue(`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`)
	b.Queue(`TRUNCATE inventory`)
	br := d.SendBatch(ctx, b)
	if _, err := br.Exec(); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("item 1: %v, want the batch's refusal", err)
	}
	if _, err := br.Exec(); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("item 2: %v, want ErrRefused", err)
	}
	if err := br.Close(); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("Close: %v", err)
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("data %q", got)
	}
	// The pool's connection went back.
	if _, err := d.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}

	// In the simple protocol pgx would put the arguments into the text.
	simple := f.pool(t, policy(t, ""), pgx.QueryExecModeSimpleProtocol)
	b = &pgx.Batch{}
	b.Queue(`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`)
	if err := simple.SendBatch(ctx, b).Close(); err == nil {
		t.Fatal("a fenced batch in the simple protocol was sent")
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("data %q", got)
	}
}

// TestBatchBeginTx: a batch that begins a transaction gives a fenced Tx.
func TestBatchBeginTx(t *testing.T) {
	f := newFixture(t)
	d := f.pool(t, policy(t, ""), pgx.QueryExecModeCacheStatement)
	ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`)
	br := d.SendBatch(ctx, b)
	tx := br.Tx()
	if tx == nil {
		t.Fatal("no Tx")
	}
	defer tx.Rollback(ctx)
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(sqlfence.WithEpoch(ctx, 3), `UPDATE inventory SET quantity = 2 WHERE sku = 'b'`); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale write in the batch's transaction: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.state(t, inventoryState); got != "a:1:7 b:20:5" {
		t.Fatalf("data %q", got)
	}
}
