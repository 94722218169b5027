package sqlfence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// stdConn is pgx's database/sql connection, embedded under a name that keeps its
// Conn method promoted.
type stdConn = stdlib.Conn

// trackedConn is a pgx connection whose Close is recorded.
type trackedConn struct {
	*stdConn
	closed atomic.Bool
}

func (c *trackedConn) Close() error {
	c.closed.Store(true)
	return c.stdConn.Close()
}

// trackingConnector hands out pgx connections of the connector in use (the DSN can
// be switched between servers) and keeps them, so a test can see which were closed.
type trackingConnector struct {
	inner atomic.Pointer[driver.Connector]
	mu    sync.Mutex
	conns []*trackedConn
}

func newTrackingConnector(t *testing.T, dsn string) *trackingConnector {
	c := &trackingConnector{}
	c.use(t, dsn)
	return c
}

func (c *trackingConnector) use(t *testing.T, dsn string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ic := stdlib.GetConnector(*cfg)
	c.inner.Store(&ic)
}

func (c *trackingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	ic, err := (*c.inner.Load()).Connect(ctx)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{stdConn: ic.(*stdlib.Conn)}
	c.mu.Lock()
	c.conns = append(c.conns, tc)
	c.mu.Unlock()
	return tc, nil
}

func (c *trackingConnector) Driver() driver.Driver { return (*c.inner.Load()).Driver() }

// last is the connection opened last.
func (c *trackingConnector) last() *trackedConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[len(c.conns)-1]
}

const historyPolicy = "version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n"

type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) observe(_ context.Context, e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) refused(code string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Outcome == OutcomeRefuse && e.Code == code {
			n++
		}
	}
	return n
}

// historyDB opens a fenced DB over a tracking connector to a fresh database, with one
// connection accepted already (the connector has seen the server's position).
func historyDB(t *testing.T) (*sql.DB, *connector, *trackingConnector, *eventLog, *sql.DB) {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := raw.ExecContext(ctx, `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE staging (n int)`); err != nil {
		t.Fatal(err)
	}
	tc := newTrackingConnector(t, dsn)
	log := &eventLog{}
	c, err := newConnector(tc, mustPolicy(t, historyPolicy), WithObserver(log.observe))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	return db, c, tc, log, raw
}

func wantCode(t *testing.T, what string, err error, code string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code || !errors.Is(err, ErrRefused) {
		t.Fatalf("%s: %v, want ErrRefused %s", what, err, code)
	}
	if errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("%s: the refusal is driver.ErrBadConn, which database/sql retries", what)
	}
	return e
}

// TestConnectRefusesOlderTimeline: once the connector has seen a newer timeline of
// the cluster (here taught synthetically: one real cluster has one timeline), a new
// connection to the real server, on timeline 1, is refused at connect with SF707 and
// closed, and no statement reaches it.
func TestConnectRefusesOlderTimeline(t *testing.T) {
	db, c, tc, log, raw := historyDB(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	seen := c.history.highest()
	if seen.Timeline != 1 || seen.LSN == 0 || c.history.system == "" {
		t.Fatalf("the connector learnt %+v (system %q) from its first session", seen, c.history.system)
	}
	// The promoted standby: same cluster, timeline 2.
	if err := c.history.admit(pgcatalog.Position{System: c.history.system, Timeline: 2, LSN: seen.LSN}); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // the next statement opens a connection
	_, err := db.ExecContext(ctx, `INSERT INTO staging VALUES (1)`)
	e := wantCode(t, "a connection to the old primary", err, rulecode.BehindHistory)
	for _, want := range []string{"primary on timeline 1 at", "behind timeline 2 at", "old primary", "Patroni's watchdog", "pg_rewind"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("the message does not say %q: %v", want, e)
		}
	}
	t.Log(e)
	if !tc.last().closed.Load() {
		t.Error("the refused connection was not closed")
	}
	if n := log.refused(rulecode.BehindHistory); n != 1 {
		t.Errorf("the observer heard %d SF707 refusals, want 1", n)
	}
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM staging`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("staging holds %d rows (%v): the statement reached the old primary", n, err)
	}
}

// TestConnectAdmitsPrimaryBehindWAL: a primary on the timeline seen, behind WAL a
// session of that timeline had read, is admitted: two sessions on one primary read
// its position in an order the connector cannot see (concurrent pools refused their
// own server before timelines alone were compared).
func TestConnectAdmitsPrimaryBehindWAL(t *testing.T) {
	db, c, _, _, _ := historyDB(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.history.admit(pgcatalog.Position{System: c.history.system, Timeline: 1, LSN: 1 << 60}); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatalf("a primary behind WAL read on its own timeline: %v", err)
	}
}

// TestSessionRefusedAfterNewerTimeline: a split brain — a session accepted on the
// primary of timeline 1 is refused from its next statement once the connector has
// seen timeline 2, the statement is not sent, and database/sql discards the
// connection rather than handing it out again.
func TestSessionRefusedAfterNewerTimeline(t *testing.T) {
	db, c, tc, log, raw := historyDB(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO staging VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := c.history.admit(pgcatalog.Position{System: c.history.system, Timeline: 2}); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, `INSERT INTO staging VALUES (2)`)
	e := wantCode(t, "the old primary's session after the promotion", err, rulecode.BehindHistory)
	if !strings.Contains(e.Error(), "since this session was opened") {
		t.Errorf("message: %v", e)
	}
	if _, err := conn.QueryContext(ctx, `SELECT 1`); err == nil {
		t.Error("the session answered a read after it was refused")
	}
	conn.Close()
	if got := db.Stats().OpenConnections; got != 0 {
		t.Errorf("%d connections open after the refused one was returned, want 0 (discarded)", got)
	}
	if !tc.last().closed.Load() {
		t.Error("the refused connection was not closed")
	}
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM staging`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("staging holds %d rows (%v), want the first insert only", n, err)
	}
	if log.refused(rulecode.BehindHistory) == 0 {
		t.Error("the observer heard no SF707")
	}
}

