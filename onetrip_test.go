package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// TestOneTripWithoutArguments: a fenced statement the application sends without
// arguments (values inlined, as bun does) goes out in one round trip and leaves no
// prepared statement on the server, as it would without sqlfence — and is fenced the
// same: a stale epoch changes nothing, no epoch is refused, a fresh one writes.
func TestOneTripWithoutArguments(t *testing.T) {
	f := newFixture(t, "testdata/sqlfence.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := f.fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 5 {
		q := fmt.Sprintf(`UPDATE inventory SET quantity = %d WHERE sku = 'a'`, 100+i)
		if _, err := conn.ExecContext(sqlfence.WithEpoch(ctx, 3), q); !errors.Is(err, sqlfence.ErrFenced) {
			t.Fatalf("stale epoch: err = %v, want ErrFenced", err)
		}
		if _, err := conn.ExecContext(ctx, q); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("no epoch: err = %v, want ErrUnfenced", err)
		}
		res, err := conn.ExecContext(sqlfence.WithEpoch(ctx, int64(10+i)), q)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("fresh epoch: %d rows affected, want 1", n)
		}
	}
	var prepared string
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(string_agg(statement, ' | '), '') FROM pg_prepared_statements WHERE statement LIKE '%UPDATE ' || 'inventory%'`).Scan(&prepared); err != nil {
		t.Fatal(err)
	}
	if prepared != "" {
		t.Errorf("prepared statements left on the server for fenced statements sent without arguments: %s", prepared)
	}
	if got, want := f.state(t, `SELECT quantity || ' ' || writer_epoch FROM inventory WHERE sku = 'a'`), "104 14"; got != want {
		t.Errorf("row a = %q, want %q", got, want)
	}
}

// literalTracer records what pgx is asked to send: the text and how many arguments.
type literalTracer struct {
	mu   sync.Mutex
	sent []string
}

func (tr *literalTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	tr.sent = append(tr.sent, fmt.Sprintf("%d %s", len(d.Args), d.SQL))
	tr.mu.Unlock()
	return ctx
}

func (tr *literalTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// last is the last statement sent that is not one of sqlfence's own queries (the
// checks after a write).
func (tr *literalTracer) last() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for i := len(tr.sent) - 1; i >= 0; i-- {
		if !strings.Contains(tr.sent[i], " SELECT pg_catalog.") {
			return tr.sent[i]
		}
	}
	return ""
}

// TestLiteralEpoch: a fenced statement sent without arguments goes to pgx with the
// epoch written in as a literal and no argument (so pgx sends it in the simple
// protocol, as it sends the application's own text), at every epoch up to int64's
// largest, across the 32-bit bound where the literal's token changes, and judged on
// the data: a stale epoch changes nothing, a fresh one writes. Texts that try to get
// a $1 or a comment past it, and epochs that are not positive, are refused or kept
// intact as the parameterised path would.
func TestLiteralEpoch(t *testing.T) {
	dsn, raw := newRawDB(t, schema)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	tr := &literalTracer{}
	cfg.Tracer = tr
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p))
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	state := func() string {
		var s string
		if err := raw.QueryRowContext(ctx, `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch || ':' || coalesce(note, '-'), ' ' ORDER BY sku) FROM inventory`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const q = `UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'a'`
	steps := []struct {
		epoch int64
		err   error  // nil: one row written
		state string // after the step
	}{
		{9, nil, "a:11:9:- b:20:5:-"},
		{9, sqlfence.ErrAlreadyWritten, "a:11:9:- b:20:5:-"}, // strict: the same epoch again
		{8, sqlfence.ErrFenced, "a:11:9:- b:20:5:-"},
		{math.MaxInt32, nil, "a:12:2147483647:- b:20:5:-"},
		{math.MaxInt32, sqlfence.ErrAlreadyWritten, "a:12:2147483647:- b:20:5:-"},
		{math.MaxInt32 + 1, nil, "a:13:2147483648:- b:20:5:-"},
		{math.MaxInt32, sqlfence.ErrFenced, "a:13:2147483648:- b:20:5:-"}, // the int32 literal's side again
		{1 << 40, nil, "a:14:1099511627776:- b:20:5:-"},
		{math.MaxInt64 - 1, nil, "a:15:9223372036854775806:- b:20:5:-"},
		{math.MaxInt64, nil, "a:16:9223372036854775807:- b:20:5:-"},
		{math.MaxInt64 - 1, sqlfence.ErrFenced, "a:16:9223372036854775807:- b:20:5:-"},
		{1, sqlfence.ErrFenced, "a:16:9223372036854775807:- b:20:5:-"},
		{0, sqlfence.ErrUnfenced, "a:16:9223372036854775807:- b:20:5:-"},
		{-1, sqlfence.ErrUnfenced, "a:16:9223372036854775807:- b:20:5:-"},
		{math.MinInt64, sqlfence.ErrUnfenced, "a:16:9223372036854775807:- b:20:5:-"},
	}
	for _, s := range steps {
		before := tr.last()
		res, err := db.ExecContext(sqlfence.WithEpoch(ctx, s.epoch), q)
		switch {
		case s.err == nil && err != nil:
			t.Fatalf("epoch %d: %v", s.epoch, err)
		case s.err == nil:
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("epoch %d: %d rows affected", s.epoch, n)
			}
		case !errors.Is(err, s.err):
			t.Fatalf("epoch %d: err = %v, want %v", s.epoch, err, s.err)
		}
		if got := state(); got != s.state {
			t.Fatalf("epoch %d: data %q, want %q", s.epoch, got, s.state)
		}
		sent := tr.last()
		if s.epoch <= 0 {
			if sent != before {
				t.Fatalf("epoch %d: sent %s", s.epoch, sent)
			}
			continue
		}
		digits := strconv.FormatInt(s.epoch, 10)
		if want := "0 /*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = quantity + 1, writer_epoch = " + digits +
			"::bigint WHERE (sku = 'a') AND inventory.writer_epoch OPERATOR(pg_catalog.<) " + digits + "::bigint"; sent != want {
			t.Fatalf("epoch %d: pgx was asked to send\n%s\nwant\n%s", s.epoch, sent, want)
		}
	}

	// $1 with no argument for it is refused before anything is sent; a $1 in a string,
	// a comment or a dollar-quoted string is text, and stays as written.
	before := tr.last()
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, math.MaxInt64), `UPDATE inventory SET quantity = $1 WHERE sku = 'b'`); !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("$1 without an argument: %v", err)
	}
	if tr.last() != before {
		t.Fatalf("sent %s", tr.last())
	}
	// inventory b is at epoch 5: write it at 6, with $1 in every place the scanner
	// reads as something other than a parameter; the literal is made, and what the
	// strings hold arrives unchanged.
	tricky := "UPDATE inventory SET note = '$1::bigint' || $$$1::bigint$$ || e'\\'$1::bigint' /*$1::bigint*/ WHERE sku = 'b' --$1::bigint\n"
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 6), tricky); err != nil {
		t.Fatal(err)
	}
	if got, want := state(), `a:16:9223372036854775807:- b:20:6:$1::bigint$1::bigint'$1::bigint`; got != want {
		t.Fatalf("data %q, want %q", got, want)
	}
	if sent := tr.last(); !strings.HasPrefix(sent, "0 ") || !strings.Contains(sent, "writer_epoch = 6::bigint") || strings.Count(sent, "$1::bigint") != 5 {
		t.Fatalf("sent %s", sent)
	}
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 5), tricky); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale epoch: %v", err)
	}
	// The fence's own bytes after a space inside a string: the epoch stays a
	// parameter (still one round trip, QueryExecModeExec), and the string arrives.
	spaced := `UPDATE inventory SET note = ' $1::bigint' WHERE sku = 'b'`
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 7), spaced); err != nil {
		t.Fatal(err)
	}
	if got, want := state(), `a:16:9223372036854775807:- b:20:7: $1::bigint`; got != want {
		t.Fatalf("data %q, want %q", got, want)
	}
	if sent := tr.last(); !strings.HasPrefix(sent, "2 ") || strings.Count(sent, "$1::bigint") != 3 { // the exec mode and the epoch
		t.Fatalf("sent %s", sent)
	}

	// With an argument, or through Query, the epoch stays a parameter.
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 8), `UPDATE inventory SET quantity = $1 WHERE sku = 'b'`, 1); err != nil {
		t.Fatal(err)
	}
	if sent := tr.last(); !strings.HasPrefix(sent, "2 ") || !strings.Contains(sent, "$2::bigint") {
		t.Fatalf("with an argument, sent %s", sent)
	}
	rows, err := db.QueryContext(sqlfence.WithEpoch(ctx, 9), `UPDATE inventory SET quantity = 2 WHERE sku = 'b' RETURNING sku`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if sent := tr.last(); strings.HasPrefix(sent, "0 ") || !strings.Contains(sent, "$1::bigint") {
		t.Fatalf("through Query, sent %s", sent)
	}
}

