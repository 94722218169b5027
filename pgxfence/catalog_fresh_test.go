package pgxfence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// restockDDL is another session's DDL that makes an insert into an unprotected
// table write the protected one: a trigger the snapshot read before it does not show.
const restockDDL = `CREATE FUNCTION restock() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE inventory SET quantity = 0; RETURN NEW; END$$;
CREATE TRIGGER audit_restock AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION restock();`

// entry is one of pgxfence's ways of sending the insert into audit.
type entry struct {
	name string
	run  func(ctx context.Context, p *pgxfence.Pool) error
}

const auditInsert = `INSERT INTO audit VALUES ('x')`

var entries = []entry{
	{"Exec", func(ctx context.Context, p *pgxfence.Pool) error {
		_, err := p.Exec(ctx, auditInsert)
		return err
	}},
	{"Query", func(ctx context.Context, p *pgxfence.Pool) error {
		rows, err := p.Query(ctx, auditInsert)
		if err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}},
	{"SendBatch", func(ctx context.Context, p *pgxfence.Pool) error {
		b := &pgx.Batch{}
		b.Queue(auditInsert)
		return p.SendBatch(ctx, b).Close()
	}},
	{"CopyFrom", func(ctx context.Context, p *pgxfence.Pool) error {
		_, err := p.CopyFrom(ctx, pgx.Identifier{"audit"}, []string{"sku"}, pgx.CopyFromRows([][]any{{"x"}}))
		return err
	}},
	{"Tx", func(ctx context.Context, p *pgxfence.Pool) error {
		tx, err := p.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if _, err := tx.Exec(ctx, auditInsert); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}},
}

// refusedAs reports whether err is sqlfence's refusal with code.
func refusedAs(err error, code string) bool {
	var se *sqlfence.Error
	return errors.As(err, &se) && se.Code == code
}

// TestCatalogRefreshPgx: a pgxfence pool under catalog_refresh (no guard, so no
// catalog version) reads the catalog again once the period has passed, not only
// before its first statement: a trigger another, plain session created, through
// which an insert into an unprotected table writes the protected one, is seen by
// every entry point, which refuses the insert (SF502) with no, a stale and a fresh
// epoch; no protected row changes.
func TestCatalogRefreshPgx(t *testing.T) {
	f := newFixture(t)
	p := policy(t, "version: 1\nresolve: catalog\ncatalog_refresh: 200ms\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n")
	pool := f.pool(t, p, pgx.QueryExecModeCacheStatement)
	ctx := timeout(t, context.Background())
	for _, e := range entries { // warm: every entry point decided on the first snapshot
		if err := e.run(ctx, pool); err != nil {
			t.Fatalf("warm %s: %v", e.name, err)
		}
	}
	f.exec(t, `DELETE FROM audit`)
	f.exec(t, restockDDL)
	time.Sleep(300 * time.Millisecond) // past the period
	for _, e := range entries {
		for _, epoch := range []int64{0, 3, 9} {
			ectx := ctx
			if epoch != 0 {
				ectx = sqlfence.WithEpoch(ctx, epoch)
			}
			if err := e.run(ectx, pool); !refusedAs(err, "SF502") {
				t.Errorf("%s at epoch %d after another session's trigger: %v, want SF502", e.name, epoch, err)
			}
		}
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("inventory %q, want it untouched", got)
	}
	if got := f.state(t, `SELECT count(*)::text FROM audit`); got != "0" {
		t.Fatalf("audit has %s rows, want none", got)
	}
}

