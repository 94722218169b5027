package pgxfence

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// staleFence is the real Fence whose session checks turn stale on demand, as they do
// once the connector sees a newer timeline than a session's primary (a promotion
// cannot be staged on one throwaway cluster; the root package tests the history
// itself).
type staleFence struct {
	front.Fence
	stale atomic.Bool
	reads atomic.Int32
}

func (s *staleFence) Session(ctx context.Context, q front.Querier, conn *pgx.Conn) (func() error, *engine.Defaults, error) {
	s.reads.Add(1)
	chk, def, err := s.Fence.Session(ctx, q, conn)
	if err != nil {
		return nil, nil, err
	}
	return func() error {
		if s.stale.Load() {
			return &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.BehindHistory, Reason: "a newer timeline was seen"}
		}
		if chk != nil {
			return chk()
		}
		return nil
	}, def, nil
}

// TestStaleSessionClosed: a pool's connection whose check turns stale is refused from
// its next statement, which is not sent, and closed; a Conn stays refused.
func TestStaleSessionClosed(t *testing.T) {
	dsn := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := sqlfence.ParsePolicy([]byte("version: 1\nresolve: none\ntables: [inventory]\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	real, err := front.Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	sf := &staleFence{Fence: real}
	fe := &fence{f: sf, mode: pgx.QueryExecModeCacheStatement, key: "test/session"}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE staging (n int)`); err != nil {
		t.Fatal(err)
	}
	fp := &Pool{pool: pool, fe: fe}
	if _, err := fp.Exec(ctx, `INSERT INTO staging VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	sf.stale.Store(true)
	_, err = fp.Exec(ctx, `INSERT INTO staging VALUES (2)`)
	var e *sqlfence.Error
	if !errors.As(err, &e) || e.Code != rulecode.BehindHistory {
		t.Fatalf("after the check turned stale: %v, want SF707", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pool.Stat().TotalConns() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := pool.Stat().TotalConns(); n != 0 {
		t.Errorf("%d connections in the pool, want the stale one closed", n)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM staging`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("staging holds %d rows (%v), want 1", n, err)
	}
	if r := sf.reads.Load(); r != 1 {
		t.Errorf("%d session reads, want 1 (the connection checked once)", r)
	}

	cc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(context.Background())
	sf.stale.Store(false)
	c := &Conn{conn: cc, status: cc.PgConn().ParameterStatus, fe: fe}
	if _, err := c.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	sf.stale.Store(true)
	for range 2 {
		if _, err := c.Exec(ctx, `SELECT 1`); !errors.As(err, &e) || e.Code != rulecode.BehindHistory {
			t.Fatalf("Conn after the check turned stale: %v", err)
		}
	}
	sf.stale.Store(false)
	if _, err := c.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a refused Conn was used again")
	}
}

// TestSessionReadFailureRetried: a failed read is not a refusal: the next statement
// reads again.
func TestSessionReadFailureRetried(t *testing.T) {
	dsn := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close(context.Background())
	ff := &failingFence{}
	fe := &fence{f: ff, key: "test/fail"}
	tg := target{conn: cc, run: cc}
	for range 2 {
		if _, err := fe.session(ctx, tg); err == nil {
			t.Fatal("no error")
		}
	}
	if ff.calls != 2 {
		t.Fatalf("%d reads, want 2", ff.calls)
	}
}

type failingFence struct {
	front.Fence
	calls int
}

func (f *failingFence) Session(context.Context, front.Querier, *pgx.Conn) (func() error, *engine.Defaults, error) {
	f.calls++
	return nil, nil, errors.New("connection reset")
}