// TestLiteralEpochGuard: with the database's guard installed, a fenced statement
// sent without arguments (the epoch written in as a literal) passes the guard at
// int64's largest epoch, a stale one changes nothing, and the same literal text sent
// by a session the driver did not open is rejected by the guard.
func TestLiteralEpochGuard(t *testing.T) {
	dsn, raw := newRawDB(t, schema)
	const policy = "version: 1\nepoch_column: writer_epoch\ntables:\n  - name: inventory\n"
	if err := atkInstallGuard(dsn, policy); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sqlfence.yaml")
	if err := os.WriteFile(path, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := sqlfence.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	tr := &literalTracer{}
	cfg.Tracer = tr
	cfg.RuntimeParams[sqlfence.GuardSetting] = "on" // as the registered driver's startup message
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p))
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const q = `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, math.MaxInt64), q); err != nil {
		t.Fatalf("fenced write under the guard: %v", err)
	}
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, math.MaxInt64-1), q); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale epoch under the guard: %v", err)
	}
	sent, ok := strings.CutPrefix(tr.last(), "0 ")
	if !ok || !strings.HasPrefix(sent, "/*sqlfence fenced: @") || !strings.Contains(sent, "9223372036854775806::bigint") {
		t.Fatalf("sent %q", tr.last())
	}
	var pe *pgconn.PgError
	if _, err := raw.ExecContext(ctx, strings.ReplaceAll(sent, "9223372036854775806", "9223372036854775807")); !errors.As(err, &pe) || pe.Code != "SF001" {
		t.Fatalf("the literal text past the driver: %v, want the guard's SF001", err)
	}
	var state string
	if err := raw.QueryRowContext(ctx, `SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'a'`).Scan(&state); err != nil || state != "1:9223372036854775807" {
		t.Fatalf("row a = %q, %v", state, err)
	}
}
