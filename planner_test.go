package sqlfence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
)

// TestPlanner: Policy.Planner decides with the database's catalog, as the connector
// does — a partition of a protected table is fenced and its TRUNCATE refused, a
// function whose body writes a protected table is refused — where Plan, from the
// text alone, sends them unchanged; a policy the database does not match is the
// connector's SF520; under resolve: none the Planner reads nothing.
func TestPlanner(t *testing.T) {
	t.Parallel()
	_, raw := newRawDB(t, `
		CREATE TABLE inventory (sku text, quantity int, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku);
		CREATE TABLE inventory_a PARTITION OF inventory FOR VALUES IN ('a');
		CREATE FUNCTION restock_all() RETURNS void LANGUAGE sql AS 'UPDATE inventory SET quantity = 100';
		CREATE FUNCTION stock_of(s text) RETURNS int LANGUAGE sql AS 'SELECT quantity FROM inventory WHERE sku = s';`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	load := func(body string) *sqlfence.Policy {
		p, err := sqlfence.ParsePolicy([]byte(body), "<test>")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pol := load("version: 1\ntables: [inventory]\n")
	pl, err := pol.Planner(ctx, queryFunc(conn))
	if err != nil {
		t.Fatal(err)
	}
	code := func(p sqlfence.Plan) string {
		var e *sqlfence.Error
		if errors.As(p.Err, &e) {
			return e.Code
		}
		if p.Err != nil {
			return p.Err.Error()
		}
		return ""
	}
	for _, c := range []struct {
		sql                  string
		text, catalog        string // the refusal codes, "" when sent
		fencedText, fencedDB bool
	}{
		{"UPDATE inventory_a SET quantity = 1 WHERE sku = 'a'", "", "", false, true},
		{"TRUNCATE inventory_a", "", "SF301", false, false},
		{"SELECT restock_all()", "SF413", "SF416", false, false}, // an unknown function; one that writes inventory
		{"SELECT stock_of('a')", "SF413", "", false, false},      // its body only reads
		{"UPDATE inventory SET quantity = 1", "", "", true, true},
	} {
		byText, byDB := pol.Plan(c.sql), pl.Plan(c.sql)
		if code(byText) != c.text || code(byDB) != c.catalog || (byText.Fenced != "") != c.fencedText || (byDB.Fenced != "") != c.fencedDB {
			t.Errorf("%s:\n  Plan    %q fenced %v, want %q fenced %v\n  Planner %q fenced %v, want %q fenced %v",
				c.sql, code(byText), byText.Fenced != "", c.text, c.fencedText, code(byDB), byDB.Fenced != "", c.catalog, c.fencedDB)
		}
	}

	_, err = load("version: 1\ntables: [inventroy]\n").Planner(ctx, queryFunc(conn))
	var e *sqlfence.Error
	if !errors.As(err, &e) || e.Code != "SF520" || !errors.Is(err, sqlfence.ErrRefused) {
		t.Errorf("a misspelt table: %v, want SF520", err)
	}
	none, err := load("version: 1\nresolve: none\ntables: [inventory]\n").Planner(ctx, func(context.Context, string, ...any) ([][]any, error) {
		t.Error("resolve: none read the catalog")
		return nil, errors.New("no")
	})
	if err != nil || none.Plan("TRUNCATE inventory_a").Err != nil {
		t.Errorf("resolve: none: %v", err)
	}
}
