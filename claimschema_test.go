package sqlfence_test

// Class 6 of the third adversarial round: the claim check's own text must read the
// claim table the policy means, whatever the session's search_path or temporary
// tables. Judged on the data: a claim superseded in the real claim table (epoch 9)
// must change no protected row, however the session arranges for another table
// named jobs to hold the claim's epoch.

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
)

func TestClaimTableSchema(t *testing.T) {
	setup := schema + `
UPDATE jobs SET lease_epoch = 9;
CREATE SCHEMA evil;
CREATE TABLE evil.jobs (id int, lease_epoch bigint NOT NULL); -- NOT NULL: the catalog check at connect reads every schema's jobs for the unqualified claim entry
INSERT INTO evil.jobs VALUES (1, 7);
GRANT USAGE ON SCHEMA evil TO PUBLIC;
`
	for _, tc := range []struct {
		name   string
		before []string // run through the driver on the connection first
		table  string   // WithClaim's table
	}{
		{"search_path", []string{`SET search_path = evil, public`}, "jobs"},
		{"search_path-local", []string{`SELECT set_config('search_path', 'evil, public', false)`}, "jobs"},
		{"pg_temp", []string{`CREATE TEMP TABLE jobs (id int, lease_epoch bigint)`, `INSERT INTO jobs VALUES (1, 7)`}, "jobs"},
		{"pg_temp-qualified-claim", []string{`CREATE TEMP TABLE jobs (id int, lease_epoch bigint)`, `INSERT INTO jobs VALUES (1, 7)`}, "public.jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, raw := newRawDB(t, setup)
			db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", "testdata/sqlfence.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, q := range tc.before {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Logf("%s: %v", q, err) // a refusal is one way to hold
				}
			}
			cctx := sqlfence.WithClaim(ctx, sqlfence.Claim{Table: tc.table, Key: 1, Epoch: 7})
			_, err = conn.ExecContext(cctx, `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`)
			t.Logf("claim-checked write: %v", err)
			var q int
			var e int64
			if err := raw.QueryRowContext(ctx, `SELECT quantity, writer_epoch FROM inventory WHERE sku = 'a'`).Scan(&q, &e); err != nil {
				t.Fatal(err)
			}
			if q != 10 || e != 5 {
				t.Fatalf("a claim superseded in public.jobs (epoch 9) changed inventory a to quantity %d, epoch %d", q, e)
			}
		})
	}
	// Control: the claim current in public.jobs still writes, unqualified.
	t.Run("current-claim", func(t *testing.T) {
		dsn, raw := newRawDB(t, schema+`UPDATE jobs SET lease_epoch = 7;`)
		db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", "testdata/sqlfence.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cctx := sqlfence.WithClaim(ctx, sqlfence.Claim{Table: "jobs", Key: 1, Epoch: 7})
		if _, err := db.ExecContext(cctx, `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`); err != nil {
			t.Fatal(err)
		}
		var e int64
		if err := raw.QueryRowContext(ctx, `SELECT writer_epoch FROM inventory WHERE sku = 'a'`).Scan(&e); err != nil || e != 7 {
			t.Fatalf("epoch %d, %v; want 7", e, err)
		}
	})
}
