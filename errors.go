// Errors: the sentinels, *Error, and the engine's errors as the program sees them.

package sqlfence

import (
	"errors"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// The sentinels classify every error sqlfence itself produces; match them with
// errors.Is. The concrete error is *Error, which carries the details.
var (
	// ErrFenced: a newer claim has written the row; this execution is superseded.
	// Stop the handler; retrying with the same epoch is fenced again.
	ErrFenced = errors.New("sqlfence: fenced")
	// ErrUnfenced: a write to a protected table whose context has no epoch. A bug in
	// the calling code path, meant to be caught in CI.
	ErrUnfenced = errors.New("sqlfence: unfenced write")
	// ErrRefused: a statement sqlfence cannot fence (TRUNCATE, COPY FROM, a write it
	// does not understand, ...). Nothing was sent.
	ErrRefused = errors.New("sqlfence: refused")
	// ErrAlreadyWritten: in strict mode, the row already carries this very epoch: the
	// same execution wrote it before. Not a fence — two executions never share an
	// epoch — but strict mode allows one write per row per epoch.
	ErrAlreadyWritten = errors.New("sqlfence: already written by this epoch")
)

// Error is the concrete error behind every sentinel.
type Error struct {
	Kind        error  // ErrFenced, ErrUnfenced, ErrRefused or ErrAlreadyWritten
	Code        string // the rule, stable across releases ("SF301": TRUNCATE of a protected table); docs/errors.md lists every code
	Table       string // the protected table, as the policy names it ("" when not about one table)
	Epoch       int64  // this execution's epoch (0 when the context had none; for SF202 the bad value given)
	StoredEpoch int64  // the epoch found on the row, valid when HasStored
	HasStored   bool
	Statement   string // the statement as the application wrote it
	Reason      string // what happened
	Fix         string // what to do instead

	// Affected and Fenced are set for a bulk write checked with WithExactAccounting.
	Affected, Fenced int64
}

func (e *Error) Error() string {
	k := engine.KindRefused
	for i, sentinel := range kindSentinel {
		if sentinel == e.Kind && sentinel != nil {
			k = engine.Kind(i)
		}
	}
	return engine.Format(e.Kind.Error(), &engine.Error{Kind: k, Code: e.Code, Table: e.Table, Epoch: e.Epoch, StoredEpoch: e.StoredEpoch,
		HasStored: e.HasStored, Statement: e.Statement, Reason: e.Reason, Fix: e.Fix, Affected: e.Affected, Fenced: e.Fenced})
}

func (e *Error) Unwrap() error { return e.Kind }

func abbreviate(s string, n int) string { return engine.Abbreviate(s, n) }

// fromEngine is the engine's error as the program sees it: the same fields, the kind
// as its sentinel. Errors the engine did not make pass unchanged; a nil *engine.Error
// is a nil error.
func fromEngine(err error) error {
	e, ok := err.(*engine.Error)
	if !ok {
		return err
	}
	if e == nil {
		return nil
	}
	return publicError(e)
}

func publicError(e *engine.Error) *Error {
	return &Error{Kind: kindSentinel[e.Kind], Code: e.Code, Table: e.Table, Epoch: e.Epoch, StoredEpoch: e.StoredEpoch, HasStored: e.HasStored,
		Statement: e.Statement, Reason: e.Reason, Fix: e.Fix, Affected: e.Affected, Fenced: e.Fenced}
}

var kindSentinel = [...]error{engine.KindRefused: ErrRefused, engine.KindUnfenced: ErrUnfenced,
	engine.KindFenced: ErrFenced, engine.KindAlreadyWritten: ErrAlreadyWritten}
