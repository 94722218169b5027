// Package sqlfencemock runs sqlfence over go-sqlmock, for unit tests of code that
// writes protected tables: the test sets expectations on what sqlfence sends — the
// fenced text with the epoch as one more argument — without writing that text by hand.
//
//	db, mock, err := sqlfencemock.New(policy)
//	mock.ExpectFencedExec(`UPDATE inventory SET quantity = $2 WHERE sku = $1`, 7, "widget", 3).
//		WillReturnResult(sqlmock.NewResult(0, 1))
//	_, err = db.ExecContext(sqlfence.WithEpoch(ctx, 7), `UPDATE inventory SET quantity = $2 WHERE sku = $1`, "widget", 3)
//
// The fenced text comes from [sqlfence.Policy.Plan], the analysis the driver runs, so
// expectations follow sqlfence's rewrite as it changes. Statements sqlfence sends
// unchanged (reads, writes of unprotected tables) are expected with the mock's own
// ExpectExec and ExpectQuery, matched exactly ([sqlmock.QueryMatcherEqual]: the mock
// compares the text after collapsing whitespace, not as a regular expression).
//
// A fenced write that affects no rows makes sqlfence run one more query, the check
// that tells a fence from an ordinary empty result; [Mock.ExpectCheck] expects it and
// [CheckRows] / [NoMatchRows] answer it, and [Mock.ExpectFenced] expects both.
package sqlfencemock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/sqlfence/sqlfence"
)

// Mock is the go-sqlmock mock behind a fenced *sql.DB, with expectations for what
// sqlfence sends. Its embedded Sqlmock sets every other expectation.
type Mock struct {
	sqlmock.Sqlmock
	policy *sqlfence.Policy
}

// Option configures New.
type Option func(*config)

type config struct {
	converter driver.ValueConverter
	connOpts  []sqlfence.ConnectorOption
}

// WithValueConverter sets the mock's driver.ValueConverter
// (sqlmock.ValueConverterOption); the default is driver.DefaultParameterConverter.
func WithValueConverter(c driver.ValueConverter) Option {
	return func(cfg *config) { cfg.converter = c }
}

// WithConnectorOptions passes options to sqlfence.NewConnector.
func WithConnectorOptions(opts ...sqlfence.ConnectorOption) Option {
	return func(cfg *config) { cfg.connOpts = append(cfg.connOpts, opts...) }
}

// New returns a *sql.DB that fences every statement with policy and sends what
// sqlfence sends to a new go-sqlmock connection, and the mock to set expectations on.
// Like sqlfence.NewConnector, it panics on a policy that cannot fence (nil, or not
// from sqlfence.LoadPolicy or sqlfence.ParsePolicy).
func New(policy *sqlfence.Policy, opts ...Option) (*sql.DB, *Mock, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	c, mock, err := newConnector(cfg.converter)
	if err != nil {
		return nil, nil, err
	}
	db := sql.OpenDB(sqlfence.NewConnector(c, withoutCatalog(policy), cfg.connOpts...))
	return db, &Mock{Sqlmock: mock, policy: policy}, nil
}

// withoutCatalog is policy with resolve: none. A mock has no catalog: under
// resolve: catalog (the default) the connector's first connection would send the
// catalog queries, which no test expects, and answering them with made-up rows
// would test a database that does not exist. So the mock fences by the policy's
// names alone, as resolve: none does: what the catalog adds (partitions, views,
// triggers, the epoch column's existence) is for the tests against PostgreSQL.
// The connector logs this once, as it does for every resolve: none policy.
func withoutCatalog(policy *sqlfence.Policy) *sqlfence.Policy {
	if policy == nil {
		return nil // NewConnector panics on it, as documented
	}
	p := *policy // NewConnector takes its own checked copy; the caller's is not changed
	p.ResolveCatalog, p.CatalogRefresh = false, 0
	return &p
}

// NewConnector returns a driver.Connector whose connections are a new go-sqlmock
// connection, and its mock, for tests that make the sqlfence connector themselves:
//
//	c, mock, err := sqlfencemock.NewConnector()
//	db := sql.OpenDB(sqlfence.NewConnector(c, policy)) // policy with resolve: none
//
// The policy needs resolve: none: a mock cannot answer the catalog queries that
// resolve: catalog, the default, sends at the first connection (New sets it on its
// copy of the policy).
// Every connection the connector opens is the same mock connection, as with
// sqlmock.New. The mock matches SQL exactly (sqlmock.QueryMatcherEqual).
func NewConnector() (driver.Connector, sqlmock.Sqlmock, error) {
	return newConnector(nil)
}

var dsnSeq atomic.Int64

func newConnector(converter driver.ValueConverter) (*connector, sqlmock.Sqlmock, error) {
	dsn := fmt.Sprintf("sqlfencemock_%d", dsnSeq.Add(1))
	var mockDB *sql.DB
	var mock sqlmock.Sqlmock
	var err error
	if converter != nil {
		mockDB, mock, err = sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual), sqlmock.ValueConverterOption(converter))
	} else {
		mockDB, mock, err = sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	}
	if err != nil {
		return nil, nil, err
	}
	// go-sqlmock hands its connection out by DSN for as long as one is open: hold one
	// for the connector's lifetime, then close the *sql.DB go-sqlmock opened (its
	// pool goroutine would otherwise outlive the test). Neither close is a
	// connection close the test expects, so their errors are ignored.
	drv := mockDB.Driver()
	hold, err := drv.Open(dsn)
	mockDB.Close()
	if err != nil {
		return nil, nil, err
	}
	return &connector{dsn: dsn, drv: drv, hold: hold}, mock, nil
}

