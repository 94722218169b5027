// A connection of the database/sql front: Exec, Query and Prepare decided and bound
// before anything reaches the inner connection, transactions, the catalog read again
// after DDL through the driver, and RawConn, the explicit unfenced path.

package sqlfence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sqlfence/sqlfence/internal/engine"
)

// conn fences one connection of the inner driver. Every path database/sql has to the
// server — Exec, Query, Prepare — goes through decision, so no code path writes a
// protected table unfenced.
type conn struct {
	inner driver.Conn
	enf   *enforcer   // the connector's, as of the last decision
	memo  engine.Memo // the last decisions this connection looked up (cache.go)
	cn    *connector  // nil only for conns tests build by hand
	// ddlPending: this connection ran DDL since the end of its last transaction, so
	// the catalog is read again when the transaction ends (catalogChanged).
	ddlPending bool

	// params reports the server's settings (pgx only, else nil); broken is set once a
	// pinned setting changed, or the connector saw a newer timeline than the session's
	// (session), and the connection is then never used again.
	params func(string) string
	// pgxMode is the inner pgx connection's default exec mode (isPgx): read once,
	// since pgx hands out its config only as a copy (protocol.go).
	isPgx   bool
	pgxMode pgx.QueryExecMode
	broken  *Error
	// server is the server's version (server_version_num; 0 when the driver does not
	// report it): a decision holds only on servers that read the text as the parser.
	server int
	// session refuses the connection once the connector has seen a newer timeline
	// than its primary's (history.go); nil on a standby, or without pgx.
	session *sessionCheck
	// defaults are what a reset returns the session's pinned settings to, read at
	// connect (nil without pgx): each decision is judged on them (conn.decision).
	defaults *engine.Defaults
	// querier runs sqlfence's own queries on this connection, and pgxConn is the
	// inner pgx connection (nil on another driver): both made once at connect, not
	// per statement (an allocation and two interface lookups on every statement's
	// path before).
	querier engine.Querier
	pgxConn *pgx.Conn
}

// usable checks, before each statement, that the server still reads text as sqlfence
// parses it (pinned.go).
func (c *conn) usable(ctx context.Context, query string) error {
	if c.broken == nil && c.params != nil {
		if err := checkPinned(c.params); err != nil {
			c.broken = err
		} else if err := c.session.stale(); err != nil {
			c.broken = err
		}
	}
	if c.broken != nil {
		if c.enf.observing {
			c.enf.emit(ctx, Event{Outcome: OutcomeRefuse, Statement: query, Err: c.broken}, false)
		}
		return c.broken
	}
	// The catalog as it is now, before the statement is decided: read again when the
	// guard said it changed or catalog_refresh passed (fence.Ready; two atomic loads
	// otherwise). Not while this connection's own DDL is uncommitted: its own reads
	// follow it (catalogChanged), and a fresh connection would wait for its lock.
	// Under resolve: none there is nothing to read again (the connector read the
	// claim tables' schemas at connect, on pgx), and a fake or go-sqlmock connection
	// must see only the application's statements.
	if c.cn != nil && !c.ddlPending && c.cn.base.ResolveCatalog && !c.cn.fresh() {
		return c.cn.Ready(ctx, c.querier, c.idle())
	}
	return nil
}

// idle reports whether the session is outside a transaction (pgx reports it; other
// drivers do not, and count as in one): a statement there sees every committed change.
func (c *conn) idle() bool {
	return c.pgxConn != nil && c.pgxConn.PgConn().TxStatus() == 'I'
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.usable(ctx, query); err != nil {
		return nil, err
	}
	d := c.decision(query)
	send := query
	switch {
	case c.enf.shadowing():
		if d.Act() == engine.ActRefuse && c.enf.observing {
			epoch, _ := EpochFrom(ctx)
			c.enf.noteError(ctx, publicError(d.Refusal().ForStatement(query, epoch)), query, epoch) // the shadow tally logs it
		}
		d = engine.Pass
	case d.Act() == engine.ActRefuse:
		epoch, _ := EpochFrom(ctx)
		err := publicError(d.Refusal().ForStatement(query, epoch))
		if c.enf.observing {
			c.enf.noteError(ctx, err, query, epoch)
		}
		return nil, c.parseRefused(ctx, query, err)
	case d.Act() == engine.ActRewrite:
		send = d.SQL()
	}
	var (
		s   driver.Stmt
		err error
	)
	if p, ok := c.inner.(driver.ConnPrepareContext); ok {
		s, err = p.PrepareContext(ctx, send)
	} else {
		s, err = c.inner.Prepare(send)
	}
	if err != nil || d.Act() == engine.ActPass && !c.enf.policy.ResolveCatalog {
		return s, err
	}
	// With a catalog that DDL can change (any session's, under resolve: catalog),
	// every prepared statement is wrapped, so that it is decided again when the
	// snapshot changes (stmt.bind).
	return &stmt{inner: s, conn: c, enf: c.enf, d: d, query: query}, nil
}