// TestCatalogVersionPgx: with the guard installed (its event triggers: a catalog
// version), another session's DDL makes the guard refuse the first statement the
// pool decided on the old catalog; the pool then reads the catalog again, and every
// entry point's next statement is decided on the new one (sqlfence's SF502), not
// refused by the guard again and again. A fenced write decided before another
// session's BEFORE trigger lifting the epoch is the guard's SF005 (SF525), and the
// retry is decided on the new catalog too. No protected row changes.
func TestCatalogVersionPgx(t *testing.T) {
	f := newFixture(t)
	// A guard without its row trigger (as one installed before it could fence the
	// server's writes): the trigger below is then refused by sqlfence on the new
	// catalog, which is what this test is about (a guard that fences them:
	// internal/cli/guard's carry_test.go).
	pool := f.guardedPool(t, "version: 1\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n",
		`DROP FUNCTION sqlfence.guard_row() CASCADE`)
	ctx := timeout(t, context.Background())
	fresh := sqlfence.WithEpoch(ctx, 9)
	if _, err := pool.Exec(fresh, `UPDATE inventory SET quantity = 11 WHERE sku = 'a'`); err != nil {
		t.Fatalf("warm: %v", err)
	}

	f.exec(t, restockDDL)
	// The first statement decided on the old catalog: the guard rejects the
	// trigger's write (SF001), or sqlfence has already read the new catalog.
	if err := entries[0].run(fresh, pool); err == nil {
		t.Fatal("insert through another session's trigger ran")
	}
	for _, e := range entries {
		for _, ectx := range []context.Context{ctx, sqlfence.WithEpoch(ctx, 3), fresh} {
			if err := e.run(ectx, pool); !refusedAs(err, "SF502") {
				t.Errorf("%s after another session's trigger: %v, want sqlfence's SF502 on the new catalog", e.name, err)
			}
		}
	}

	f.exec(t, `CREATE FUNCTION lift() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.writer_epoch := 1000; RETURN NEW; END$$;
		CREATE TRIGGER zz_lift BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION lift();`)
	const upd = `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`
	if _, err := pool.Exec(fresh, upd); !refusedAs(err, "SF525") && !refusedAs(err, "SF502") {
		t.Fatalf("fenced write decided before the BEFORE trigger: %v, want SF525 (the guard's SF005) or SF502", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := pool.Exec(fresh, upd); !refusedAs(err, "SF502") {
			t.Errorf("retry %d after the BEFORE trigger: %v, want SF502 on the new catalog", i, err)
		}
	}
	if got := f.state(t, inventoryState); got != "a:11:9 b:20:5" {
		t.Fatalf("inventory %q", got)
	}
}

// TestCatalogReadOutsideTxPgx: a catalog read due while the application is inside a
// REPEATABLE READ transaction — catalog_refresh's period passed — goes on a
// connection of its own, not on the transaction, whose snapshot predates another
// session's trigger: read there, the fingerprint would match the one read before
// the transaction began, and the insert that the trigger turns into a write of the
// protected table would be decided on the old catalog and sent. It is refused
// (SF502) inside the transaction, on a pool and on a single connection (whose one
// connection the transaction holds), and no protected row changes.
func TestCatalogReadOutsideTxPgx(t *testing.T) {
	for _, kind := range []string{"pool", "conn"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t)
			p := policy(t, "version: 1\nresolve: catalog\ncatalog_refresh: 200ms\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n")
			var db interface {
				BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
				Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
			}
			if kind == "pool" {
				db = f.pool(t, p, pgx.QueryExecModeCacheStatement)
			} else {
				db = f.conn(t, p, pgx.QueryExecModeCacheStatement)
			}
			ctx := timeout(t, context.Background())
			if _, err := db.Exec(ctx, `SELECT 1`); err != nil { // the first read, before the transaction
				t.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.WithoutCancel(ctx))
			if _, err := tx.Exec(ctx, `SELECT count(*) FROM audit`); err != nil { // the transaction's snapshot
				t.Fatal(err)
			}
			f.exec(t, restockDDL)
			time.Sleep(300 * time.Millisecond) // past the period
			for _, epoch := range []int64{0, 3, 9} {
				ectx := ctx
				if epoch != 0 {
					ectx = sqlfence.WithEpoch(ctx, epoch)
				}
				if _, err := tx.Exec(ectx, auditInsert); !refusedAs(err, "SF502") {
					t.Fatalf("insert at epoch %d in the transaction after another session's trigger: %v, want SF502", epoch, err)
				}
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
				t.Fatalf("inventory %q, want it untouched", got)
			}
		})
	}
}
