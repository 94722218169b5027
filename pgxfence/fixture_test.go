package pgxfence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtest"
	"github.com/sqlfence/sqlfence/pgxfence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const schema = `
CREATE TABLE inventory (
	sku          text PRIMARY KEY,
	quantity     int NOT NULL,
	note         text,
	writer_epoch bigint NOT NULL DEFAULT 0
);
CREATE TABLE staging (sku text, q int, n text, gone bool NOT NULL DEFAULT false);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int PRIMARY KEY, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE reports (id serial PRIMARY KEY, body text, fence_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE audit (sku text);
CREATE TABLE jobs (id int PRIMARY KEY, status text NOT NULL DEFAULT 'pending', lease_epoch bigint NOT NULL DEFAULT 0, lease_expires_at timestamptz);
INSERT INTO jobs (id, lease_epoch) VALUES (1, 7);
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('a', 10, 5), ('b', 20, 5);
INSERT INTO staging (sku, q, n, gone) VALUES ('a', 1, 'n', false), ('b', 0, 'n', true), ('c', 3, 'n', false);
INSERT INTO billing.invoices (id, total, writer_epoch) VALUES (1, 100, 5);
`

const inventoryState = `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`

// timeout bounds every statement a test sends.
func timeout(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func policy(t testing.TB, yaml string) *sqlfence.Policy {
	t.Helper()
	if yaml == "" {
		p, err := sqlfence.LoadPolicy("../testdata/sqlfence.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := sqlfence.ParsePolicy([]byte(yaml), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tracer records the text of every statement pgx sends.
type tracer struct {
	mu   sync.Mutex
	sent []string
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	tr.sent = append(tr.sent, d.SQL)
	tr.mu.Unlock()
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *tracer) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := tr.sent
	tr.sent = nil
	return s
}

// fixture is one test database seeded with rows written at epoch 5: raw is a plain
// pgx pool on it, for arranging and inspecting data behind sqlfence's back.
type fixture struct {
	dsn string
	raw *pgxpool.Pool
	tr  *tracer
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dsn := pgtest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(raw.Close)
	if _, err := raw.Exec(ctx, schema); err != nil {
		t.Fatal(err)
	}
	return &fixture{dsn: dsn, raw: raw, tr: &tracer{}}
}

// poolConfig is the pool configuration for the fenced side, traced, in mode.
func (f *fixture) poolConfig(t testing.TB, mode pgx.QueryExecMode) *pgxpool.Config {
	cfg, err := pgxpool.ParseConfig(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = f.tr
	cfg.ConnConfig.DefaultQueryExecMode = mode
	return cfg
}

func (f *fixture) pool(t testing.TB, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) *pgxfence.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, f.poolConfig(t, mode))
	if err != nil {
		t.Fatal(err)
	}
	fp, err := pgxfence.New(pool, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fp.Close)
	return fp
}

func (f *fixture) conn(t testing.TB, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) *pgxfence.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := f.poolConfig(t, mode).ConnConfig
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := pgxfence.NewConn(c, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fc.Close(context.Background()) })
	return fc
}

func (f *fixture) state(t testing.TB, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var s *string
	if err := f.raw.QueryRow(ctx, query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if s == nil {
		return ""
	}
	return *s
}

func (f *fixture) exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := f.raw.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// DBTX is what sqlc's pgx/v5 output accepts, and what the tests drive: Pool, Conn
// and the Tx they begin all are one.
type DBTX interface {
	Exec(context.Context, string, ...interface{}) (pgconn.CommandTag, error)
	Query(context.Context, string, ...interface{}) (pgx.Rows, error)
	QueryRow(context.Context, string, ...interface{}) pgx.Row
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}

// front is one way to reach the database through pgxfence: open returns the DBTX
// and a function that ends it (a transaction's commit).
type front struct {
	name string
	open func(t *testing.T, f *fixture, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) (DBTX, func() error)
}

var fronts = []front{
	{"pool", func(t *testing.T, f *fixture, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) (DBTX, func() error) {
		return f.pool(t, p, mode, opts...), func() error { return nil }
	}},
	{"conn", func(t *testing.T, f *fixture, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) (DBTX, func() error) {
		return f.conn(t, p, mode, opts...), func() error { return nil }
	}},
	{"pool tx", func(t *testing.T, f *fixture, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) (DBTX, func() error) {
		return begin(t, f.pool(t, p, mode, opts...))
	}},
	{"conn savepoint", func(t *testing.T, f *fixture, p *sqlfence.Policy, mode pgx.QueryExecMode, opts ...sqlfence.ConnectorOption) (DBTX, func() error) {
		outer, end := begin(t, f.conn(t, p, mode, opts...))
		inner, endInner := begin(t, outer.(pgx.Tx))
		return inner, func() error {
			if err := endInner(); err != nil {
				return err
			}
			return end()
		}
	}},
}

func begin(t *testing.T, b interface {
	Begin(context.Context) (pgx.Tx, error)
}) (DBTX, func() error) {
	t.Helper()
	ctx := timeout(t, context.Background())
	tx, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	return tx, func() error { return tx.Commit(ctx) }
}
