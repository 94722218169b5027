package sqlfence_test

// The recording fake driver the mock tests stand behind sqlfence.NewConnector, and
// their helpers. fullConn implements every optional interface database/sql knows;
// bareConn implements driver.Conn and nothing else.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// ---- the recording fake ----

// rec is one call that reached the inner driver.
type rec struct {
	op    string // "exec", "query", "prepare", "stmt.exec", "stmt.query", "begin", ...
	query string
	args  []driver.NamedValue
	opts  driver.TxOptions
}

func (r rec) String() string {
	var b strings.Builder
	b.WriteString(r.op)
	if r.query != "" {
		fmt.Fprintf(&b, " %q", r.query)
	}
	for _, a := range r.args {
		fmt.Fprintf(&b, " [%d %q %#v]", a.Ordinal, a.Name, a.Value)
	}
	return b.String()
}

// recorder is shared by a fake connector and everything it creates. reply scripts the
// answers; the default answers one affected row to every exec and one row to every
// query.
type recorder struct {
	mu       sync.Mutex
	calls    []rec
	connects int
	valid    bool
	reply    func(op, query string, args []driver.NamedValue) (any, error) // driver.Result, *fakeRows or nil
}

func newRecorder() *recorder { return &recorder{valid: true} }

func (r *recorder) log(c rec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c.args = slices.Clone(c.args)
	r.calls = append(r.calls, c)
}

func (r *recorder) answer(op, query string, args []driver.NamedValue) (any, error) {
	r.log(rec{op: op, query: query, args: args})
	if r.reply != nil {
		if v, err := r.reply(op, query, args); v != nil || err != nil {
			return v, err
		}
	}
	if strings.HasSuffix(op, "exec") {
		return driver.RowsAffected(1), nil
	}
	return &fakeRows{cols: []string{"x"}, data: [][]driver.Value{{int64(1)}}}, nil
}

// statements returns the calls that send SQL or run a prepared statement, leaving out
// the housekeeping (CheckNamedValue, ResetSession, IsValid, Close).
func (r *recorder) statements() []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rec
	for _, c := range r.calls {
		switch c.op {
		case "exec", "query", "prepare", "stmt.exec", "stmt.query":
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) ops(names ...string) []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rec
	for _, c := range r.calls {
		if slices.Contains(names, c.op) {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) connections() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connects
}

func (r *recorder) all() []rec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// fakeRows is a scripted result, with an optional next result set and column types.
type fakeRows struct {
	r     *recorder
	cols  []string
	data  [][]driver.Value
	next  *fakeRows
	types []fakeType
}

type fakeType struct {
	scan            reflect.Type
	name            string
	length          int64
	nullable        bool
	precision, frac int64
}

func (f *fakeRows) Columns() []string { return f.cols }
func (f *fakeRows) Close() error {
	if f.r != nil {
		f.r.log(rec{op: "rows.close"})
	}
	return nil
}

func (f *fakeRows) Next(dest []driver.Value) error {
	if len(f.data) == 0 {
		return io.EOF
	}
	copy(dest, f.data[0])
	f.data = f.data[1:]
	return nil
}

// fullRows adds every optional Rows interface to fakeRows.
type fullRows struct{ *fakeRows }

func (f *fullRows) HasNextResultSet() bool { return f.next != nil }
func (f *fullRows) NextResultSet() error {
	if f.next == nil {
		return io.EOF
	}
	*f.fakeRows = *f.next
	return nil
}
func (f *fullRows) ColumnTypeScanType(i int) reflect.Type   { return f.types[i].scan }
func (f *fullRows) ColumnTypeDatabaseTypeName(i int) string { return f.types[i].name }
func (f *fullRows) ColumnTypeLength(i int) (int64, bool)    { return f.types[i].length, true }
func (f *fullRows) ColumnTypeNullable(i int) (bool, bool)   { return f.types[i].nullable, true }
func (f *fullRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return f.types[i].precision, f.types[i].frac, true
}

var (
	_ driver.RowsNextResultSet              = (*fullRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*fullRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*fullRows)(nil)
	_ driver.RowsColumnTypeLength           = (*fullRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*fullRows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*fullRows)(nil)
)

// special is an argument type database/sql's default converter rejects; only the
// fake's NamedValueChecker accepts it.
type special struct{ v string }

var paramRE = regexp.MustCompile(`\$(\d+)`)

// numInput is what a PostgreSQL driver reports: the highest $n in the text.
func numInput(query string) int {
	n := 0
	for _, m := range paramRE.FindAllStringSubmatch(query, -1) {
		if k, _ := strconv.Atoi(m[1]); k > n {
			n = k
		}
	}
	return n
}

// ---- fullConn: every optional interface ----

type fullConnector struct{ r *recorder }

func (c *fullConnector) Connect(context.Context) (driver.Conn, error) {
	c.r.mu.Lock()
	c.r.connects++
	c.r.mu.Unlock()
	c.r.log(rec{op: "connect"})
	return &fullConn{r: c.r}, nil
}
func (c *fullConnector) Driver() driver.Driver { return fakeDriver{} }
func (c *fullConnector) Close() error {
	c.r.log(rec{op: "connector.close"})
	return nil
}

type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("fake: use the connector")
}

