// SendBatch: each queued statement decided on its own; the results, the queued
// queries' callbacks and their errors in the batch's order.

package pgxfence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
)

// errNoMore mirrors pgx's answer past the batch's last result.
var errNoMore = errors.New("pgxfence: no more results in batch")

// sendBatch decides every queued statement before anything is sent: a refused one
// refuses the batch (its statements run in one implicit transaction, and sending
// the others would run them without the one the program queued with them). done
// runs when the results are closed.
//
// A fenced write is explained by queries on the same connection, which is busy
// until the batch's last result is read; so a batch with fenced writes is read to
// its end at once, its results held, and each fenced write checked in order. The
// checks run after the whole batch ran: a later statement of the batch that
// changed the same rows is part of what they see.
func (fe *fence) sendBatch(ctx context.Context, t target, b *pgx.Batch, done func(error)) pgx.BatchResults {
	n := len(b.QueuedQueries)
	calls := make([]front.Call, n)
	sends := make([][]any, n)
	check, withArgs := false, false
	var def *engine.Defaults
	if n > 0 {
		var err error
		if def, err = fe.usable(ctx, t); err != nil {
			return fe.refuseBatch(n, 0, err, done)
		}
	}
	for i, qq := range b.QueuedQueries {
		// Each statement is decided on its own, as the server runs it: a reset of a
		// pinned setting on the session's defaults (the statements after it would run
		// under them before any check between statements), its text on the server's
		// version.
		c, send, err := fe.bind(ctx, t, def, qq.SQL, qq.Arguments, forBatch)
		if err != nil {
			return fe.refuseBatch(n, i, err, done)
		}
		calls[i], sends[i] = c, send
		// A carried statement's fence is the guard's: its error is read back as one.
		check = check || c.Fenced || c.Carried
		withArgs = withArgs || len(send) > 0
	}
	if fe.mode == pgx.QueryExecModeSimpleProtocol && withArgs {
		// pgx sends a batch in the connection's default mode only, and in the simple
		// protocol it interpolates the arguments on the client (see sendMode).
		err := errors.New("pgxfence: SendBatch with arguments on a connection whose DefaultQueryExecMode is the simple protocol: pgx would put the arguments into the text on the client, after sqlfence decided on it; use another DefaultQueryExecMode (QueryExecModeExec keeps one round trip and no prepared statements), or send the statements one by one")
		return fe.refuseBatch(n, 0, err, done)
	}
	// The batch itself is sent, with the fenced texts in place of the program's
	// (which Close puts back), so that what pgx keeps in it (Batch.BeginTx) stays;
	// the callbacks are this front's to run, with its results.
	saved := make([]pgx.QueuedQuery, n)
	for i, qq := range b.QueuedQueries {
		saved[i] = *qq
		qq.SQL, qq.Arguments, qq.Fn = calls[i].Send, sends[i], nil
	}
	br := &batch{fe: fe, t: t, ctx: ctx, b: b, saved: saved, calls: calls, done: done, inner: t.run.SendBatch(ctx, b)}
	if check {
		br.readAll()
	}
	return br
}

// refuseBatch is the results of a batch refused at item i before anything was
// sent: that item reports the refusal, every other one that it was not sent.
func (fe *fence) refuseBatch(n, i int, err error, done func(error)) pgx.BatchResults {
	if done != nil {
		done(err)
	}
	errs := make([]error, n)
	for j := range errs {
		errs[j] = err
		if j != i {
			errs[j] = fmt.Errorf("pgxfence: batch statement %d not sent: statement %d of the batch was refused: %w", j+1, i+1, err)
		}
	}
	return &batch{refused: errs, done: nil}
}

// batch is the fenced pgx.BatchResults.
type batch struct {
	fe    *fence
	t     target
	ctx   context.Context
	inner pgx.BatchResults
	b     *pgx.Batch
	saved []pgx.QueuedQuery // the program's queued queries, put back by Close
	calls []front.Call
	done  func(error)
	idx   int

	held    []held  // readAll's results, or nil while reading through inner
	refused []error // a refused batch's per-item errors
	closed  bool
	err     error
	tx      *Tx // Tx's
}

// held is one statement's result, read ahead.
type held struct {
	tag    pgconn.CommandTag
	err    error
	fields []pgconn.FieldDescription
	rows   [][][]byte
}

// readAll reads every result of the batch, closes it, and checks each fenced write.
func (b *batch) readAll() {
	b.held = make([]held, len(b.calls))
	for i := range b.held {
		h := &b.held[i]
		if c := &b.calls[i]; c.Fenced && !c.Returning() && c.D.Classifier() != nil {
			// A fenced write without RETURNING has no rows to keep.
			h.tag, h.err = b.inner.Exec()
			continue
		}
		r, err := b.inner.Query()
		if err != nil {
			h.err = err
			continue
		}
		h.fields = append([]pgconn.FieldDescription(nil), r.FieldDescriptions()...)
		for r.Next() {
			raw := r.RawValues()
			row := make([][]byte, len(raw))
			for j, v := range raw {
				if v != nil {
					row[j] = append([]byte{}, v...)
				}
			}
			h.rows = append(h.rows, row)
		}
		r.Close()
		h.tag, h.err = r.CommandTag(), r.Err()
	}
	b.err = b.inner.Close()
	for i := range b.held {
		b.held[i].err = b.explain(i, b.held[i].tag, b.held[i].err)
	}
	// Close reports the batch's first error, as pgx's does: the statement's as
	// explained (the guard's fence as ErrFenced), not the server's bare one.
	if b.err != nil {
		for i := range b.held {
			if b.held[i].err != nil {
				b.err = b.held[i].err
				break
			}
		}
	}
}

