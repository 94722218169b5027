package pgxfence_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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

// TestDifferentialGolden: for every statement of testdata/rewrite, the
// database/sql front and pgxfence (Conn, Pool, a transaction) send byte-identical
// texts to the server — the golden's fenced text, the input for a pass, nothing for
// a refusal — and a refusal is the same error on both.
func TestDifferentialGolden(t *testing.T) {
	files, _ := filepath.Glob("../testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	// Each front on a database of its own, so that every statement meets the same
	// data on both (a fenced write's checks depend on it).
	f, fstd, fpool := newFixture(t), newFixture(t), newFixture(t)
	p := policy(t, "")

	sqlTr := &tracer{}
	cfg, err := pgx.ParseConfig(fstd.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = sqlTr
	std := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p))
	std.SetMaxOpenConns(1)
	defer std.Close()
	conn := f.conn(t, p, pgx.QueryExecModeCacheStatement)
	pool := fpool.pool(t, p, pgx.QueryExecModeCacheStatement)

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
			n := numParams(in)
			if !strings.HasPrefix(out, "PASS") && !strings.Contains(out, ": ") {
				n = numParams(out) - 1
			}
			args := make([]any, n)
			for i := range args {
				args[i] = int64(100 + i)
			}
			ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)
			sqlTr.take()
			f.tr.take()
			fpool.tr.take()
			_, stdErr := std.ExecContext(ctx, in, args...)
			want := sqlTr.take()
			_, pgxErr := conn.Exec(ctx, in, args...)
			got := f.tr.take()
			if !slices.Equal(got, want) {
				t.Fatalf("Conn.Exec sent\n\t%q\nthe database/sql front sent\n\t%q", got, want)
			}
			var se, pe *sqlfence.Error
			if errors.As(stdErr, &se) != errors.As(pgxErr, &pe) || se != nil && (se.Code != pe.Code || se.Kind != pe.Kind) {
				t.Fatalf("errors differ: database/sql %v; pgxfence %v", stdErr, pgxErr)
			}
			switch {
			case out == "PASS":
				if len(want) == 0 || want[0] != in {
					t.Fatalf("pass: sent %q", want)
				}
			case strings.HasPrefix(out, "REFUSED: ") || strings.HasPrefix(out, "CLAIM HELPERS ONLY: "):
				if len(want) != 0 || !errors.Is(pgxErr, sqlfence.ErrRefused) {
					t.Fatalf("refusal: sent %q, err %v", want, pgxErr)
				}
				return
			case strings.Contains(out[:min(len(out), 30)], ": ") && !strings.HasPrefix(out, "/*"):
				t.Skipf("outcome %q", out)
			default:
				if len(want) == 0 || want[0] != out {
					t.Fatalf("rewrite: sent %q, golden %q", want, out)
				}
			}
			// The other pgxfence paths send the same first text.
			if _, err := pool.Exec(ctx, in, args...); err != nil && errors.Is(err, sqlfence.ErrRefused) {
				t.Fatalf("Pool.Exec: %v", err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := tx.Query(ctx, in, args...)
			rows.Close()
			tx.Rollback(ctx)
			for _, s := range [][]string{fpool.tr.take()} {
				if !slices.Contains(s, want[0]) {
					t.Fatalf("Pool and Tx sent %q, want %q", s, want[0])
				}
			}
		})
	}
}
