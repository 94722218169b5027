// What a program can watch: one event per statement sqlfence decides, and one per
// check of a fenced write's result. The OpenTelemetry module (contrib/otel) turns
// them into metrics and span events; shadow mode counts them (shadow.go).

package sqlfence

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// Outcome is what sqlfence did with a statement, or found after a fenced write.
type Outcome uint8

const (
	// OutcomePass: sent as written — a read, a write to no protected table, a
	// statement the allowlist admits, a claim helper's write.
	OutcomePass Outcome = iota + 1
	// OutcomeFence: a protected write sent with the fence.
	OutcomeFence
	// OutcomeRefuse: refused, nothing sent (ErrRefused).
	OutcomeRefuse
	// OutcomeUnfenced: a protected write without a usable epoch, nothing sent
	// (ErrUnfenced).
	OutcomeUnfenced
	// OutcomeLetThrough: sent without the fence because the context came from
	// [Unfenced] and the policy says `unfenced: allow` (a write, or a raw connection
	// handed out).
	OutcomeLetThrough
	// OutcomeChecked: after a fenced write, sqlfence checked its result (a write that
	// affected no rows, exact accounting, a claim-checked write): Event.Err is nil when
	// nothing was fenced, else ErrFenced, ErrAlreadyWritten, or the check's failure.
	OutcomeChecked
)

// String returns the outcome as metrics and logs spell it.
func (o Outcome) String() string {
	switch o {
	case OutcomePass:
		return "pass"
	case OutcomeFence:
		return "fence"
	case OutcomeRefuse:
		return "refuse"
	case OutcomeUnfenced:
		return "unfenced"
	case OutcomeLetThrough:
		return "let_through"
	case OutcomeChecked:
		return "checked"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// An Event is one thing sqlfence did, handed to the function given to [WithObserver].
// Statements are observed where sqlfence sees them: every Exec and Query, a Prepare it
// refuses, and each execution of a prepared protected write; so are a connection
// refused at connect (its session reads text differently, its server is behind the
// connector's history or of another cluster, its synchronous_commit is off or local),
// and [RawConn]'s answers, without a statement.
type Event struct {
	Outcome Outcome
	// Shadow: the policy says `enforce: shadow`, so the statement was sent as the
	// application wrote it; Outcome is what enforcement would have done.
	Shadow bool
	// Code is the rule code of the refusal, unfenced write, fence or already-written
	// result (Error.Code), or of a write let through; "" otherwise.
	Code      string
	Table     string // the protected tables the statement writes, as the policy names them
	Statement string // the application's text ("" for an argument refused on its own)
	Epoch     int64  // the context's epoch, for what concerns a protected write (0 otherwise, or without one)
	Err       error  // the refusal or the check's result; nil when sent, or nothing was fenced
	// Duration is, for OutcomeChecked, how long the check's queries took (0 when the
	// result was known without a query).
	Duration time.Duration
}

// note hands e to the shadow tally and the observer. Callers test f.observing first,
// so a connector without either pays one branch per statement.
func (f *enforcer) note(ctx context.Context, e Event) {
	f.emit(ctx, e, f.shadowing())
}

// emit is note for an event that was enforced (shadow false) even in shadow mode: a
// connection whose session reads text differently, and RawConn without Unfenced, are
// refused in either mode.
func (f *enforcer) emit(ctx context.Context, e Event, shadow bool) {
	e.Shadow = shadow
	var fe *Error
	if e.Err != nil && errors.As(e.Err, &fe) {
		if e.Code == "" {
			e.Code = fe.Code
		}
		if e.Table == "" {
			e.Table = fe.Table
		}
		if e.Epoch == 0 {
			e.Epoch = fe.Epoch
		}
		if e.Statement == "" {
			e.Statement = fe.Statement
		}
	}
	if f.shadow != nil && e.Shadow {
		f.shadow.add(ctx, f.log, e)
	}
	if f.observer != nil {
		f.observer(ctx, e)
	}
}

// noteError notes an error bind or Prepare returns (or, in shadow mode, would have).
func (f *enforcer) noteError(ctx context.Context, err error, query string, epoch int64) {
	o := OutcomeRefuse
	if errors.Is(err, ErrUnfenced) {
		o = OutcomeUnfenced
	}
	f.note(ctx, Event{Outcome: o, Statement: query, Epoch: epoch, Err: err})
}

// noteCheck notes the check of a fenced write's result that began at start.
func (f *enforcer) noteCheck(ctx context.Context, c *engine.Bound, start time.Time, err error) {
	var d time.Duration
	if c.Checked {
		d = time.Since(start)
	}
	f.note(ctx, Event{Outcome: OutcomeChecked, Table: f.tableName(c.D), Statement: c.Query, Epoch: c.Epoch, Err: err, Duration: d})
}

// tableName is d.TableNames(), remembered per table: spelling a name checks it against
// PostgreSQL's keywords with the scanner, too slow to repeat for every fenced write.
func (f *enforcer) tableName(d *engine.Decision) string {
	ts := d.Tables()
	if len(ts) != 1 {
		return d.TableNames()
	}
	t := ts[0]
	if n, ok := f.names.Load(t); ok {
		return n.(string)
	}
	n := d.TableNames()
	f.names.Store(t, n)
	return n
}

// noteLetThrough notes a write, or a raw connection, let through unfenced.
func (f *enforcer) noteLetThrough(ctx context.Context, code, table, query string) {
	f.note(ctx, Event{Outcome: OutcomeLetThrough, Code: code, Table: table, Statement: query})
}
