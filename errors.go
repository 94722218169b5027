package sqlfence

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sqlfence/sqlfence/internal/rulecode"
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
	Code        string // the rule, stable across releases ("SF301": TRUNCATE of a protected table); the README lists every code
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
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	if e.Table != "" {
		fmt.Fprintf(&b, ": table %s", e.Table)
	}
	if e.Epoch != 0 || e.Code == rulecode.BadEpoch {
		fmt.Fprintf(&b, ", epoch %d", e.Epoch)
	} else if e.Kind == ErrUnfenced {
		b.WriteString(", no epoch")
	}
	if e.HasStored {
		fmt.Fprintf(&b, ", stored epoch %d", e.StoredEpoch)
	}
	if e.Affected != 0 || e.Fenced != 0 {
		fmt.Fprintf(&b, ", %d rows written, %d fenced", e.Affected, e.Fenced)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	if e.Statement != "" {
		fmt.Fprintf(&b, " (statement: %s)", abbreviate(e.Statement, 200))
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Kind }

func abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withStatement returns a copy of e that names the statement and epoch, so a cached
// refusal is never shared between callers.
func (e *Error) forStatement(stmt string, epoch int64) *Error {
	c := *e
	c.Statement = stmt
	c.Epoch = epoch
	return &c
}
