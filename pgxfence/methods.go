// Pool's and Conn's methods, with pgx's signatures.

package pgxfence

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Exec is pgxpool.Pool.Exec, fenced.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	pc, t, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := p.fe.exec(ctx, t, sql, args)
	release(ctx, pc, err)
	return tag, err
}

// Query is pgxpool.Pool.Query, fenced: a fenced write with RETURNING reports its
// fence from rows.Err() once the rows are read.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	pc, t, err := p.acquire(ctx)
	if err != nil {
		return errRows{err}, err
	}
	return p.fe.query(ctx, t, sql, args, func(err error) { release(ctx, pc, err) })
}

// QueryRow is pgxpool.Pool.QueryRow, fenced.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := p.Query(ctx, sql, args...)
	return row{rows}
}

// Begin is pgxpool.Pool.Begin: the transaction's statements are fenced.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) { return p.BeginTx(ctx, pgx.TxOptions{}) }

// BeginTx is pgxpool.Pool.BeginTx: the transaction's statements are fenced.
// The connection is checked before BEGIN is sent (session.go), and is the
// transaction's until it ends, as with pgxpool.
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	pc, t, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := p.fe.session(ctx, t); err != nil {
		release(ctx, pc, err)
		return nil, err
	}
	tx, err := pc.Conn().BeginTx(ctx, opts)
	if err != nil {
		pc.Release()
		return nil, err
	}
	ftx := newTx(p.fe, tx, nil, p.pool)
	ftx.done = func(err error) { release(ctx, pc, err) }
	return ftx, nil
}

// Ping is pgxpool.Pool.Ping.
func (p *Pool) Ping(ctx context.Context) error { return p.pool.Ping(ctx) }

// Close closes the pool (pgxpool.Pool.Close).
func (p *Pool) Close() { p.pool.Close() }

// Exec is pgx.Conn.Exec, fenced.
func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return c.fe.exec(ctx, c.target(), sql, args)
}

// Query is pgx.Conn.Query, fenced.
func (c *Conn) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.fe.query(ctx, c.target(), sql, args, nil)
}

// QueryRow is pgx.Conn.QueryRow, fenced.
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := c.Query(ctx, sql, args...)
	return row{rows}
}

// Begin is pgx.Conn.Begin: the transaction's statements are fenced.
func (c *Conn) Begin(ctx context.Context) (pgx.Tx, error) { return c.BeginTx(ctx, pgx.TxOptions{}) }

// BeginTx is pgx.Conn.BeginTx: the transaction's statements are fenced.
func (c *Conn) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	if _, err := c.fe.session(ctx, c.target()); err != nil {
		return nil, err // before BEGIN is sent (session.go)
	}
	tx, err := c.conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newTx(c.fe, tx, &c.pending, c.conn), nil
}

// Ping is pgx.Conn.Ping.
func (c *Conn) Ping(ctx context.Context) error { return c.conn.Ping(ctx) }

// Close closes the connection (pgx.Conn.Close).
func (c *Conn) Close(ctx context.Context) error { return c.conn.Close(ctx) }

// SendBatch is pgxpool.Pool.SendBatch, each queued statement fenced on its own.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	pc, t, err := p.acquire(ctx)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return p.fe.sendBatch(ctx, t, b, func(err error) { release(ctx, pc, err) })
}

// CopyFrom is pgxpool.Pool.CopyFrom, fenced (see Conn.CopyFrom).
func (p *Pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	pc, t, err := p.acquire(ctx)
	if err != nil {
		return 0, err
	}
	n, err := p.fe.copyFrom(ctx, t, false, table, columns, src)
	release(ctx, pc, err)
	return n, err
}

// SendBatch is pgx.Conn.SendBatch, each queued statement fenced on its own: a
// refused statement refuses the batch before anything is sent, and a fenced write
// reports ErrFenced for its own result.
func (c *Conn) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return c.fe.sendBatch(ctx, c.target(), b, nil)
}

// CopyFrom is pgx.Conn.CopyFrom. Into an unprotected table the rows pass unchanged;
// into a protected table every row carries ctx's epoch in the epoch column (columns
// must not name it), and under a claim the copy runs in a transaction that holds the
// claim row.
func (c *Conn) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return c.fe.copyFrom(ctx, c.target(), false, table, columns, src)
}
