package pgxfence_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
)

// TestResolveCatalog: with resolve: catalog the catalog is read before the first
// statement, so a write through an updatable view or an inheritance child of a
// protected table is fenced as a write to the table, and DDL through the front
// (ddl: allow) reads it again.
func TestResolveCatalog(t *testing.T) {
	p := policy(t, "version: 1\nresolve: catalog\ncatalog_refresh: 1h\nddl: allow\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n")
	for _, fr := range fronts[:2] {
		t.Run(fr.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.exec(t, `CREATE VIEW stock AS SELECT sku, quantity, writer_epoch FROM inventory; CREATE TABLE inventory_archive () INHERITS (inventory)`)
			d, _ := fr.open(t, f, p, pgx.QueryExecModeCacheStatement)
			ctx := timeout(t, context.Background())
			for _, stmt := range []string{`UPDATE stock SET quantity = 0 WHERE sku = 'a'`, `DELETE FROM inventory_archive`} {
				if _, err := d.Exec(ctx, stmt); !errors.Is(err, sqlfence.ErrUnfenced) {
					t.Errorf("%s without an epoch: %v, want ErrUnfenced", stmt, err)
				}
			}
			if _, err := d.Exec(sqlfence.WithEpoch(ctx, 3), `UPDATE stock SET quantity = 0 WHERE sku = 'a'`); !errors.Is(err, sqlfence.ErrFenced) {
				t.Errorf("stale write through the view: %v, want ErrFenced", err)
			}
			// DDL through the front reads the catalog again; decisions go on.
			if _, err := d.Exec(ctx, `CREATE TABLE notes (id int)`); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Exec(ctx, `UPDATE stock SET quantity = 0`); !errors.Is(err, sqlfence.ErrUnfenced) {
				t.Errorf("write through the view after DDL: %v, want ErrUnfenced", err)
			}
			if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
				t.Fatalf("data %q", got)
			}
		})
	}
}

// TestObserverAndShadow: the observer hears every decision, and in shadow mode the
// application's text is sent unchanged while the outcome is reported.
func TestObserverAndShadow(t *testing.T) {
	f := newFixture(t)
	var (
		mu     sync.Mutex
		events []sqlfence.Event
	)
	obs := sqlfence.WithObserver(func(_ context.Context, e sqlfence.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	d := f.pool(t, policy(t, ""), pgx.QueryExecModeCacheStatement, obs)
	ctx := timeout(t, context.Background())
	if _, err := d.Exec(sqlfence.WithEpoch(ctx, 3), `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatal(err)
	}
	mu.Lock()
	var outcomes []string
	for _, e := range events {
		outcomes = append(outcomes, e.Outcome.String())
	}
	mu.Unlock()
	if got := strings.Join(outcomes, ","); !strings.Contains(got, "fence") {
		t.Fatalf("observer heard %q", got)
	}

	shadow := policy(t, "version: 1\nresolve: none\nenforce: shadow\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n")
	s := f.conn(t, shadow, pgx.QueryExecModeCacheStatement)
	if _, err := s.Exec(ctx, `SELECT 1`); err != nil { // the session's check (session.go) goes out with its first statement
		t.Fatal(err)
	}
	f.tr.take()
	if _, err := s.Exec(ctx, `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`); err != nil {
		t.Fatalf("shadow mode: %v", err)
	}
	if sent := f.tr.take(); len(sent) != 1 || sent[0] != `UPDATE inventory SET quantity = 1 WHERE sku = 'a'` {
		t.Fatalf("shadow mode sent %q", sent)
	}
}