// parseRefused is the refusal err, or the server's own error for text neither reads
// (parsed.go).
func (c *conn) parseRefused(ctx context.Context, query string, err error) error {
	var pc *pgconn.PgConn
	if x := c.pgxConn; x != nil {
		pc = x.PgConn()
	}
	return parseRefused(ctx, pc, query, err)
}

// decision is conn's way to a decision: engine.Lookup, with the connection's own memo
// of its last decisions. When the connector has swapped its enforcer (the catalog was
// read again), the memo of decisions made under the old one is dropped.
func (c *conn) decision(query string) *engine.Decision {
	if c.cn != nil {
		if f := c.cn.current(); f != c.enf {
			c.enf, c.memo = f, engine.Memo{}
		}
	}
	d := c.enf.eng.Lookup(&c.memo, query)
	if c.server < engine.ParserVersion {
		d = d.OnServer(c.server)
	}
	return d.InSession(c.defaults)
}

func (c *conn) Close() error { return c.inner.Close() }

// Begin is required by driver.Conn; database/sql uses BeginTx.
func (c *conn) Begin() (driver.Tx, error) {
	//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
	return c.inner.Begin()
}

// BeginTx returns the inner transaction as is: its statements go through this conn,
// and each one is fenced with the epoch of its own context. With a catalog that DDL
// through the driver can change, the transaction is wrapped so that its end reads the
// catalog again when it ran DDL.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var (
		tx  driver.Tx
		err error
	)
	if b, ok := c.inner.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else if opts.Isolation != driver.IsolationLevel(0) || opts.ReadOnly {
		return nil, errors.New("sqlfence: the inner driver does not support transaction options")
	} else {
		//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
		tx, err = c.inner.Begin()
	}
	if err != nil || !c.enf.policy.RereadsCatalog() {
		return tx, err
	}
	return &catalogTx{Tx: tx, c: c, ctx: context.WithoutCancel(ctx)}, nil
}

// catalogTx reads the catalog again when a transaction that ran DDL ends: after COMMIT
// other connections see what it created, after ROLLBACK what it dropped is back.
type catalogTx struct {
	driver.Tx
	c   *conn
	ctx context.Context
}

func (t *catalogTx) Commit() error {
	if err := t.Tx.Commit(); err != nil {
		return err
	}
	t.c.endTx(t.ctx)
	return nil
}

func (t *catalogTx) Rollback() error {
	if err := t.Tx.Rollback(); err != nil {
		return err
	}
	t.c.endTx(t.ctx)
	return nil
}

// endTx is catalogChanged at the end of a transaction database/sql began. The
// transaction ended either way, so a failed read is logged rather than returned, and
// tried again after the next DDL or transaction end.
func (c *conn) endTx(ctx context.Context) {
	if err := c.catalogChanged(ctx, engine.CatalogTxEnd); err != nil {
		c.enf.log.ErrorContext(ctx, "sqlfence: reading the catalog again after a transaction with DDL failed; decisions use the previous snapshot until it succeeds", "error", err)
	}
}

// afterRows runs catalogChanged when the rows of a statement that changed the
// catalog are read or closed: the connection is busy until then.
func (c *conn) afterRows(ctx context.Context, rows driver.Rows, eff engine.CatalogEffect) driver.Rows {
	return &catalogRows{fencedRows: fencedRows{inner: rows}, after: func() error { return c.catalogChanged(ctx, eff) }}
}

type catalogRows struct {
	fencedRows
	after func() error
	done  bool
}

func (r *catalogRows) Next(dest []driver.Value) error {
	err := r.inner.Next(dest)
	if errors.Is(err, io.EOF) {
		if aerr := r.run(); aerr != nil {
			return aerr
		}
	}
	return err
}

func (r *catalogRows) Close() error {
	err := r.inner.Close()
	if aerr := r.run(); err == nil {
		err = aerr
	}
	return err
}

func (r *catalogRows) run() error {
	if r.done {
		return nil
	}
	r.done = true
	return r.after()
}

