package pgxfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

var paramRE = regexp.MustCompile(`\$([0-9]+)`)

func numParams(s string) int {
	n := 0
	for _, m := range paramRE.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	return n
}

// dataState is every table of the fixture, rows in order: what the differential
// compares across the fronts' databases.
const dataState = `SELECT concat_ws(' | ',
	(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM inventory t),
	(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM staging t),
	(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM billing.invoices t),
	(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM reports t),
	(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM audit t),
	(SELECT string_agg(t::text, ',' ORDER BY t::text) FROM jobs t))`

// side is one front of the differential, on a database of its own.
type side struct {
	name string
	f    *fixture
	tr   *tracer
	exec func(ctx context.Context, sql string, args ...any) error
}

// TestDifferentialGolden: every statement of testdata/rewrite runs with no, a
// stale (3) and a fresh (7) epoch through the database/sql front and through
// pgxfence's Conn, Pool and a Tx, each on a database of its own. On every run all
// four send byte-identical texts — the golden's fenced text, the input for a pass,
// nothing for a refusal — and return the same kind of error (rule code included),
// and after every run their databases hold the same data. A Conn in each other
// exec mode sends the same fenced text and refuses the same statements.
func TestDifferentialGolden(t *testing.T) {
	files, _ := filepath.Glob("../testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	// The text alone decides here (resolve: none): under the catalog the database/sql
	// front also reads the catalog again after a statement the server refused for a
	// missing relation, which is not the statement's own text.
	raw, err := os.ReadFile("../testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := policy(t, strings.Replace(string(raw), "catalog_refresh: 1h", "resolve: none", 1))

	fstd := newFixture(t)
	cfg, err := pgx.ParseConfig(fstd.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = fstd.tr
	std := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p))
	std.SetMaxOpenConns(1)
	defer std.Close()
	fconn, fpool, ftx := newFixture(t), newFixture(t), newFixture(t)
	conn := fconn.conn(t, p, pgx.QueryExecModeCacheStatement)
	pool := fpool.pool(t, p, pgx.QueryExecModeCacheStatement)
	txPool := ftx.pool(t, p, pgx.QueryExecModeCacheStatement)
	tagErr := func(_ pgconn.CommandTag, err error) error { return err }
	sides := []side{
		{"database/sql", fstd, fstd.tr, func(ctx context.Context, q string, args ...any) error {
			_, err := std.ExecContext(ctx, q, args...)
			return err
		}},
		{"Conn", fconn, fconn.tr, func(ctx context.Context, q string, args ...any) error { return tagErr(conn.Exec(ctx, q, args...)) }},
		{"Pool", fpool, fpool.tr, func(ctx context.Context, q string, args ...any) error { return tagErr(pool.Exec(ctx, q, args...)) }},
		{"Tx", ftx, ftx.tr, func(ctx context.Context, q string, args ...any) error {
			tx, err := txPool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}},
	}

	// And Conn in every other exec mode, as the connection's default.
	for _, mode := range modes[1:] {
		fm := newFixture(t)
		c := fm.conn(t, p, mode)
		sides = append(sides, side{"Conn/" + mode.String(), fm, fm.tr, func(ctx context.Context, q string, args ...any) error { return tagErr(c.Exec(ctx, q, args...)) }})
	}

	// The first statement of each side also reads what a fence reads once (the claim
	// tables' schemas, the catalog): not a statement's own text.
	for _, s := range sides {
		if err := s.exec(timeout(t, context.Background()), "SELECT 1"); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		s.tr.take()
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		in, out, ok := strings.Cut(string(data), "\n---- sent ----\n")
		if !ok {
			t.Fatalf("%s: no separator", file)
		}
		out = strings.TrimSuffix(out, "\n")
		t.Run(strings.TrimSuffix(filepath.Base(file), ".sql"), func(t *testing.T) {
			rewrite := strings.HasPrefix(out, "/*")
			n := numParams(in)
			if rewrite {
				n = numParams(out) - 1 // the epoch is the fenced text's last parameter
			}
			args := make([]any, n)
			for i := range args {
				args[i] = int64(100 + i)
			}
			for _, epoch := range []int64{0, 3, 7} {
				ctx := timeout(t, context.Background())
				if epoch != 0 {
					ctx = sqlfence.WithEpoch(ctx, epoch)
				}
				var (
					sent  [][]string
					errs  []error
					state []string
				)
				for _, s := range sides {
					s.tr.take()
					errs = append(errs, s.exec(ctx, in, args...))
					// The transaction's own begin and commit are not the statement's.
					sent = append(sent, slices.DeleteFunc(s.tr.take(), func(q string) bool { return q == "begin" || q == "commit" || q == "rollback" }))
					state = append(state, s.f.state(t, dataState))
				}
				for i := range sides[1:] {
					i++
					if strings.HasPrefix(sides[i].name, "Conn/") {
						// Another exec mode encodes the arguments by other rules (an
						// int64 into a text column works in one and not in another),
						// so the data part ways: the fence's own text and refusals
						// must still be the same.
						var fe *sqlfence.Error
						if errors.As(errs[0], &fe) && kind(errs[i]) != kind(errs[0]) {
							t.Fatalf("epoch %d: errors differ: database/sql %v; %s %v", epoch, errs[0], sides[i].name, errs[i])
						}
						if (len(sent[i]) == 0) != (len(sent[0]) == 0) || len(sent[0]) > 0 && sent[i][0] != sent[0][0] {
							t.Fatalf("epoch %d: %s sent\n\t%q\nthe database/sql front sent\n\t%q", epoch, sides[i].name, sent[i], sent[0])
						}
						continue
					}
					if !slices.Equal(sent[i], sent[0]) {
						t.Fatalf("epoch %d: %s sent\n\t%q\nthe database/sql front sent\n\t%q", epoch, sides[i].name, sent[i], sent[0])
					}
					if kind(errs[i]) != kind(errs[0]) {
						t.Fatalf("epoch %d: errors differ: database/sql %v; %s %v", epoch, errs[0], sides[i].name, errs[i])
					}
					if state[i] != state[0] {
						t.Fatalf("epoch %d: data differ after the statement:\ndatabase/sql: %s\n%s: %s", epoch, state[0], sides[i].name, state[i])
					}
				}
				// A PostgreSQL 17 construct on an older server: refused by every front
				// (SF706), nothing sent; on 17 and later it is fenced as the golden says.
				if fe := (*sqlfence.Error)(nil); strings.HasSuffix(file, "_pg17.sql") && errors.As(errs[0], &fe) && fe.Code == "SF706" {
					if len(sent[0]) != 0 {
						t.Fatalf("SF706, yet sent %q", sent[0])
					}
					continue
				}
				switch {
				case strings.HasPrefix(out, "REFUSED: sqlfence: refused [SF320]"):
					// Text neither parser reads: the server's own error, from a Parse
					// round trip that runs nothing (front.ServerParse).
					var pe *pgconn.PgError
					if len(sent[0]) != 0 || len(sent[1]) != 0 || !errors.As(errs[1], &pe) || !errors.As(errs[0], &pe) {
						t.Fatalf("unparseable: sent %q, err %v", sent[0], errs[1])
					}
				case strings.HasPrefix(out, "REFUSED: ") || strings.HasPrefix(out, "CLAIM HELPERS ONLY: "):
					if len(sent[0]) != 0 || !errors.Is(errs[1], sqlfence.ErrRefused) {
						t.Fatalf("refusal: sent %q, err %v", sent[0], errs[1])
					}
				case out == "PASS":
					if len(sent[0]) == 0 || sent[0][0] != in {
						t.Fatalf("pass: sent %q", sent[0])
					}
				case rewrite && epoch == 0:
					if len(sent[0]) != 0 || !errors.Is(errs[1], sqlfence.ErrUnfenced) {
						t.Fatalf("no epoch: sent %q, err %v", sent[0], errs[1])
					}
				case rewrite:
					// Sent without arguments, the epoch may go as a literal
					// (engine.Bound.Literal): the golden with its digits for $1.
					digits := strconv.FormatInt(epoch, 10)
					literal := strings.NewReplacer(" $1::bigint", " "+digits+"::bigint", "($1::bigint", "("+digits+"::bigint",
						",$1::bigint", ","+digits+"::bigint").Replace(out)
					if len(sent[0]) == 0 || sent[0][0] != out && (len(args) > 0 || sent[0][0] != literal) {
						t.Fatalf("rewrite: sent %q, golden %q", sent[0], out)
					}
				}
			}
		})
	}
}

// kind is what the differential compares of two errors: sqlfence's kind and rule
// code, the server's SQLSTATE, or that there was none.
func kind(err error) string {
	var fe *sqlfence.Error
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &fe):
		return fmt.Sprintf("%v %s", fe.Kind, fe.Code)
	case errors.As(err, &pe):
		return "SQLSTATE " + pe.Code
	}
	return "other"
}
