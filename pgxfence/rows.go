// The rows of a fenced Query: the write's checks run once the rows are read (its
// command tag counts what it wrote), and the pgx connection is not handed out.

package pgxfence

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sqlfence/sqlfence/internal/front"
)

// rows is pgx.Rows of a statement sent through the fence. pgx closes its rows when
// Next reaches the end, and the connection is free again then: finish runs the
// checks on it, and their error is what Err reports.
type rows struct {
	inner    pgx.Rows
	fe       *fence
	t        target
	c        front.Call
	ctx      context.Context
	done     func(error) // the pool's release, or nil
	err      error
	finished bool
}

var _ pgx.Rows = (*rows)(nil)

func (r *rows) Next() bool {
	if r.finished {
		return false
	}
	if r.inner.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *rows) Close() {
	if !r.finished {
		r.inner.Close()
		r.finish()
	}
}

// finish runs once the inner rows are closed.
func (r *rows) finish() {
	r.finished = true
	r.inner.Close()
	if err := r.inner.Err(); err != nil {
		r.err = r.fe.refused(r.ctx, r.t, &r.c, err)
	} else {
		tag := r.inner.CommandTag()
		// With RETURNING the tag counts the rows written; EXPLAIN ANALYZE's does not.
		r.err = r.fe.after(r.ctx, r.t, &r.c, tag, r.c.Returning() || writeTag(tag))
	}
	if r.done != nil {
		r.done(r.err)
	}
}

// writeTag reports a command tag that counts rows written.
func writeTag(t pgconn.CommandTag) bool {
	return t.Insert() || t.Update() || t.Delete() || strings.HasPrefix(t.String(), "MERGE ")
}

func (r *rows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.inner.Err()
}

func (r *rows) CommandTag() pgconn.CommandTag                { return r.inner.CommandTag() }
func (r *rows) FieldDescriptions() []pgconn.FieldDescription { return r.inner.FieldDescriptions() }
func (r *rows) Scan(dest ...any) error                       { return r.inner.Scan(dest...) }
func (r *rows) Values() ([]any, error)                       { return r.inner.Values() }
func (r *rows) TypeMap() *pgtype.Map                         { return r.inner.TypeMap() }
func (r *rows) RawValues() [][]byte                          { return r.inner.RawValues() }

// Conn returns nil: the *pgx.Conn behind the rows would run statements unfenced
// (pgx documents that Conn may be nil for rows that did not come from a Conn).
func (r *rows) Conn() *pgx.Conn { return nil }

// errRows is the rows of a statement refused or failed before anything was read.
type errRows struct{ err error }

func (e errRows) Close()                                       {}
func (e errRows) Err() error                                   { return e.err }
func (e errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (e errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (e errRows) Next() bool                                   { return false }
func (e errRows) Scan(...any) error                            { return e.err }
func (e errRows) Values() ([]any, error)                       { return nil, e.err }
func (e errRows) RawValues() [][]byte                          { return nil }
func (e errRows) Conn() *pgx.Conn                              { return nil }
func (e errRows) TypeMap() *pgtype.Map                         { return nil }

// row is QueryRow's pgx.Row, read as pgx reads its own: the first row, and the
// statement's error (a fence among them) when there is none.
type row struct{ rows pgx.Rows }

func (r row) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