type connector struct {
	dsn  string
	drv  driver.Driver
	hold driver.Conn
}

var _ io.Closer = (*connector)(nil)

func (c *connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }

func (c *connector) Driver() driver.Driver { return c.drv }

// Close releases the mock connection (sql.DB.Close calls it through sqlfence's
// connector). It is not a connection close: it neither needs nor meets ExpectClose.
func (c *connector) Close() error {
	c.hold.Close()
	return nil
}

// plan returns the fenced plan for query, and panics when sqlfence would not fence
// it: an expectation for a statement sqlfence refuses or sends unchanged is a mistake
// in the test.
func (m *Mock) plan(helper, query string) sqlfence.Plan {
	p := m.policy.Plan(query)
	switch {
	case p.Err != nil:
		panic(fmt.Sprintf("sqlfencemock: %s: sqlfence refuses the statement, so it is never sent: %v", helper, p.Err))
	case p.Fenced == "":
		panic(fmt.Sprintf("sqlfencemock: %s: sqlfence sends %q unchanged (it writes no protected table); expect it with ExpectExec or ExpectQuery", helper, query))
	}
	return p
}

// Fenced returns the text sqlfence sends for query, with the fence inserted, and the
// parameter number that carries the epoch. It panics when sqlfence would not fence
// query.
func (m *Mock) Fenced(query string) (text string, epochParam int) {
	p := m.plan("Fenced", query)
	return p.Fenced, p.EpochParam
}

// ExpectFencedExec expects query, executed under epoch with args, as sqlfence sends
// it: the fenced text, with args and then the epoch. Set the result with
// WillReturnResult; a result of 0 rows makes sqlfence run the check next
// (ExpectCheck). It panics when sqlfence would not fence query.
func (m *Mock) ExpectFencedExec(query string, epoch int64, args ...driver.Value) *sqlmock.ExpectedExec {
	p := m.plan("ExpectFencedExec", query)
	return m.ExpectExec(p.Fenced).WithArgs(append(args, epoch)...)
}

// ExpectFencedQuery is ExpectFencedExec for a fenced write run through Query
// (RETURNING). Set the rows with WillReturnRows; no rows makes sqlfence run the check
// when the caller reaches the end of them.
func (m *Mock) ExpectFencedQuery(query string, epoch int64, args ...driver.Value) *sqlmock.ExpectedQuery {
	p := m.plan("ExpectFencedQuery", query)
	return m.ExpectQuery(p.Fenced).WithArgs(append(args, epoch)...)
}

// ExpectCheck expects the query sqlfence runs after the fenced query (run under
// epoch with args, the statement's own arguments) affected no rows: it selects the
// highest epoch stored on the rows the statement matches and how many of them the
// fence kept (Plan.Check), from those of args it needs and the epoch. Answer it with
// CheckRows or NoMatchRows. It panics when sqlfence has no check for query (it
// fences nothing, or is an upsert whose conflicting rows cannot be read back).
func (m *Mock) ExpectCheck(query string, epoch int64, args ...driver.Value) *sqlmock.ExpectedQuery {
	p := m.plan("ExpectCheck", query)
	if p.Check == "" {
		panic(fmt.Sprintf("sqlfencemock: ExpectCheck: sqlfence runs no check after %q", query))
	}
	checkArgs := make([]driver.Value, 0, len(p.CheckArgs)+1)
	for _, i := range p.CheckArgs {
		if i >= len(args) {
			panic(fmt.Sprintf("sqlfencemock: ExpectCheck: the check takes argument %d of the statement, and %d were given", i+1, len(args)))
		}
		checkArgs = append(checkArgs, args[i])
	}
	return m.ExpectQuery(p.Check).WithArgs(append(checkArgs, epoch)...)
}

// ExpectFenced expects query, executed under epoch with args, to affect no rows and
// the check to find stored as the highest epoch on the rows it matches: stored above
// epoch makes the caller see sqlfence.ErrFenced; stored equal to epoch on a strict
// table sqlfence.ErrAlreadyWritten.
func (m *Mock) ExpectFenced(query string, epoch, stored int64, args ...driver.Value) {
	m.ExpectFencedExec(query, epoch, args...).WillReturnResult(sqlmock.NewResult(0, 0))
	var fenced int64
	if stored > epoch {
		fenced = 1
	}
	m.ExpectCheck(query, epoch, args...).WillReturnRows(CheckRows(stored, fenced))
}

// CheckRows answers the check: stored is the highest epoch on the rows the statement
// matches, fenced how many of them hold an epoch the fence kept out (a newer one).
func CheckRows(stored, fenced int64) *sqlmock.Rows {
	return sqlmock.NewRows([]string{"max", "count"}).AddRow(stored, fenced)
}

// NoMatchRows answers the check when no row matches the statement: the write's 0 rows
// are then an ordinary result.
func NoMatchRows() *sqlmock.Rows {
	return sqlmock.NewRows([]string{"max", "count"}).AddRow(nil, int64(0))
}