// catalogChanged reads the catalog again (resolve: catalog with ddl: allow) after a
// statement that changed it, and when a transaction in which this connection ran DDL
// ends or rolls back to a savepoint. It reads over this connection, so inside a
// transaction it sees the transaction's own changes, which the statements that follow
// in it may use.
func (c *conn) catalogChanged(ctx context.Context, eff engine.CatalogEffect) error {
	reread := eff&engine.CatalogDDL != 0 || c.ddlPending && eff&(engine.CatalogTxEnd|engine.CatalogTxUndo) != 0
	c.ddlPending = eff&engine.CatalogDDL != 0 || c.ddlPending && eff&engine.CatalogTxEnd == 0
	if !reread || c.cn == nil {
		return nil
	}
	if err := c.cn.refresh(ctx, c.querier); err != nil {
		c.ddlPending = true
		if errors.Is(err, driver.ErrBadConn) {
			return fmt.Errorf("sqlfence: the statement ran, but reading the catalog again after it failed: the connection broke (%v)", err)
		}
		return fmt.Errorf("sqlfence: the statement ran, but reading the catalog again after it failed (decisions use the previous snapshot until it succeeds): %w", err)
	}
	return nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.usable(ctx, query); err != nil {
		return nil, err
	}
	execer, ok := c.inner.(driver.ExecerContext)
	if !ok {
		// database/sql then prepares the statement, and PrepareContext fences it.
		return nil, driver.ErrSkip
	}
	d := c.decision(query)
	if d.Act() == engine.ActPass && !d.Carries() {
		if c.enf.observing {
			c.enf.note(ctx, Event{Outcome: OutcomePass, Statement: query})
		}
		res, err := execer.ExecContext(ctx, query, c.extended(args))
		err = c.enf.guardSaid(d, query, err)
		if err == nil && d.Catalog() != 0 {
			err = c.catalogChanged(ctx, d.Catalog())
		}
		return res, err
	}
	call, err := c.enf.bind(ctx, d, query, args, c.params != nil)
	if err != nil {
		return nil, c.parseRefused(ctx, query, err)
	}
	res, err := execer.ExecContext(ctx, call.Send, c.extended(call.args))
	if err != nil {
		return res, c.enf.claimError(ctx, c.inner, &call, err)
	}
	if !call.Fenced {
		return res, nil
	}
	if n, err := res.RowsAffected(); err == nil && call.NeedsCheck(n, exactAccounting(ctx)) {
		if err := c.enf.check(ctx, c.inner, &call, n); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.usable(ctx, query); err != nil {
		return nil, err
	}
	queryer, ok := c.inner.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	d := c.decision(query)
	if d.Act() == engine.ActPass && !d.Carries() {
		if c.enf.observing {
			c.enf.note(ctx, Event{Outcome: OutcomePass, Statement: query})
		}
		rows, err := queryer.QueryContext(ctx, query, c.extended(args))
		err = c.enf.guardSaid(d, query, err)
		if err == nil && d.Catalog() != 0 {
			return c.afterRows(ctx, rows, d.Catalog()), nil
		}
		return rows, err
	}
	call, err := c.enf.bind(ctx, d, query, args, false)
	if err != nil {
		return nil, c.parseRefused(ctx, query, err)
	}
	rows, err := queryer.QueryContext(ctx, call.Send, c.extended(call.args))
	if err != nil {
		return rows, c.enf.claimError(ctx, c.inner, &call, err)
	}
	if !call.ChecksRows() {
		return rows, nil
	}
	return c.enf.wrapRows(ctx, c.inner, rows, call), nil
}

// execUnprepared runs a bound call's text on the inner connection, through
// ExecerContext when it has one and a one-off prepared statement otherwise.
func (c *conn) execUnprepared(ctx context.Context, call *call) (driver.Result, error) {
	if e, ok := c.inner.(driver.ExecerContext); ok {
		res, err := e.ExecContext(ctx, call.Send, c.extended(call.args))
		if !errors.Is(err, driver.ErrSkip) {
			return res, err
		}
	}
	var (
		st  driver.Stmt
		err error
	)
	if p, ok := c.inner.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, call.Send)
	} else {
		st, err = c.inner.Prepare(call.Send)
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if e, ok := st.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, call.args)
	}
	//lint:ignore SA1019 an inner driver without the context method has only this one; database/sql falls back to it the same way
	return st.Exec(values(call.args))
}

func (c *conn) Ping(ctx context.Context) error {
	if p, ok := c.inner.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *conn) ResetSession(ctx context.Context) error {
	if c.broken != nil {
		return driver.ErrBadConn // discard it: its session reads text differently
	}
	if r, ok := c.inner.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *conn) IsValid() bool {
	if c.broken != nil {
		return false
	}
	if v, ok := c.inner.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// CheckNamedValue lets pgx accept its own argument types ([]string, pgtype values,
// QueryExecMode) exactly as it would without sqlfence.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if err := c.enf.checkRewriter(nv); err != nil {
		return err
	}
	if n, ok := c.inner.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// RawConn returns the inner driver connection behind a sqlfence connection, for code
// inside sql.Conn.Raw that needs the driver itself (pgx's *stdlib.Conn and its
// Conn(), CopyFrom, ...). Whatever runs on it bypasses the fence, so it is handed out
// only on the explicit unfenced path: ctx must come from Unfenced and the policy must
// say `unfenced: allow`.
//
//	err := conn.Raw(func(dc any) error {
//		inner, err := sqlfence.RawConn(sqlfence.Unfenced(ctx, "bulk load, ticket 42"), dc)
//		...
//	})
func RawConn(ctx context.Context, driverConn any) (driver.Conn, error) {
	c, ok := driverConn.(*conn)
	if !ok {
		return nil, fmt.Errorf("sqlfence: RawConn: %T is not a sqlfence connection; call it inside sql.Conn.Raw of a sqlfence DB", driverConn)
	}
	if err := c.enf.rawAllowed(ctx); err != nil {
		return nil, err
	}
	return c.inner, nil
}

// extended is extendedArgs for this connection.
func (c *conn) extended(args []driver.NamedValue) []driver.NamedValue {
	if !c.isPgx {
		return args
	}
	return extendedArgsFor(c.pgxMode, args)
}
