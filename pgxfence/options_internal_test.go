package pgxfence

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// pgxVerified is the range of pgx versions whose option loop (conn.go: Exec, Query,
// sendBatch) was read and found to be the one split mirrors, and that
// TestPgxOptionLoop ran against: from (inclusive) to (exclusive). Widen it only
// after reading the new version's loop and running TestPgxOptionLoop on it.
var pgxVerified = [2][3]int{{5, 12, 0}, {5, 13, 0}}

// TestPgxVersion fails when go.mod asks for a pgx outside pgxVerified: a pgx that
// reads another option, or reads options again after the rewriter, would turn an
// argument pgxfence hands it as a value into how the call runs.
func TestPgxVersion(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/jackc/pgx/v5 v(\d+)\.(\d+)\.(\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/jackc/pgx/v5")
	}
	var v [3]int
	for i := range v {
		v[i], _ = strconv.Atoi(string(m[i+1]))
	}
	less := func(a, b [3]int) bool {
		for i := range a {
			if a[i] != b[i] {
				return a[i] < b[i]
			}
		}
		return false
	}
	if less(v, pgxVerified[0]) || !less(v, pgxVerified[1]) {
		t.Fatalf("go.mod requires pgx v%d.%d.%d, outside the versions whose option loop pgxfence was verified against (v%d.%d.%d up to v%d.%d.%d): read the new conn.go's Exec, Query and sendBatch loops, run TestPgxOptionLoop, and widen pgxVerified",
			v[0], v[1], v[2], pgxVerified[0][0], pgxVerified[0][1], pgxVerified[0][2], pgxVerified[1][0], pgxVerified[1][1], pgxVerified[1][2])
	}
}

// recorder is a query rewriter that records that pgx called it, and with which
// arguments: what pgx's loop left after the options it took.
type recorder struct {
	name string
	got  *[]string
}

func (r recorder) RewriteQuery(_ context.Context, _ *pgx.Conn, _ string, args []any) (string, []any, error) {
	*r.got = append(*r.got, r.name+describe(args))
	return "SELECT 1", nil, nil
}

// describe names each argument of an argument list.
func describe(args []any) string {
	var b strings.Builder
	b.WriteString("(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(" ")
		}
		switch a := a.(type) {
		case recorder:
			b.WriteString(a.name)
		default:
			fmt.Fprintf(&b, "%T", a)
		}
	}
	b.WriteString(")")
	return b.String()
}

// TestPgxOptionLoop proves split against pgx's own option loop on a real server:
// for every argument list of up to four values drawn from pgx's four option types,
// two rewriters and a plain value, through Conn.Exec, Conn.Query and a queued batch
// query, the rewriter pgx calls (the last one its loop took) and the arguments it
// hands that rewriter (what the loop left) are the ones split finds. So optionFree,
// which asks split whether pgx would take anything off a list, says what pgx does.
func TestPgxOptionLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got []string
	r1, r2 := recorder{"r1", &got}, recorder{"r2", &got}
	alphabet := []any{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryResultFormats{pgx.TextFormatCode},
		pgx.QueryResultFormatsByOID{pgtype.Int4OID: pgx.TextFormatCode}, r1, r2, 7}
	var lists [][]any
	var grow func(prefix []any)
	grow = func(prefix []any) {
		lists = append(lists, append([]any(nil), prefix...))
		if len(prefix) == 4 {
			return
		}
		for _, a := range alphabet {
			grow(append(prefix, a))
		}
	}
	grow(nil)
	checked := 0
	for _, args := range lists {
		for _, kind := range []int{forExec, forQuery, forBatch} {
			o, rest := split(args, kind)
			if o.rewriter == nil {
				continue // pgx calls nothing that could show what it took
			}
			got = nil
			switch kind {
			case forExec:
				_, err = conn.Exec(ctx, "SELECT 0", args...)
			case forQuery:
				var rows pgx.Rows
				rows, err = conn.Query(ctx, "SELECT 0", args...)
				if err == nil {
					rows.Close()
					err = rows.Err()
				}
			case forBatch:
				b := &pgx.Batch{}
				b.Queue("SELECT 0", args...)
				err = conn.SendBatch(ctx, b).Close()
			}
			if err != nil {
				t.Fatalf("kind %d, %s: %v", kind, describe(args), err)
			}
			want := o.rewriter.(recorder).name + describe(rest)
			if len(got) != 1 || got[0] != want {
				t.Fatalf("kind %d, arguments %s: pgx called %v, split says %s", kind, describe(args), got, want)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d argument lists checked", checked)
	}
	t.Logf("%d argument lists checked against pgx's loop", checked)
}

// TestOptionFree: what pgxfence hands pgx never starts with a value pgx would take
// for an option of the call, beyond pgxfence's own.
func TestOptionFree(t *testing.T) {
	rw := recorder{"r", new([]string)}
	for _, c := range []struct {
		kind   int
		args   []any
		refuse bool
	}{
		{forExec, []any{1, "a"}, false},
		{forExec, nil, false},
		{forExec, []any{rw}, true},
		{forExec, []any{pgx.QueryExecModeSimpleProtocol, 1}, true},
		{forExec, []any{pgx.QueryResultFormats{1}}, false}, // a value to Exec (pgx reads no formats there)
		{forQuery, []any{pgx.QueryResultFormats{1}}, true},
		{forQuery, []any{pgx.QueryResultFormatsByOID{}}, true},
		{forQuery, []any{pgx.QueryExecModeDescribeExec}, true},
		{forQuery, []any{pgx.NamedArgs{"a": 1}}, true},            // a rewriter
		{forBatch, []any{pgx.QueryExecModeSimpleProtocol}, false}, // a batch reads no exec mode
		{forBatch, []any{pgx.StrictNamedArgs{}}, true},
		{forBatch, []any{1, rw}, false}, // a value first: pgx reads nothing
	} {
		err := optionFree(front.Call{Bound: engine.Bound{D: engine.Pass}, Args: c.args}, c.kind)
		if (err != nil) != c.refuse {
			t.Errorf("kind %d %s: %v, want refused %v", c.kind, describe(c.args), err, c.refuse)
		}
	}
}