type fullConn struct{ r *recorder }

var (
	_ driver.Conn               = (*fullConn)(nil)
	_ driver.ConnBeginTx        = (*fullConn)(nil)
	_ driver.ConnPrepareContext = (*fullConn)(nil)
	_ driver.ExecerContext      = (*fullConn)(nil)
	_ driver.QueryerContext     = (*fullConn)(nil)
	_ driver.Pinger             = (*fullConn)(nil)
	_ driver.SessionResetter    = (*fullConn)(nil)
	_ driver.Validator          = (*fullConn)(nil)
	_ driver.NamedValueChecker  = (*fullConn)(nil)
	_ io.Closer                 = (*fullConnector)(nil)
)

func (c *fullConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}
func (c *fullConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	c.r.log(rec{op: "prepare", query: query})
	if c.r.reply != nil {
		if _, err := c.r.reply("prepare", query, nil); err != nil {
			return nil, err
		}
	}
	return &fullStmt{r: c.r, query: query}, nil
}
func (c *fullConn) Close() error {
	c.r.log(rec{op: "close"})
	return nil
}
func (c *fullConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c *fullConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.r.log(rec{op: "begin", opts: opts})
	return &fakeTx{r: c.r}, nil
}
func (c *fullConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	v, err := c.r.answer("exec", query, args)
	if err != nil {
		return nil, err
	}
	return v.(driver.Result), nil
}
func (c *fullConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	v, err := c.r.answer("query", query, args)
	if err != nil {
		return nil, err
	}
	rows := v.(*fakeRows)
	rows.r = c.r
	return &fullRows{rows}, nil
}
func (c *fullConn) Ping(context.Context) error {
	c.r.log(rec{op: "ping"})
	if c.r.reply != nil {
		_, err := c.r.reply("ping", "", nil)
		return err
	}
	return nil
}
func (c *fullConn) ResetSession(context.Context) error {
	c.r.log(rec{op: "reset"})
	return nil
}
func (c *fullConn) IsValid() bool {
	c.r.log(rec{op: "valid"})
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.r.valid
}
func (c *fullConn) CheckNamedValue(nv *driver.NamedValue) error {
	c.r.log(rec{op: "check", args: []driver.NamedValue{*nv}})
	if _, ok := nv.Value.(special); ok {
		return nil
	}
	return driver.ErrSkip
}

type fullStmt struct {
	r     *recorder
	query string
}

var (
	_ driver.StmtExecContext  = (*fullStmt)(nil)
	_ driver.StmtQueryContext = (*fullStmt)(nil)
)

func (s *fullStmt) Close() error {
	s.r.log(rec{op: "stmt.close", query: s.query})
	return nil
}
func (s *fullStmt) NumInput() int { return numInput(s.query) }
func (s *fullStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), toNamed(args))
}
func (s *fullStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), toNamed(args))
}
func (s *fullStmt) ExecContext(_ context.Context, args []driver.NamedValue) (driver.Result, error) {
	v, err := s.r.answer("stmt.exec", s.query, args)
	if err != nil {
		return nil, err
	}
	return v.(driver.Result), nil
}
func (s *fullStmt) QueryContext(_ context.Context, args []driver.NamedValue) (driver.Rows, error) {
	v, err := s.r.answer("stmt.query", s.query, args)
	if err != nil {
		return nil, err
	}
	rows := v.(*fakeRows)
	rows.r = s.r
	return &fullRows{rows}, nil
}