// explain is the statement's error after the checks: the server's (a superseded
// claim's refusal as ErrFenced), or the fence's.
func (b *batch) explain(i int, tag pgconn.CommandTag, err error) error {
	c := &b.calls[i]
	if err != nil {
		return b.fe.refused(b.ctx, b.t, c, err)
	}
	return b.fe.after(b.ctx, b.t, c, tag, c.Returning() || writeTag(tag))
}

func (b *batch) next() (int, error) {
	i := b.idx
	switch {
	case b.refused != nil && i < len(b.refused):
		b.idx++
		return i, b.refused[i]
	case b.closed || i >= len(b.calls):
		return i, errNoMore
	}
	b.idx++
	return i, nil
}

func (b *batch) Exec() (pgconn.CommandTag, error) {
	i, err := b.next()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if b.held != nil {
		return b.held[i].tag, b.held[i].err
	}
	return b.inner.Exec()
}

func (b *batch) Query() (pgx.Rows, error) {
	i, err := b.next()
	if err != nil {
		return errRows{err}, err
	}
	if b.held != nil {
		return &heldRows{h: &b.held[i], m: b.t.conn.TypeMap()}, b.held[i].err
	}
	r, err := b.inner.Query()
	return hiddenConn{r}, err
}

func (b *batch) QueryRow() pgx.Row {
	rows, _ := b.Query()
	return row{rows}
}

// Close runs the callbacks of the statements not read yet, in order, as pgx does,
// and closes the batch.
func (b *batch) Close() error {
	if b.refused != nil {
		b.idx = len(b.refused)
		return b.refused[0]
	}
	if b.closed {
		return b.err
	}
	for b.idx < len(b.calls) && b.err == nil {
		if fn := b.saved[b.idx].Fn; fn != nil {
			b.err = fn(b)
		} else if _, err := b.Exec(); err != nil {
			b.err = err
		}
	}
	b.closed = true
	for i := range b.saved {
		*b.b.QueuedQueries[i] = b.saved[i]
	}
	if b.held == nil {
		if err := b.inner.Close(); b.err == nil {
			b.err = err
		}
		for i := range b.calls {
			if eff := b.calls[i].D.Catalog(); eff != 0 && b.err == nil {
				b.err = b.fe.f.Changed(b.ctx, b.t.querier(b.fe), eff, b.t.catalogPending())
			}
		}
	}
	if b.done != nil && b.tx == nil {
		b.done(b.err)
		b.done = nil
	}
	return b.err
}

// Tx is the transaction Batch.BeginTx began, fenced; nil without one.
func (b *batch) Tx() pgx.Tx {
	if b.inner == nil {
		return nil
	}
	if b.tx == nil {
		inner := b.inner.Tx()
		if inner == nil {
			return nil
		}
		// A pool's connection is the transaction's until it ends.
		b.tx = newTx(b.fe, inner, b.t.pending, b.t.run)
		b.tx.done, b.done = b.done, nil
	}
	return b.tx
}

// hiddenConn is a batch statement's rows without their connection (see rows.Conn).
type hiddenConn struct{ pgx.Rows }

func (hiddenConn) Conn() *pgx.Conn { return nil }

// heldRows is a statement's rows read ahead by readAll, scanned with the
// connection's type map as pgx scans its own.
type heldRows struct {
	h *held
	m *pgtype.Map
	i int
}

func (r *heldRows) Close()                                       { r.i = len(r.h.rows) + 1 }
func (r *heldRows) Err() error                                   { return r.h.err }
func (r *heldRows) CommandTag() pgconn.CommandTag                { return r.h.tag }
func (r *heldRows) FieldDescriptions() []pgconn.FieldDescription { return r.h.fields }
func (r *heldRows) Conn() *pgx.Conn                              { return nil }
func (r *heldRows) TypeMap() *pgtype.Map                         { return r.m }
func (r *heldRows) RawValues() [][]byte                          { return r.h.rows[r.i-1] }

func (r *heldRows) Next() bool {
	if r.h.err != nil || r.i >= len(r.h.rows) {
		r.i = len(r.h.rows) + 1
		return false
	}
	r.i++
	return true
}

func (r *heldRows) Scan(dest ...any) error {
	return pgx.ScanRow(r.m, r.h.fields, r.RawValues(), dest...)
}

func (r *heldRows) Values() ([]any, error) {
	raw := r.RawValues()
	out := make([]any, len(raw))
	for j, fd := range r.h.fields {
		switch dt, ok := r.m.TypeForOID(fd.DataTypeOID); {
		case raw[j] == nil:
		case ok:
			v, err := dt.Codec.DecodeValue(r.m, fd.DataTypeOID, fd.Format, raw[j])
			if err != nil {
				return nil, err
			}
			out[j] = v
		case fd.Format == pgtype.TextFormatCode:
			out[j] = string(raw[j])
		default:
			out[j] = raw[j]
		}
	}
	return out, nil
}
