package sqlfence_test

import (
	"bufio"
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// TestServerKeywords: the test server's pg_get_keywords() is the list
// internal/engine/testdata/keywords holds for its version, from which
// engine.grammarKeywords is checked (TestGrammarKeywords): the table is PostgreSQL's
// own history, checked on every server the tests run on.
func TestServerKeywords(t *testing.T) {
	t.Parallel()
	_, raw := newRawDB(t, "SELECT 1")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var num int
	if err := raw.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("internal/engine/testdata/keywords/" + strconv.Itoa(num/10000) + ".txt")
	if os.IsNotExist(err) {
		t.Skipf("no keyword list for PostgreSQL %d", num/10000)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	for s := bufio.NewScanner(f); s.Scan(); {
		want = append(want, s.Text())
	}
	var got string
	if err := raw.QueryRowContext(ctx, "SELECT string_agg(word || E'\\t' || catcode::text, E'\\n' ORDER BY word) FROM pg_get_keywords()").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != strings.Join(want, "\n") {
		t.Errorf("PostgreSQL %d's keywords differ from internal/engine/testdata/keywords/%d.txt", num/10000, num/10000)
	}
}

// TestOlderGrammarCall: on a server before 16, json_object(5) is a call of whatever
// json_object the search path finds — here a migration's public.json_object(int)
// that deletes protected rows — while PostgreSQL 17's grammar reads pg_catalog's.
// Under resolve: catalog it is judged as the call the server makes, through
// database/sql and pgxfence, with and without an epoch: refused, and the rows stay.
func TestOlderGrammarCall(t *testing.T) {
	t.Parallel()
	dsn, raw := newRawDB(t, `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int, writer_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO inventory VALUES ('a', 1, 5), ('b', 2, 5);
CREATE FUNCTION public.json_object(n int) RETURNS int LANGUAGE plpgsql AS $$BEGIN DELETE FROM inventory; RETURN n; END$$;`)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var num int
	if err := raw.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	var p *sqlfence.Policy
	if num >= 160000 {
		t.Skipf("PostgreSQL %d reads json_object(…) as the parser does", num/10000)
	}
	const policy = "version: 1\nresolve: catalog\ntables: [inventory]\n"
	db, err := sql.Open("sqlfence", withParam(dsn, "sqlfence_policy", writePolicy(t, policy)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func() string { return queryOne(t, ctx, raw, "SELECT count(*)::text FROM inventory") }
	for _, q := range []string{"SELECT json_object(5)", "SELECT JSON_OBJECT(5) AS x", "SELECT * FROM inventory WHERE quantity = json_object(1)"} {
		for _, epoch := range []int64{0, 9} {
			c := context.Background()
			if epoch > 0 {
				c = sqlfence.WithEpoch(c, epoch)
			}
			c, cc := context.WithTimeout(c, 15*time.Second)
			_, err := db.ExecContext(c, q)
			cc()
			if err == nil {
				t.Errorf("database/sql, %s (epoch %d): ran", q, epoch)
			}
			if got := count(); got != "2" {
				t.Fatalf("database/sql, %s (epoch %d): %s rows left, want 2 (err %v)", q, epoch, got, err)
			}
		}
	}
	// The pg_catalog function, named as such, reads alike everywhere and passes.
	if _, err := db.ExecContext(ctx, "SELECT pg_catalog.json_object('{a,1}'::text[])"); err != nil {
		t.Errorf("pg_catalog.json_object: %v", err)
	}

	p, err = sqlfence.ParsePolicy([]byte(policy), "older.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	fc, err := pgxfence.NewConn(conn, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, epoch := range []int64{0, 9} {
		c := ctx
		if epoch > 0 {
			c = sqlfence.WithEpoch(ctx, epoch)
		}
		if _, err := fc.Exec(c, "SELECT json_object(5)"); err == nil {
			t.Errorf("pgxfence (epoch %d): ran", epoch)
		}
		if got := count(); got != "2" {
			t.Fatalf("pgxfence (epoch %d): %s rows left, want 2", epoch, got)
		}
	}
}
