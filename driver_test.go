package sqlfence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/claimctx"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const schema = `
CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	note         text,
	writer_epoch bigint NOT NULL DEFAULT 0
);
CREATE TABLE staging (sku text, q int, n text, gone bool NOT NULL DEFAULT false);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int PRIMARY KEY, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE reports (id serial PRIMARY KEY, body text, fence_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE audit (sku text);
CREATE TABLE jobs (id int PRIMARY KEY, status text NOT NULL DEFAULT 'pending', lease_epoch bigint NOT NULL DEFAULT 0, lease_expires_at timestamptz);
INSERT INTO jobs (id) VALUES (1);
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 5);
INSERT INTO staging (sku, q, n, gone) VALUES ('a', 1, 'n', false), ('b', 0, 'n', true), ('c', 3, 'n', false);
INSERT INTO billing.invoices (id, total, writer_epoch) VALUES (1, 100, 5);
`

// fixture is one test database, seeded with rows written at epoch 5, and two handles
// on it: the application's, through sqlfence, and a plain pgx one to set up and
// inspect the data behind sqlfence's back.
type fixture struct {
	fenced *sql.DB
	raw    *sql.DB
}

// newRawDB returns a fresh database, set up with setup through plain pgx, and a plain
// pgx handle on it for arranging and inspecting data behind sqlfence's back.
func newRawDB(t *testing.T, setup string) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(setup); err != nil {
		t.Fatal(err)
	}
	return dsn, raw
}

func newFixture(t *testing.T, policy string) *fixture {
	t.Helper()
	dsn, raw := newRawDB(t, schema)
	fenced, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", policy))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fenced.Close() })
	return &fixture{fenced: fenced, raw: raw}
}

func withParam(dsn, key, value string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + key + "=" + value
}

func (f *fixture) state(t *testing.T, query string) string {
	t.Helper()
	var s sql.NullString
	if err := f.raw.QueryRow(query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s.String
}

const inventoryState = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`

