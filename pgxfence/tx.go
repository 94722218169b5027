// Transactions: a pgx.Tx whose statements, and the savepoint transactions begun in
// it, are fenced.

package pgxfence

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Tx is the pgx.Tx that Pool, Conn and Tx begin. Each statement is fenced with the
// epoch of its own context, as on the database/sql front.
type Tx struct {
	inner  pgx.Tx
	status func(string) string // the connection's ParameterStatus
	fe     *fence
	// pending is the catalog's state of the connection (front.Fence.Changed): the
	// Conn's, or the outermost Tx's own for a pool's transaction.
	pending *bool
	// endQ reads the catalog when the transaction ends: on the connection, or for
	// a pool's transaction (whose connection is back in the pool) on the pool.
	endQ   front.Querier
	nested bool // a savepoint transaction
	// done, for a transaction a pool's batch began (Batch.BeginTx), releases its
	// connection when the transaction ends.
	done func(error)
}

var _ pgx.Tx = (*Tx)(nil)

func newTx(fe *fence, inner pgx.Tx, pending *bool, end runner) *Tx {
	if pending == nil {
		pending = new(bool)
	}
	return &Tx{inner: inner, status: inner.Conn().PgConn().ParameterStatus, fe: fe, pending: pending, endQ: target{run: end}.querier(fe)}
}

func (t *Tx) target() target {
	return target{conn: t.inner.Conn(), status: t.status, run: t.inner, pending: t.pending}
}

// Begin starts a savepoint transaction, fenced like t.
func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) {
	inner, err := t.inner.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{inner: inner, status: t.status, fe: t.fe, pending: t.pending, endQ: target{run: t.inner}.querier(t.fe), nested: true}, nil
}

// Commit commits the transaction (or releases the savepoint); after a transaction
// that ran DDL the catalog is read again (resolve: catalog).
func (t *Tx) Commit(ctx context.Context) error {
	if err := t.inner.Commit(ctx); err != nil {
		t.release(err)
		return err
	}
	t.release(nil)
	return t.ended(ctx, engine.CatalogTxEnd)
}

// Rollback rolls the transaction (or the savepoint) back.
func (t *Tx) Rollback(ctx context.Context) error {
	if err := t.inner.Rollback(ctx); err != nil {
		t.release(err)
		return err
	}
	t.release(nil)
	return t.ended(ctx, engine.CatalogTxUndo)
}

func (t *Tx) release(err error) {
	if t.done != nil && !t.nested {
		t.done(err)
		t.done = nil
	}
}

// ended reads the catalog again when a transaction in which DDL ran ends, or rolls
// back to a savepoint. The transaction ended either way, so a failed read is logged
// rather than returned, and tried again after the next DDL or transaction end.
func (t *Tx) ended(ctx context.Context, eff engine.CatalogEffect) error {
	if t.nested && eff == engine.CatalogTxEnd {
		return nil // a released savepoint: the transaction goes on
	}
	if !t.nested {
		eff = engine.CatalogTxEnd
	}
	if !*t.pending {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if err := t.fe.f.Changed(ctx, t.endQ, eff, t.pending); err != nil {
		t.fe.f.Log().ErrorContext(ctx, "sqlfence: reading the catalog again after a transaction with DDL failed; decisions use the previous snapshot until it succeeds", "error", err)
	}
	return nil
}

func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.fe.exec(ctx, t.target(), sql, args)
}

func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.fe.query(ctx, t.target(), sql, args, nil)
}

func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := t.Query(ctx, sql, args...)
	return row{rows}
}

// Prepare prepares a statement the fence lets through as written (a read, a write
// of an unprotected table). A protected write is refused: its epoch belongs to each
// execution's context, and pgx would run the prepared statement by its name, a text
// the fence cannot decide on. Exec and Query decide on the text they are given, so
// a prepared statement runs through them when its name is its text (pgx's own
// convention, Prepare(ctx, sql, sql)); any other name is decided as SQL.
func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	c, _, err := t.fe.prepare(ctx, t.target(), sql, nil, forExec)
	if err != nil {
		return nil, err
	}
	if c.Send != sql || c.Fenced || c.LetThrough {
		return nil, &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.UnfenceablePlace, Table: c.D.TableNames(), Statement: sql,
			Reason: "a prepared statement that writes a protected table: pgx runs it by name, and its epoch belongs to each execution",
			Fix:    "run the statement with Exec or Query (pgx's statement cache prepares it, fenced, per execution)"}
	}
	return t.inner.Prepare(ctx, name, sql)
}

// LargeObjects is the transaction's large objects: they live outside tables, and no
// policy protects them.
func (t *Tx) LargeObjects() pgx.LargeObjects { return t.inner.LargeObjects() }

// Conn returns nil. The *pgx.Conn behind a transaction runs statements unfenced, and
// pgx.Tx's other methods cover what the transaction does; a program that needs the
// connection itself asks for it by name (Raw) on the explicit unfenced path.
func (t *Tx) Conn() *pgx.Conn { return nil }

// Raw returns the pgx transaction behind t, on the explicit unfenced path only
// (see Pool.Raw).
func (t *Tx) Raw(ctx context.Context) (pgx.Tx, error) {
	if err := t.fe.f.Raw(ctx); err != nil {
		return nil, err
	}
	return t.inner, nil
}

func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.fe.sendBatch(ctx, t.target(), b, nil)
}

func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return t.fe.copyFrom(ctx, t.target(), true, table, columns, src)
}
