package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// TestPolicyCheckedAgainstDatabase: under the default (resolve: catalog) a policy
// that does not match the database stops every statement on the connector — a read
// too, not only the misnamed table's writes — with the policy's file and line, the
// rule code, the table and the fix; CheckCatalog reports the same with the codes.
func TestPolicyCheckedAgainstDatabase(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, `
		CREATE SCHEMA app;
		CREATE TABLE inventory (sku text PRIMARY KEY, quantity int, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE ledger (id int);
		CREATE TABLE stock (id int, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE app.stock (id int, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE jobs (id int, lease_epoch bigint, status text);
		INSERT INTO inventory VALUES ('a', 1, 0);`)
	cases := []struct {
		name, policy, code, table string
		want                      []string
	}{
		{"typo", "version: 1\ntables:\n  - name: inventroy\n", "SF520", "inventroy",
			[]string{"line 3", "inventroy does not exist in any schema", "did you mean inventory?"}},
		{"typo qualified", "version: 1\ntables:\n  - name: public.inventry\n", "SF520", "public.inventry",
			[]string{"line 3", "did you mean public.inventory?"}},
		{"missing column", "version: 1\ntables:\n  - name: inventory\n  - name: ledger\n", "SF521", "ledger",
			[]string{"line 4", "ALTER TABLE public.ledger ADD COLUMN writer_epoch bigint NOT NULL DEFAULT 0"}},
		{"claim table nullable epoch", "version: 1\ntables: [inventory]\nclaims:\n  - table: jobs\n", "SF521", "jobs",
			[]string{"line 4", "public.jobs.lease_epoch is nullable", "SET NOT NULL"}},
		{"ambiguous", "version: 1\ntables:\n  - name: stock\n", "SF522", "stock",
			[]string{"line 3", "app.stock and public.stock", "qualify it in the policy"}},
	}
	for _, c := range cases {
		path := writePolicy(t, c.policy)
		db, err := sql.Open("sqlfence", withParam(withParam(dsn, "search_path", "app,public"), "sqlfence_policy", path))
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{"SELECT 1", "UPDATE inventory SET quantity = 0"} {
			ctx, cancel := context.WithTimeout(sqlfence.WithEpoch(context.Background(), 9), 10*time.Second)
			_, err := db.ExecContext(ctx, stmt)
			cancel()
			var se *sqlfence.Error
			if !errors.Is(err, sqlfence.ErrRefused) || !errors.As(err, &se) || se.Code != c.code || se.Table != c.table {
				t.Errorf("%s: %s: err = %v, want ErrRefused [%s] for table %s", c.name, stmt, err, c.code, c.table)
				continue
			}
			for _, w := range append(c.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %s: err = %v, want it to say %q", c.name, stmt, err, w)
				}
			}
		}
		db.Close()
		p, err := sqlfence.LoadPolicy(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := raw.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "SET search_path = app, public"); err != nil {
			t.Fatal(err)
		}
		fs, err := p.CheckCatalog(ctx, queryFunc(conn))
		conn.Close()
		cancel()
		if err != nil || len(fs) == 0 || fs[0].Code != c.code || fs[0].Kind != "policy" || fs[0].Line == 0 {
			t.Errorf("%s: CheckCatalog = %+v, %v; want a policy finding %s with its line", c.name, fs, err, c.code)
		}
	}
	var n int
	if err := raw.QueryRow("SELECT quantity FROM inventory WHERE sku = 'a'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("inventory changed: %d, %v", n, err)
	}
}

// TestPolicyCatalogUnreadable: a role that may not read the catalog gets an error
// that says so and names both ways out, on every statement.
func TestPolicyCatalogUnreadable(t *testing.T) {
	t.Parallel()
	role := fmt.Sprintf("nocatalog_%d", time.Now().UnixNano())
	dsn, raw := newRawDB(t, `CREATE TABLE inventory (sku text PRIMARY KEY, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE ROLE `+role+` LOGIN;
		GRANT ALL ON inventory TO `+role+`;
		REVOKE SELECT ON pg_catalog.pg_class FROM PUBLIC;`)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		raw.ExecContext(ctx, "GRANT SELECT ON pg_catalog.pg_class TO PUBLIC; DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	db, err := sql.Open("sqlfence", withParam(u.String(), "sqlfence_policy", writePolicy(t, "version: 1\ntables: [inventory]\n")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "SELECT 1")
	var se *sqlfence.Error
	if !errors.As(err, &se) || se.Code != "SF523" || !strings.Contains(err.Error(), "cannot read the catalog") || !strings.Contains(err.Error(), "resolve: none") {
		t.Fatalf("err = %v, want SF523 naming the grant and resolve: none", err)
	}
}

// queryFunc adapts a connection to CheckCatalog.
func queryFunc(conn *sql.Conn) func(ctx context.Context, query string, args ...any) ([][]any, error) {
	return func(ctx context.Context, query string, args ...any) ([][]any, error) {
		rows, err := conn.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, err
			}
			out = append(out, vals)
		}
		return out, rows.Err()
	}
}

// TestPolicyMismatchShadow: shadow mode reports and never enforces: a policy that
// does not match the database is logged once, and statements run as written.
func TestPolicyMismatchShadow(t *testing.T) {
	t.Parallel()
	dsn, _ := newRawDB(t, `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO inventory VALUES ('a', 1, 0);`)
	p, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventroy]\nenforce: shadow\n"), "shadow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p, sqlfence.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))))
	defer db.Close()
	if _, err := run(db, 0, "UPDATE inventory SET quantity = 2"); err != nil {
		t.Fatalf("shadow mode: %v, want it to run", err)
	}
	if !strings.Contains(buf.String(), "would refuse every statement") || !strings.Contains(buf.String(), "SF520") {
		t.Fatalf("log: %s", buf.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