// TestShapes runs every write shape against PostgreSQL three times: with a stale
// epoch (3, below the stored 5), which changes no existing row; with a fresh epoch
// (7), whose changes land stamped 7; and with no epoch, which sends nothing.
func TestShapes(t *testing.T) {
	cases := []struct {
		name      string
		stmt      string
		args      []any
		query     bool   // run through QueryContext (RETURNING, EXPLAIN)
		state     string // query summarising the data; inventoryState when empty
		stale     string
		staleErr  error
		fresh     string
		seed      string
		wantFresh int64 // rows affected by the fresh run, -1 to skip
	}{
		{name: "update", stmt: `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`, args: []any{"a", 1},
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:9:7 b:20:5", wantFresh: 1},
		{name: "update alias only or", stmt: `UPDATE ONLY public.inventory AS i SET quantity = 0 WHERE i.sku = $1 OR i.sku = $2`, args: []any{"a", "b"},
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:0:7 b:0:7", wantFresh: 2},
		{name: "update from returning", query: true,
			stmt:  `UPDATE inventory i SET quantity = s.q FROM staging s WHERE i.sku = s.sku RETURNING i.sku`,
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:1:7 b:0:7", wantFresh: -1},
		{name: "update without where", stmt: `UPDATE inventory SET quantity = 0`,
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:0:7 b:0:7", wantFresh: 2},
		{name: "update multi-assign subquery", stmt: `UPDATE inventory SET (quantity, note) = (SELECT q, n FROM staging WHERE staging.sku = inventory.sku) WHERE sku IS DISTINCT FROM $1`, args: []any{"b"},
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:1:7 b:20:5", wantFresh: 1},
		{name: "delete", stmt: `DELETE FROM inventory WHERE sku = $1`, args: []any{"a"},
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "b:20:5", wantFresh: 1},
		{name: "delete using returning", query: true,
			stmt:  `DELETE FROM inventory AS i USING staging s WHERE i.sku = s.sku AND s.gone RETURNING i.sku`,
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:10:5", wantFresh: -1},
		{name: "insert values", stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2), ($3, $4)`, args: []any{"c", 1, "d", 2},
			stale: "a:10:5 b:20:5 c:1:3 d:2:3", fresh: "a:10:5 b:20:5 c:1:7 d:2:7", wantFresh: 2},
		{name: "insert select", stmt: `INSERT INTO inventory (sku, quantity) SELECT sku || 'x', q FROM staging WHERE NOT gone`,
			stale: "a:10:5 ax:1:3 b:20:5 cx:3:3", fresh: "a:10:5 ax:1:7 b:20:5 cx:3:7", wantFresh: 2},
		{name: "insert set operation", stmt: `INSERT INTO inventory (sku, quantity) SELECT 'e', 1 UNION ALL (SELECT $1, $2)`, args: []any{"f", 2},
			stale: "a:10:5 b:20:5 e:1:3 f:2:3", fresh: "a:10:5 b:20:5 e:1:7 f:2:7", wantFresh: 2},
		{name: "upsert do update", stmt: `INSERT INTO inventory AS i (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = i.quantity + excluded.quantity`, args: []any{"a", 5},
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:15:7 b:20:5", wantFresh: 1},
		{name: "upsert do update where returning", query: true,
			stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity WHERE inventory.quantity < excluded.quantity RETURNING quantity`, args: []any{"a", 50},
			stale: "a:10:5 b:20:5", fresh: "a:50:7 b:20:5", wantFresh: -1},
		{name: "upsert do nothing", stmt: `INSERT INTO inventory (sku, quantity) VALUES ($1, $2) ON CONFLICT DO NOTHING`, args: []any{"a", 5},
			stale: "a:10:5 b:20:5", fresh: "a:10:5 b:20:5", wantFresh: 0},
		{name: "merge", stmt: `MERGE INTO inventory AS i USING staging s ON i.sku = s.sku
			WHEN MATCHED AND s.gone THEN DELETE
			WHEN MATCHED THEN UPDATE SET quantity = s.q
			WHEN NOT MATCHED THEN INSERT (sku, quantity) VALUES (s.sku, s.q)`,
			stale: "a:10:5 b:20:5 c:3:3", fresh: "a:1:7 c:3:7", wantFresh: 3},
		{name: "merge only matched", stmt: `MERGE INTO inventory AS i USING (SELECT $1::text AS sku) s ON i.sku = s.sku WHEN MATCHED THEN UPDATE SET quantity = 0`, args: []any{"a"},
			stale: "a:10:5 b:20:5", staleErr: sqlfence.ErrFenced, fresh: "a:0:7 b:20:5", wantFresh: 1},
		{name: "data-modifying cte", stmt: `WITH moved AS (UPDATE inventory SET quantity = 0 WHERE sku = $1 RETURNING sku) INSERT INTO audit (sku) SELECT sku FROM moved`, args: []any{"a"},
			state: `SELECT (` + inventoryState + `) || ' audit:' || coalesce((SELECT string_agg(sku, ',') FROM audit), '')`,
			stale: "a:10:5 b:20:5 audit:", fresh: "a:0:7 b:20:5 audit:a", wantFresh: 1},
		{name: "explain analyze", query: true, stmt: `EXPLAIN ANALYZE UPDATE inventory SET quantity = 1 WHERE sku = $1`, args: []any{"a"},
			stale: "a:10:5 b:20:5", fresh: "a:1:7 b:20:5", wantFresh: -1},
		{name: "schema-qualified repeatable", stmt: `UPDATE billing.invoices SET total = $1 WHERE id = $2`, args: []any{200, 1},
			state: `SELECT string_agg(id || ':' || total || ':' || writer_epoch, ' ') FROM billing.invoices`,
			stale: "1:100:5", staleErr: sqlfence.ErrFenced, fresh: "1:200:7", wantFresh: 1},
		{name: "own epoch column", stmt: `UPDATE reports SET body = $1 WHERE id = $2`, args: []any{"new", 1},
			seed:  `INSERT INTO reports (body, fence_epoch) VALUES ('old', 5)`,
			state: `SELECT string_agg(id || ':' || body || ':' || fence_epoch, ' ') FROM reports`,
			stale: "1:old:5", staleErr: sqlfence.ErrFenced, fresh: "1:new:7", wantFresh: 1},
		{name: "insert default values", stmt: `INSERT INTO reports DEFAULT VALUES`,
			state: `SELECT string_agg(id || ':' || fence_epoch, ' ') FROM reports`,
			stale: "1:3", fresh: "1:7", wantFresh: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			state := c.state
			if state == "" {
				state = inventoryState
			}
			run := func(t *testing.T, ctx context.Context) (int64, error) {
				f := newFixture(t, "testdata/sqlfence.yaml")
				if c.seed != "" {
					if _, err := f.raw.Exec(c.seed); err != nil {
						t.Fatal(err)
					}
				}
				before := f.state(t, state)
				var n int64 = -1
				var err error
				if c.query {
					var rows *sql.Rows
					rows, err = f.fenced.QueryContext(ctx, c.stmt, c.args...)
					if err == nil {
						for rows.Next() {
						}
						err = rows.Err()
						rows.Close()
					}
				} else {
					var res sql.Result
					res, err = f.fenced.ExecContext(ctx, c.stmt, c.args...)
					if err == nil {
						n, _ = res.RowsAffected()
					}
				}
				t.Cleanup(func() {
					if _, ok := sqlfence.EpochFrom(ctx); !ok && f.state(t, state) != before {
						t.Errorf("no epoch: data changed from %q to %q", before, f.state(t, state))
					}
				})
				switch e, _ := sqlfence.EpochFrom(ctx); e {
				case 3:
					if got := f.state(t, state); got != c.stale {
						t.Errorf("stale epoch: state %q, want %q", got, c.stale)
					}
				case 7:
					if got := f.state(t, state); got != c.fresh {
						t.Errorf("fresh epoch: state %q, want %q", got, c.fresh)
					}
				}
				return n, err
			}
			t.Run("stale", func(t *testing.T) {
				_, err := run(t, sqlfence.WithEpoch(context.Background(), 3))
				if c.staleErr == nil && err != nil || c.staleErr != nil && !errors.Is(err, c.staleErr) {
					t.Fatalf("stale epoch: err = %v, want %v", err, c.staleErr)
				}
				var fe *sqlfence.Error
				if errors.As(err, &fe) && fe.HasStored && (fe.StoredEpoch != 5 || fe.Epoch != 3) {
					t.Errorf("fence error epochs: own %d stored %d, want 3 and 5", fe.Epoch, fe.StoredEpoch)
				}
			})
			t.Run("fresh", func(t *testing.T) {
				n, err := run(t, sqlfence.WithEpoch(context.Background(), 7))
				if err != nil {
					t.Fatalf("fresh epoch: %v", err)
				}
				if c.wantFresh >= 0 && n != c.wantFresh {
					t.Errorf("fresh epoch: %d rows affected, want %d", n, c.wantFresh)
				}
			})
			t.Run("none", func(t *testing.T) {
				_, err := run(t, context.Background())
				if !errors.Is(err, sqlfence.ErrUnfenced) {
					t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
				}
			})
		})
	}
}

// TestLostUpdate is the lost update sqlfence exists for. Worker A reads the count (10),
// is paused; its lease expires and worker B, with the next epoch, reads 10 and writes
// 11. A wakes and writes its own 11. Through plain pgx the final count is 11 — B's
// increment is lost. Through sqlfence A's late write is fenced and the count is B's.
func TestLostUpdate(t *testing.T) {
	t.Parallel()
	const (
		read  = `SELECT quantity FROM inventory WHERE sku = 'a'`
		write = `UPDATE inventory SET quantity = $1 WHERE sku = 'a'`
	)
	story := func(t *testing.T, db *sql.DB, epochA, epochB context.Context) error {
		var a, b int
		if err := db.QueryRowContext(epochA, read).Scan(&a); err != nil { // A reads, then pauses
			t.Fatal(err)
		}
		if err := db.QueryRowContext(epochB, read).Scan(&b); err != nil { // B took over
			t.Fatal(err)
		}
		if _, err := db.ExecContext(epochB, write, b+1); err != nil {
			t.Fatal(err)
		}
		_, err := db.ExecContext(epochA, write, a+1) // A wakes
		return err
	}

	t.Run("plain pgx loses the update", func(t *testing.T) {
		f := newFixture(t, "testdata/sqlfence.yaml")
		f.raw.Exec(`UPDATE inventory SET quantity = 10 WHERE sku = 'a'`)
		if err := story(t, f.raw, context.Background(), context.Background()); err != nil {
			t.Fatal(err)
		}
		// Both wrote 11: the same value twice. Nothing rejected A's write.
		if got := f.state(t, `SELECT quantity::text FROM inventory WHERE sku = 'a'`); got != "11" {
			t.Fatalf("quantity = %s, want the lost update's 11", got)
		}
	})
	t.Run("sqlfence fences the stale worker", func(t *testing.T) {
		f := newFixture(t, "testdata/sqlfence.yaml")
		f.raw.Exec(`UPDATE inventory SET quantity = 10 WHERE sku = 'a'`)
		err := story(t, f.fenced, sqlfence.WithEpoch(context.Background(), 6), sqlfence.WithEpoch(context.Background(), 7))
		if !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("worker A's late write: err = %v, want ErrFenced", err)
		}
		var fe *sqlfence.Error
		if !errors.As(err, &fe) || fe.Epoch != 6 || fe.StoredEpoch != 7 || fe.Table != "inventory" {
			t.Fatalf("fence error = %#v, want table inventory, epoch 6, stored 7", fe)
		}
		if got := f.state(t, `SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'a'`); got != "11:7" {
			t.Fatalf("row = %s, want B's write 11:7", got)
		}
	})
}

func TestAlreadyWrittenStrict(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx := sqlfence.WithEpoch(context.Background(), 5) // the seed's own epoch
	_, err := f.fenced.ExecContext(ctx, `UPDATE inventory SET quantity = 1 WHERE sku = $1`, "a")
	if !errors.Is(err, sqlfence.ErrAlreadyWritten) || errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("err = %v, want ErrAlreadyWritten (and not ErrFenced)", err)
	}
	if !strings.Contains(err.Error(), "mode: repeatable") {
		t.Errorf("message does not point at mode: repeatable: %v", err)
	}
	// Repeatable mode admits the same epoch again.
	if _, err := f.fenced.ExecContext(ctx, `UPDATE billing.invoices SET total = 1 WHERE id = $1`, 1); err != nil {
		t.Fatalf("repeatable table, same epoch: %v", err)
	}
	// No matching row at all is an ordinary 0-row result.
	res, err := f.fenced.ExecContext(sqlfence.WithEpoch(context.Background(), 9), `UPDATE inventory SET quantity = 1 WHERE sku = $1`, "nope")
	if err != nil {
		t.Fatalf("no matching row: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("no matching row: %d rows affected", n)
	}
}

// TestRefusals: each statement reaches no server. The data proves it for the ones
// that would have changed something.
func TestRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx := sqlfence.WithEpoch(context.Background(), 7)
	for _, tc := range []struct{ stmt, code string }{
		{`TRUNCATE inventory`, "SF301"},
		{`COPY inventory (sku, quantity) FROM STDIN`, "SF302"},
		{`UPDATE inventory SET quantity = 0, writer_epoch = 99`, "SF303"},
		{`INSERT INTO inventory VALUES ('z', 1, NULL, 99)`, "SF304"},
		{`INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('z', 1, 99)`, "SF303"},
		{`UPDATE inventory SET quantity = 0 WHERE CURRENT OF c`, "SF305"},
		{`DELETE FROM inventory WHERE CURRENT OF c`, "SF305"},
		{`SELECT 1; UPDATE inventory SET quantity = 0`, "SF306"},
		{`PREPARE p AS UPDATE inventory SET quantity = 0`, "SF406"},
		{`DO $$ BEGIN UPDATE inventory SET quantity = 0; END $$`, "SF416"},
		{`CALL billing.recalc()`, "SF410"},
		{`SELECT billing.recalc()`, "SF410"},
		{`CREATE RULE r AS ON INSERT TO staging DO ALSO UPDATE inventory SET quantity = 0`, "SF401"},
		{`COPY (DELETE FROM inventory RETURNING sku) TO STDOUT`, "SF308"},
		{`UPDATE inventory SET quantity = ` + strings.Repeat("1+", 5000) + `1`, "SF323"},
		{`UPDATE inventory SET quantity = $0`, "SF307"},
		{`SELECT set_config($1, 'off', false)`, "SF405"},
	} {
		stmt := tc.stmt
		_, err := f.fenced.ExecContext(ctx, stmt)
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("%.80s: err = %v, want ErrRefused", stmt, err)
			continue
		}
		if errors.Is(err, driver.ErrBadConn) || errors.Is(err, driver.ErrSkip) {
			t.Errorf("%.80s: refusal is %v, which database/sql would retry", stmt, err)
		}
		if !strings.Contains(err.Error(), ";") {
			t.Errorf("%.80s: refusal does not say what to do: %v", stmt, err)
		}
		if p := codeProblem(err); p != "" {
			t.Errorf("%.80s: %s", stmt, p)
		}
		if e := (*sqlfence.Error)(nil); !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(err.Error(), "["+tc.code+"]") {
			t.Errorf("%.80s: rule code %q, want %s: %v", stmt, e.Code, tc.code, err)
		}
	}
	if got := f.state(t, inventoryState); got != "a:10:5 b:20:5" {
		t.Fatalf("a refused statement changed the data: %s", got)
	}
	// A table name inside a string literal or a comment is not a write.
	for _, stmt := range []string{
		`SELECT 'UPDATE inventory SET quantity = 0'`,
		`SELECT 1 /* DELETE FROM inventory */`,
		`SELECT $$TRUNCATE inventory$$`,
		`UPDATE staging SET q = 1 WHERE sku = 'inventory'`,
	} {
		if _, err := f.fenced.ExecContext(context.Background(), stmt); err != nil {
			t.Errorf("%s: %v, want it sent", stmt, err)
		}
	}
}

func TestArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx := sqlfence.WithEpoch(context.Background(), 7)

	// pgx's own argument types keep working.
	res, err := f.fenced.ExecContext(ctx, `UPDATE inventory SET quantity = 0 WHERE sku = ANY($1)`, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("[]string argument: %d rows, want 2", n)
	}
	// Named arguments would make the epoch's position a guess.
	for _, args := range [][]any{
		{sql.Named("sku", "a")},
		{pgx.NamedArgs{"sku": "a"}},
		{"a", "extra"},
	} {
		_, err := f.fenced.ExecContext(ctx, `UPDATE inventory SET quantity = 1 WHERE sku = $1`, args...)
		if !errors.Is(err, sqlfence.ErrRefused) {
			t.Errorf("args %v: err = %v, want ErrRefused", args, err)
		}
	}
	// Server errors pass through untouched.
	_, err = f.fenced.ExecContext(ctx, `INSERT INTO inventory (sku, quantity) VALUES ($1, $2)`, "a", 1)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("duplicate key: err = %v, want a *pgconn.PgError 23505", err)
	}
	// The guard's session setting reaches the server without a round trip of its own.
	var guard string
	if err := f.fenced.QueryRow(`SELECT current_setting('` + sqlfence.GuardSetting + `', true)`).Scan(&guard); err != nil || guard != "on" {
		t.Fatalf("guard setting = %q, %v; want on", guard, err)
	}
	// A non-positive epoch is not an epoch.
	_, err = f.fenced.ExecContext(sqlfence.WithEpoch(context.Background(), 0), `UPDATE inventory SET quantity = 1 WHERE sku = $1`, "a")
	if !errors.Is(err, sqlfence.ErrUnfenced) || !strings.Contains(err.Error(), "epoch 0: the context's epoch is not positive") {
		t.Fatalf("epoch 0: err = %v, want ErrUnfenced about the epoch", err)
	}
}

