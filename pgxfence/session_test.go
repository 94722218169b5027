package pgxfence_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/pgxfence"
)

func wantRefused(t *testing.T, what string, err error, code string) {
	t.Helper()
	var e *sqlfence.Error
	if !errors.As(err, &e) || e.Code != code || !errors.Is(err, sqlfence.ErrRefused) {
		t.Fatalf("%s: %v, want ErrRefused %s", what, err, code)
	}
}

// drained waits for the pool to destroy its closed connections (pgxpool does it on a
// goroutine of its own) and returns how many it still holds.
func drained(pool *pgxpool.Pool) int32 {
	deadline := time.Now().Add(5 * time.Second)
	for pool.Stat().TotalConns() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return pool.Stat().TotalConns()
}

// positionReads counts the session checks the tracer saw.
func positionReads(sent []string) (n int, other []string) {
	for _, s := range sent {
		if strings.Contains(s, "pg_control_system") {
			n++
		} else {
			other = append(other, s)
		}
	}
	return n, other
}

// TestSessionSynchronousCommit: a pool whose sessions start with synchronous_commit
// off is refused on every path before anything is sent (BEGIN included), with SF709,
// and each refused connection is closed; a Conn stays refused without asking again.
func TestSessionSynchronousCommit(t *testing.T) {
	f := newFixture(t)
	ctx := timeout(t, context.Background())
	cfg := f.poolConfig(t, pgx.QueryExecModeCacheStatement)
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p, err := pgxfence.New(pool, policy(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	f.tr.take()
	for name, run := range map[string]func() error{
		"Exec":  func() error { _, err := p.Exec(ctx, `INSERT INTO staging (sku) VALUES ('x')`); return err },
		"Query": func() error { _, err := p.Query(ctx, `SELECT 1`); return err },
		"QueryRow": func() error {
			var n int
			return p.QueryRow(ctx, `SELECT 1`).Scan(&n)
		},
		"Begin": func() error { _, err := p.Begin(ctx); return err },
		"SendBatch": func() error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO staging (sku) VALUES ('x')`)
			return p.SendBatch(ctx, b).Close()
		},
		"CopyFrom": func() error {
			_, err := p.CopyFrom(ctx, pgx.Identifier{"staging"}, []string{"sku"}, pgx.CopyFromRows([][]any{{"x"}}))
			return err
		},
	} {
		wantRefused(t, name, run(), rulecode.SessionCommit)
		if n := drained(pool); n != 0 {
			t.Errorf("%s: %d connections left in the pool, want the refused one closed", name, n)
		}
		if n, other := positionReads(f.tr.take()); n != 1 || len(other) != 0 {
			t.Errorf("%s: sent %d position reads and %q, want the read alone", name, n, other)
		}
	}
	if got := f.state(t, `SELECT count(*)::text FROM staging WHERE sku = 'x'`); got != "0" {
		t.Fatalf("%s rows reached the server", got)
	}

	// A Conn: refused, and refused again without a second read.
	cc, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(context.Background())
	c, err := pgxfence.NewConn(cc, policy(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := c.Exec(ctx, `SELECT 1`)
		wantRefused(t, "Conn.Exec", err, rulecode.SessionCommit)
	}
	_, err = c.Begin(ctx)
	wantRefused(t, "Conn.Begin", err, rulecode.SessionCommit)
	if n, other := positionReads(f.tr.take()); n != 1 || len(other) != 0 {
		t.Errorf("Conn: sent %d position reads and %q, want one read", n, other)
	}
}

// TestSessionReadOncePerConnection: the position is read on a connection's first
// statement, once, whether it comes through the pool, a transaction or a batch.
func TestSessionReadOncePerConnection(t *testing.T) {
	f := newFixture(t)
	ctx := timeout(t, context.Background())
	cfg := f.poolConfig(t, pgx.QueryExecModeCacheStatement)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p, err := pgxfence.New(pool, policy(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	// A second fence over the same pool checks against its own history.
	p2, err := pgxfence.New(pool, policy(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	f.tr.take()
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sent := f.tr.take()
	if n, _ := positionReads(sent); n != 1 || !strings.Contains(sent[0], "pg_control_system") {
		t.Fatalf("sent %q, want the position read first, once", sent)
	}
	for range 3 {
		if _, err := p.Exec(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(`SELECT 1`)
		if err := p.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := positionReads(f.tr.take()); n != 0 {
		t.Errorf("the position was read %d more times on a checked connection", n)
	}
	if _, err := p2.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	if n, _ := positionReads(f.tr.take()); n != 1 {
		t.Errorf("the second fence read the position %d times, want once", n)
	}
}

// TestPoolRefusesOtherCluster: a pool whose connections move to another cluster
// (BeforeConnect points them there: a DSN changed, a restore) refuses them with SF708
// and closes them, and goes on once they come back.
func TestPoolRefusesOtherCluster(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	other, err := pgtest.Start(ctx)
	if err != nil {
		if errors.Is(err, pgtest.ErrNoServer) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Stop() })
	otherCfg, err := pgx.ParseConfig(other.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.poolConfig(t, pgx.QueryExecModeCacheStatement)
	var elsewhere atomic.Bool
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		if elsewhere.Load() {
			cc.Host, cc.Port, cc.Database, cc.User, cc.Password = otherCfg.Host, otherCfg.Port, otherCfg.Database, otherCfg.User, otherCfg.Password
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p, err := pgxfence.New(pool, policy(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	elsewhere.Store(true)
	pool.Reset()
	_, err = p.Exec(ctx, `SELECT 1`)
	wantRefused(t, "a connection to another cluster", err, rulecode.OtherCluster)
	if n := drained(pool); n != 0 {
		t.Errorf("%d connections left in the pool, want the refused one closed", n)
	}
	elsewhere.Store(false)
	pool.Reset()
	if _, err := p.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatalf("back on the first cluster: %v", err)
	}
}