// TestSessionCheckOnePerConnection: the position is read once per connection, not
// per statement.
func TestSessionCheckOnePerConnection(t *testing.T) {
	dsn := pgtest.NewDB(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var positions atomic.Int32
	cfg.Tracer = tracerFunc(func(sql string) {
		if strings.Contains(sql, "pg_control_system") {
			positions.Add(1)
		}
	})
	p := mustPolicy(t, "version: 1\nresolve: none\ntables: [inventory]\n")
	db := sql.OpenDB(NewConnector(stdlib.GetConnector(*cfg), p))
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for range 5 {
		if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
			t.Fatal(err)
		}
	}
	if n := positions.Load(); n != 1 {
		t.Errorf("the position was read %d times on one connection, want once", n)
	}
}

type tracerFunc func(sql string)

func (f tracerFunc) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	f(d.SQL)
	return ctx
}

func (tracerFunc) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestConnectRefusesOtherCluster: a connector whose inner connector switches from one
// real cluster to another (a restore, a DSN pointed elsewhere) refuses the second
// cluster's sessions with SF708 and closes them, and goes on with the first's.
func TestConnectRefusesOtherCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	db, c, tc, log, _ := historyDB(t)
	dsnA := pgtest.NewDB(t) // on the same cluster as historyDB's
	other, err := pgtest.Start(ctx)
	if err != nil {
		if errors.Is(err, pgtest.ErrNoServer) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Stop() })
	otherDB, drop, err := pgtest.CreateDatabase(ctx, other.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer drop(context.WithoutCancel(ctx))
	raw, err := sql.Open("pgx", otherDB)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE staging (n int)`); err != nil {
		t.Fatal(err)
	}
	system := c.history.system

	db.SetMaxIdleConns(0)
	tc.use(t, otherDB)
	_, err = db.ExecContext(ctx, `INSERT INTO staging VALUES (1)`)
	e := wantCode(t, "a session on another cluster", err, rulecode.OtherCluster)
	for _, want := range []string{"another cluster", "system identifier " + system, "timeline 1 at", "new connector or pool"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("the message does not say %q: %v", want, e)
		}
	}
	t.Log(e)
	if !tc.last().closed.Load() {
		t.Error("the refused connection was not closed")
	}
	if log.refused(rulecode.OtherCluster) != 1 {
		t.Error("the observer did not hear the refusal once")
	}
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM staging`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the other cluster's staging holds %d rows (%v)", n, err)
	}
	if c.history.system != system {
		t.Fatalf("the refused session changed the history's system identifier to %q", c.history.system)
	}

	// Back on the first cluster (another database of it: the same system identifier).
	tc.use(t, dsnA)
	if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatalf("the first cluster again: %v", err)
	}
}