func TestPreparedStatement(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	st, err := f.fenced.PrepareContext(context.Background(), `UPDATE inventory SET quantity = $2 WHERE sku = $1`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// database/sql checks the argument count against NumInput, which excludes the epoch.
	if _, err := st.ExecContext(context.Background(), "a", 1); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
	}
	if _, err := st.ExecContext(sqlfence.WithEpoch(context.Background(), 7), "a", 1); err != nil {
		t.Fatalf("epoch 7: %v", err)
	}
	// The same statement, executed under an older claim's context, is fenced.
	if _, err := st.ExecContext(sqlfence.WithEpoch(context.Background(), 6), "a", 2); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("epoch 6 after 7: err = %v, want ErrFenced", err)
	}
	if got := f.state(t, inventoryState); got != "a:1:7 b:20:5" {
		t.Fatalf("state %s", got)
	}
	if _, err := f.fenced.PrepareContext(context.Background(), `TRUNCATE inventory`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("prepare TRUNCATE: err = %v, want ErrRefused", err)
	}
}

func TestTransactionEpochPerStatement(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	tx, err := f.fenced.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(sqlfence.WithEpoch(context.Background(), 7), `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(context.Background(), `UPDATE inventory SET quantity = 2 WHERE sku = 'b'`); !errors.Is(err, sqlfence.ErrUnfenced) {
		t.Fatalf("no epoch inside a transaction: err = %v, want ErrUnfenced", err)
	}
	if _, err := tx.ExecContext(sqlfence.WithEpoch(context.Background(), 6), `UPDATE inventory SET quantity = 3 WHERE sku = 'a'`); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("older epoch inside the transaction: err = %v, want ErrFenced", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.state(t, inventoryState); got != "a:1:7 b:20:5" {
		t.Fatalf("state %s", got)
	}
}

func TestUnfencedAndShadow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, extra string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("version: 1\ncatalog_refresh: 1h\ntables:\n  - name: inventory\n"+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const stmt = `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`
	repair := sqlfence.Unfenced(context.Background(), "operator repair, ticket 42")

	deny := newFixture(t, write("deny.yaml", ""))
	if _, err := deny.fenced.ExecContext(repair, stmt); !errors.Is(err, sqlfence.ErrUnfenced) || !strings.Contains(err.Error(), "unfenced: allow") {
		t.Fatalf("Unfenced under a deny policy: err = %v", err)
	}

	allow := newFixture(t, write("allow.yaml", "unfenced: allow\n"))
	if _, err := allow.fenced.ExecContext(repair, stmt); err != nil {
		t.Fatalf("Unfenced under an allow policy: %v", err)
	}
	if got := allow.state(t, inventoryState); got != "a:0:5 b:20:5" {
		t.Fatalf("Unfenced write: state %s, want it unstamped", got)
	}

	shadow := newFixture(t, write("shadow.yaml", "enforce: shadow\n"))
	if _, err := shadow.fenced.ExecContext(context.Background(), stmt); err != nil {
		t.Fatalf("shadow mode, no epoch: %v", err)
	}
	if _, err := shadow.fenced.ExecContext(context.Background(), `TRUNCATE staging, inventory`); err != nil {
		t.Fatalf("shadow mode, TRUNCATE: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Setenv(sqlfence.PolicyEnv, "")
	for _, c := range []struct{ dsn, want string }{
		{"postgres://localhost/x", "no policy"},
		{"postgres://localhost/x?sqlfence_policy=testdata/missing.yaml", "testdata/missing.yaml: cannot read policy file relative to the working directory /"},
		{"postgres://localhost/x?sqlfence_policy=testdata/policy/unknown_key.yaml", "line 7"},
		{"host=localhost sqlfence_policy=testdata/policy/duplicate_table.yaml", "duplicate"},
		{"postgres//broken:url&sqlfence_policy=testdata/sqlfence.yaml", "bad DSN: it is neither a postgres:// URL"},
		{"postgres:/localhost/x?sqlfence_policy=testdata/sqlfence.yaml", "bad DSN"},
		{"postgres://u:secret@localhost:port/x?sqlfence_policy=testdata/sqlfence.yaml", `bad DSN: invalid port ":port"`},
		// A misspelt or unknown sqlfence parameter is an error naming the one meant,
		// in both forms, with or without a policy from the environment.
		{"postgres://localhost/x?sqlfence_polcy=testdata/sqlfence.yaml", `unknown DSN parameter "sqlfence_polcy" (did you mean sqlfence_policy?)`},
		{"postgres://localhost/x?sqlfence_policy=testdata/sqlfence.yaml&sqlfence_policy_file=x", `unknown DSN parameter "sqlfence_policy_file" (did you mean sqlfence_policy?)`},
		{"postgres://localhost/x?SQLFENCE_POLICY=testdata/sqlfence.yaml", `unknown DSN parameter "SQLFENCE_POLICY" (did you mean sqlfence_policy?)`},
		{"host=localhost sqlfence-policy=testdata/sqlfence.yaml", `unknown DSN parameter "sqlfence-policy" (did you mean sqlfence_policy?)`},
		{"host=localhost sqlfence_epoch=3 sqlfence_policy=testdata/sqlfence.yaml", `unknown DSN parameter "sqlfence_epoch"`},
		{"host=localhost sqlfence.fence=on sqlfence_policy=testdata/sqlfence.yaml", `unknown DSN parameter "sqlfence.fence" (did you mean sqlfence.fenced?)`},
	} {
		db, err := sql.Open("sqlfence", c.dsn)
		if err == nil {
			db.Close()
			t.Errorf("%s: sql.Open succeeded", c.dsn)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want it to mention %q", c.dsn, err, c.want)
		}
	}
	t.Setenv(sqlfence.PolicyEnv, "testdata/sqlfence.yaml")
	db, err := sql.Open("sqlfence", "postgres://localhost/x")
	if err != nil {
		t.Fatalf("policy from %s: %v", sqlfence.PolicyEnv, err)
	}
	db.Close()
}

// TestClaimDiscipline: the claim table's status and epoch columns are written only by
// the claim helpers' statements; any other path could claim a job without a token.
func TestClaimDiscipline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx := context.Background()
	for _, stmt := range []string{
		`UPDATE jobs SET status = 'claimed' WHERE id = 1`,
		`UPDATE jobs SET lease_epoch = 99 WHERE id = 1`,
		`INSERT INTO jobs (id, status) VALUES (2, 'claimed')`,
		`INSERT INTO jobs VALUES (5, 'claimed', 99, NULL)`,
		`INSERT INTO jobs SELECT 6, 'claimed', 99, NULL`,
		`MERGE INTO jobs j USING (SELECT 7 AS id) s ON j.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'claimed', 99, NULL)`,
		`COPY jobs FROM STDIN`,
	} {
		if _, err := f.fenced.ExecContext(ctx, stmt); !errors.Is(err, sqlfence.ErrRefused) || !strings.Contains(err.Error(), "claim helpers") {
			t.Errorf("%s: err = %v, want a refusal pointing at the claim helpers", stmt, err)
		}
	}
	// Other columns, enqueueing and cleanup are ordinary writes.
	for _, stmt := range []string{
		`UPDATE jobs SET lease_expires_at = now() WHERE id = 1`,
		`INSERT INTO jobs (id) VALUES (3)`,
		`DELETE FROM jobs WHERE id = 3`,
	} {
		if _, err := f.fenced.ExecContext(ctx, stmt); err != nil {
			t.Errorf("%s: %v", stmt, err)
		}
	}
	// The claim helpers' statements carry the mark.
	claim := `UPDATE jobs SET status = 'claimed', lease_epoch = lease_epoch + 1 WHERE id = $1 RETURNING lease_epoch`
	var epoch int64
	if err := f.fenced.QueryRowContext(claimctx.With(ctx), claim, 1).Scan(&epoch); err != nil || epoch != 1 {
		t.Fatalf("claim helper statement: epoch %d, %v", epoch, err)
	}
	st, err := f.fenced.PrepareContext(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.QueryRowContext(ctx, 1).Scan(&epoch); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("prepared claim without the mark: err = %v", err)
	}
	if err := st.QueryRowContext(claimctx.With(ctx), 1).Scan(&epoch); err != nil || epoch != 2 {
		t.Fatalf("prepared claim with the mark: epoch %d, %v", epoch, err)
	}
}

// TestExactAccounting: a bulk write can be fenced on some rows and not others. By
// default the rows affected are all the caller learns; with WithExactAccounting the
// partial fence is an error with both counts.
func TestExactAccounting(t *testing.T) {
	t.Parallel()
	for _, stmt := range []string{`UPDATE inventory SET quantity = 0`, `DELETE FROM inventory`} {
		f := newFixture(t, "testdata/sqlfence.yaml")
		f.raw.Exec(`UPDATE inventory SET writer_epoch = 9 WHERE sku = 'b'`)
		ctx := sqlfence.WithEpoch(context.Background(), 7)
		if _, err := f.fenced.ExecContext(sqlfence.WithExactAccounting(ctx), stmt); !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("%s: err = %v, want ErrFenced", stmt, err)
		} else {
			var fe *sqlfence.Error
			errors.As(err, &fe)
			if fe.Affected != 1 || fe.Fenced != 1 || fe.StoredEpoch != 9 {
				t.Errorf("%s: affected %d fenced %d stored %d, want 1, 1, 9", stmt, fe.Affected, fe.Fenced, fe.StoredEpoch)
			}
		}
		f = newFixture(t, "testdata/sqlfence.yaml")
		f.raw.Exec(`UPDATE inventory SET writer_epoch = 9 WHERE sku = 'b'`)
		res, err := f.fenced.ExecContext(ctx, stmt)
		if err != nil {
			t.Fatalf("%s without exact accounting: %v", stmt, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s without exact accounting: %d rows, want 1", stmt, n)
		}
	}
}

// TestExactAccountingReturning: a multi-row upsert through Query with RETURNING (as
// GORM sends a batch upsert) in which one row is fenced and one is new reports the
// fenced row from rows.Err() under exact accounting, as Exec does.
func TestExactAccountingReturning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "testdata/sqlfence.yaml")
	if _, err := f.raw.Exec(`UPDATE inventory SET writer_epoch = 9 WHERE sku = 'a'`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(sqlfence.WithExactAccounting(sqlfence.WithEpoch(context.Background(), 7)), time.Minute)
	defer cancel()
	rows, err := f.fenced.QueryContext(ctx, `INSERT INTO inventory (sku, quantity) VALUES ('a', 1), ('z', 2) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity RETURNING sku`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	err = rows.Err()
	rows.Close()
	var fe *sqlfence.Error
	if !errors.As(err, &fe) || !errors.Is(err, sqlfence.ErrFenced) || fe.Affected != 1 || fe.Fenced != 1 || fe.StoredEpoch != 9 {
		t.Fatalf("rows.Err() = %v (%d rows), want ErrFenced with 1 affected, 1 fenced, stored 9", err, n)
	}
	if got := f.state(t, inventoryState); got != "a:10:9 b:20:5 z:2:7" {
		t.Fatalf("data %q", got)
	}
}

// TestRawConn: sql.Conn.Raw gives sqlfence's connection, not pgx's; the pgx one is
// reachable only on the explicit unfenced path.
func TestRawConn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		policy string
		ctx    context.Context
		ok     bool
	}{
		{"version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n", ctx, false},
		{"version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n", sqlfence.Unfenced(ctx, "test"), false},
		{"version: 1\ncatalog_refresh: 1h\ntables: [inventory]\nunfenced: allow\n", ctx, false},
		{"version: 1\ncatalog_refresh: 1h\ntables: [inventory]\nunfenced: allow\n", sqlfence.Unfenced(ctx, "test"), true},
	} {
		f := newFixture(t, writePolicy(t, c.policy))
		conn, err := f.fenced.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = conn.Raw(func(dc any) error {
			if _, isPgx := dc.(*stdlib.Conn); isPgx {
				t.Error("sql.Conn.Raw handed out pgx's connection directly")
			}
			inner, err := sqlfence.RawConn(c.ctx, dc)
			if err != nil {
				return err
			}
			if _, isPgx := inner.(*stdlib.Conn); !isPgx {
				t.Errorf("RawConn returned %T", inner)
			}
			return nil
		})
		conn.Close()
		if c.ok != (err == nil) || err != nil && !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Errorf("policy %q: RawConn err = %v", c.policy, err)
		}
	}
}
