package guard

import (
	"context"
	"errors"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// TestGuardServerReading: with the guard installed and resolve: catalog, what the
// server runs for a name is judged by the driver before anything is sent — a view
// whose epoch column is another column (the guard alone lets its write through: the
// driver's marker names the table under it), a call in attribute notation inside a
// fenced write, a STABLE function's EXECUTE, a subscript of an assignment target, a
// user overload of a built-in's name — with no epoch, a stale one and a fresh one,
// and no protected row changes.
func TestGuardServerReading(t *testing.T) {
	t.Parallel()
	db, raw := pathsFixture(t, pathsPolicy+"resolve: catalog\n")
	ctx := t.Context()
	olderGuard(t, raw) // the driver's own reading (TestGuardCarriesEpoch: with a guard that carries)
	if _, err := raw.Exec(ctx, `
		ALTER TABLE inventory ADD COLUMN shadow bigint NOT NULL DEFAULT 0;
		CREATE VIEW stock_shadow AS SELECT sku, quantity, shadow AS writer_epoch FROM inventory;
		CREATE VIEW stock_own AS SELECT sku, quantity, writer_epoch FROM inventory;
		CREATE VIEW stock_computed AS SELECT sku, quantity, writer_epoch * 0 AS writer_epoch FROM inventory;
		CREATE FUNCTION zap(notes) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1 WHERE sku = 'bolt'; RETURN 1; END $$;
		CREATE FUNCTION writer() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -1; RETURN 1; END $$;
		CREATE FUNCTION looks_safe() RETURNS int STABLE LANGUAGE plpgsql AS $$ DECLARE r int; BEGIN EXECUTE 'SELECT writer()' INTO r; RETURN r; END $$;
		CREATE FUNCTION public.lower(int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = -2; RETURN $1; END $$;`); err != nil {
		t.Fatal(err)
	}
	contexts := []struct {
		name string
		ctx  context.Context
	}{{"no epoch", ctx}, {"stale epoch", sqlfence.WithEpoch(ctx, 4)}, {"fresh epoch", sqlfence.WithEpoch(ctx, 9)}}
	for _, stmt := range []string{
		"UPDATE stock_shadow SET quantity = 0 WHERE sku = 'widget'",
		"DELETE FROM stock_computed WHERE sku = 'bolt'",
		"UPDATE inventory SET quantity = (SELECT n.zap FROM notes n LIMIT 1) WHERE sku = 'widget'",
		"SELECT (n).zap FROM notes n",
		"SELECT looks_safe()",
		"DO $$ DECLARE a int[] := '{1,2}'; BEGIN a[writer()] := 1; END $$",
		"SELECT lower(1)",
	} {
		for _, c := range contexts {
			before := protectedRows(t, raw)
			_, err := db.ExecContext(c.ctx, stmt)
			if !errors.Is(err, sqlfence.ErrRefused) {
				t.Errorf("%s (%s): %v, want ErrRefused", stmt, c.name, err)
			}
			if after := protectedRows(t, raw); after != before {
				t.Errorf("%s (%s) changed protected rows: %s, was %s", stmt, c.name, after, before)
			}
		}
	}
	// The control: a write through a view of the table's own epoch column is fenced,
	// and the guard lets the fenced write through.
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 9), "UPDATE stock_own SET quantity = 3 WHERE sku = 'widget'"); err != nil {
		t.Errorf("the fenced write through stock_own: %v", err)
	}
	var q, e int64
	if err := raw.QueryRow(ctx, "SELECT quantity, writer_epoch FROM inventory WHERE sku = 'widget'").Scan(&q, &e); err != nil || q != 3 || e != 9 {
		t.Errorf("widget after the fenced write: quantity %d, epoch %d (%v), want 3 at epoch 9", q, e, err)
	}
}
