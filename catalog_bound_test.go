package sqlfence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
)

// TestCatalogBoundMessages: a statement refused for a routine the server would run
// unnamed (catalog_bound.go) is told which object runs it, the routine, the protected
// table it writes, and what to do — the guard among the fixes — under no, stale and
// fresh epochs alike, with nothing written.
func TestCatalogBoundMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.raw.ExecContext(ctx, `
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.bw();
CREATE VIEW bumps AS SELECT public.bw() AS x;
CREATE DOMAIN checked AS int CHECK (public.bw() > 0);`); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ query, object string }{
		{"INSERT INTO staging (sku) VALUES ('x')", "the column default q of public.staging"},
		{"SELECT * FROM bumps", "the view public.bumps"},
		{"SELECT 5::checked", "the domain public.checked"},
	}
	for _, c := range cases {
		for _, epoch := range []int64{0, 3, 7} {
			qctx := ctx
			if epoch != 0 {
				qctx = sqlfence.WithEpoch(ctx, epoch)
			}
			_, err := f.fenced.ExecContext(qctx, c.query)
			if !errors.Is(err, sqlfence.ErrRefused) {
				t.Fatalf("%s (epoch %d): %v, want refused", c.query, epoch, err)
			}
			msg := err.Error()
			for _, want := range []string{"inventory", c.object + " runs public.bw", "sqlfence guard --policy"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s (epoch %d): the message lacks %q:\n%s", c.query, epoch, want, msg)
				}
			}
			if strings.Contains(msg, "superseded") || strings.Contains(msg, "stale") {
				t.Errorf("%s (epoch %d): a refusal for what the catalog holds says more than is true:\n%s", c.query, epoch, msg)
			}
		}
	}
	if got := f.state(t, "SELECT string_agg(quantity::text, ',' ORDER BY sku) FROM inventory"); got != "10,20" {
		t.Errorf("inventory quantities %s, want 10,20: a refused statement ran the writer", got)
	}
}

// TestCatalogBoundRoutineCreatedDuringRead: where the catalog version's statement
// finds no user routine, the read takes the bound routines' short form
// (pgcatalog.BoundViewsSQL), which answers only while none is there. A routine made
// by another session after that statement and before the read's snapshot — here a
// function that writes the protected table, and a column default that calls it — is
// in the snapshot, and the read takes the full form again: the insert that would run
// the default is refused, naming it.
func TestCatalogBoundRoutineCreatedDuringRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := f.raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pol, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inner := queryFunc(conn)
	var sawNone bool
	reads := 0
	query := func(ctx context.Context, sql string, args ...any) ([][]any, error) {
		rows, err := inner(ctx, sql, args...)
		if err != nil {
			return rows, err
		}
		switch {
		case strings.Contains(sql, "pg_advisory_lock("):
			// The version's statement: its sixth column says whether a user
			// routine is there. Then another session makes one.
			if len(rows) == 1 && len(rows[0]) == 7 && rows[0][5] == false {
				sawNone = true
			}
			if _, err := f.raw.ExecContext(ctx, `
CREATE FUNCTION public.bw() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = quantity + 1; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.bw();`); err != nil {
				return nil, err
			}
		case strings.HasPrefix(sql, "WITH "):
			reads++
		}
		return rows, nil
	}
	pl, err := pol.Planner(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	if !sawNone {
		t.Fatal("the catalog version's statement did not report that no user routine was there: the test exercises nothing")
	}
	if reads != 2 {
		t.Errorf("%d catalog reads, want 2 (the short form, then the full one for the routine it found)", reads)
	}
	p := pl.Plan("INSERT INTO staging (sku) VALUES ('x')")
	if !errors.Is(p.Err, sqlfence.ErrRefused) || !strings.Contains(p.Err.Error(), "the column default q of public.staging runs public.bw") {
		t.Fatalf("INSERT INTO staging: %v, want refused for the column default q of public.staging", p.Err)
	}
}