type fakeTx struct{ r *recorder }

func (t *fakeTx) Commit() error {
	t.r.log(rec{op: "commit"})
	return nil
}
func (t *fakeTx) Rollback() error {
	t.r.log(rec{op: "rollback"})
	return nil
}

func toNamed(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// ---- bareConn: driver.Conn and nothing else ----

type bareConnector struct{ r *recorder }

func (c *bareConnector) Connect(context.Context) (driver.Conn, error) {
	c.r.mu.Lock()
	c.r.connects++
	c.r.mu.Unlock()
	c.r.log(rec{op: "connect"})
	return &bareConn{r: c.r}, nil
}
func (c *bareConnector) Driver() driver.Driver { return fakeDriver{} }

type bareConn struct{ r *recorder }

func (c *bareConn) Prepare(query string) (driver.Stmt, error) {
	c.r.log(rec{op: "prepare", query: query})
	return &bareStmt{r: c.r, query: query}, nil
}
func (c *bareConn) Close() error {
	c.r.log(rec{op: "close"})
	return nil
}
func (c *bareConn) Begin() (driver.Tx, error) {
	c.r.log(rec{op: "begin"})
	return &fakeTx{r: c.r}, nil
}

type bareStmt struct {
	r     *recorder
	query string
}

func (s *bareStmt) Close() error {
	s.r.log(rec{op: "stmt.close", query: s.query})
	return nil
}
func (s *bareStmt) NumInput() int { return numInput(s.query) }
func (s *bareStmt) Exec(args []driver.Value) (driver.Result, error) {
	v, err := s.r.answer("stmt.exec", s.query, toNamed(args))
	if err != nil {
		return nil, err
	}
	return v.(driver.Result), nil
}
func (s *bareStmt) Query(args []driver.Value) (driver.Rows, error) {
	v, err := s.r.answer("stmt.query", s.query, toNamed(args))
	if err != nil {
		return nil, err
	}
	rows := v.(*fakeRows)
	rows.r = s.r
	return rows, nil
}

// ---- helpers ----

func mockPolicy(t *testing.T) *sqlfence.Policy {
	t.Helper()
	p, err := sqlfence.LoadPolicy("testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The fakes answer no catalog query: fence by the policy's names alone.
	p.ResolveCatalog = false
	return p
}

// openFull returns a DB of sqlfence over the full fake, with one connection so that
// reuse is deterministic.
func openFull(t *testing.T) (*sql.DB, *recorder) {
	t.Helper()
	r := newRecorder()
	db := sql.OpenDB(sqlfence.NewConnector(&fullConnector{r: r}, mockPolicy(t)))
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db, r
}

func openBare(t *testing.T) (*sql.DB, *recorder) {
	t.Helper()
	r := newRecorder()
	db := sql.OpenDB(sqlfence.NewConnector(&bareConnector{r: r}, mockPolicy(t)))
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db, r
}

func epoch(n int64) context.Context { return sqlfence.WithEpoch(context.Background(), n) }

func nv(ordinal int, v any) driver.NamedValue { return driver.NamedValue{Ordinal: ordinal, Value: v} }

func wantCalls(t *testing.T, got []rec, want ...rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("inner driver got %d calls, want %d:\ngot:\n  %s\nwant:\n  %s", len(got), len(want), joinRecs(got), joinRecs(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.op != w.op || g.query != w.query || !reflect.DeepEqual(normArgs(g.args), normArgs(w.args)) {
			t.Fatalf("inner driver call %d:\ngot  %s\nwant %s", i, g, w)
		}
	}
}

func normArgs(a []driver.NamedValue) []driver.NamedValue {
	if len(a) == 0 {
		return nil
	}
	return a
}

func joinRecs(rs []rec) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, "\n  ")
}

// notRetryable: database/sql retries ErrBadConn on another connection, and treats
// ErrSkip as "take the slow path"; a refusal or a fence must be neither.
func notRetryable(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, driver.ErrSkip) {
		t.Fatalf("error %v is %v, which database/sql would retry", err, driver.ErrBadConn)
	}
}
