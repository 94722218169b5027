package pgxfence_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

var modes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol,
}

// wire records the protocol messages a connection sends, as pgproto3 traces them.
type wire struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wire) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *wire) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.buf.String()
	w.buf.Reset()
	return s
}

// TestExecModes: every exec mode, as the call's option and as the connection's
// default, fences on the bytes the server receives: the fenced text in a Parse
// message with the arguments apart from it, never a simple-protocol Query message
// with the arguments put into the text on the client (a statement without arguments
// goes in one, with the epoch sqlfence wrote in as a literal).
func TestExecModes(t *testing.T) {
	p := policy(t, "")
	for _, mode := range modes {
		for _, perCall := range []bool{false, true} {
			name := mode.String()
			if perCall {
				name += "/per call"
			} else {
				name += "/default"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				w := &wire{}
				cfg := f.poolConfig(t, pgx.QueryExecModeCacheStatement).ConnConfig
				if !perCall {
					cfg.DefaultQueryExecMode = mode
				}
				ctx := timeout(t, context.Background())
				c, err := pgx.ConnectConfig(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close(ctx)
				c.PgConn().Frontend().Trace(w, pgproto3.TracerOptions{SuppressTimestamps: true})
				d, err := pgxfence.NewConn(c, p)
				if err != nil {
					t.Fatal(err)
				}
				args := func(a ...any) []any {
					if perCall {
						return append([]any{mode}, a...)
					}
					return a
				}
				const stmt = `UPDATE inventory SET quantity = $2 WHERE sku = $1`
				if _, err := d.Exec(sqlfence.WithEpoch(ctx, 3), stmt, args("a", 1)...); !errors.Is(err, sqlfence.ErrFenced) {
					t.Fatalf("stale Exec: %v", err)
				}
				if _, err := d.Exec(sqlfence.WithEpoch(ctx, 7), stmt, args("a", 2)...); err != nil {
					t.Fatalf("fresh Exec: %v", err)
				}
				var q int
				if err := d.QueryRow(sqlfence.WithEpoch(ctx, 8), stmt+` RETURNING quantity`, args("b", 3)...).Scan(&q); err != nil || q != 3 {
					t.Fatalf("fresh QueryRow: %d, %v", q, err)
				}
				rows, err := d.Query(sqlfence.WithEpoch(ctx, 3), stmt+` RETURNING quantity`, args("b", 4)...)
				if err != nil {
					t.Fatal(err)
				}
				rows.Close()
				if !errors.Is(rows.Err(), sqlfence.ErrFenced) {
					t.Fatalf("stale Query: %v", rows.Err())
				}
				// A statement without arguments of its own is fenced all the same.
				if _, err := d.Exec(sqlfence.WithEpoch(ctx, 9), `UPDATE inventory SET note = 'n' WHERE sku = 'a'`, args()...); err != nil {
					t.Fatalf("fresh Exec without arguments: %v", err)
				}
				if got := f.state(t, inventoryState); got != "a:2:9 b:3:8" {
					t.Fatalf("data %q", got)
				}
				sent := w.take()
				for _, line := range strings.Split(sent, "\n") {
					// Only the statement without arguments goes in a Query message, as pgx
					// sends such a text: with the epoch written in, and nothing put into
					// the text on the client.
					if strings.Contains(line, "\tQuery\t") && strings.Contains(line, "inventory") &&
						(!strings.Contains(line, "SET note = 'n', writer_epoch = 9::bigint") || strings.Contains(line, "$")) {
						t.Fatalf("a write went out in the simple protocol: %s", line)
					}
				}
				if n := strings.Count(sent, "sqlfence fenced"); n < 3 {
					t.Fatalf("%d fenced texts on the wire, want at least 3 (one per distinct text):\n%s", n, sent)
				}
			})
		}
	}
}

// TestResultFormats: QueryResultFormats and QueryResultFormatsByOID reach pgx with
// the fenced statement.
func TestResultFormats(t *testing.T) {
	f := newFixture(t)
	d := f.conn(t, policy(t, ""), pgx.QueryExecModeCacheStatement)
	ctx := sqlfence.WithEpoch(timeout(t, context.Background()), 7)
	for _, opt := range []any{pgx.QueryResultFormats{pgx.TextFormatCode}, pgx.QueryResultFormatsByOID{pgtype.Int4OID: pgx.TextFormatCode}} {
		rows, err := d.Query(ctx, `UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'a' RETURNING quantity`, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatalf("%T: no row: %v", opt, rows.Err())
		}
		if raw := string(rows.RawValues()[0]); raw != "11" && raw != "12" {
			t.Fatalf("%T: raw value %q, want the text format", opt, raw)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		ctx = sqlfence.WithEpoch(ctx, 8) // strict mode: one write per row per epoch
	}
}
