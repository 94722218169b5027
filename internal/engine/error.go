// The engine's errors: what it refuses and what it finds after a write, with the
// rule code, the table, the epochs, the reason and the fix. The fronts turn each into
// the root package's *sqlfence.Error, field for field.

package engine

import (
	"fmt"
	"strings"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Kind classifies an Error; each front maps it to its sentinel (ErrRefused, …).
type Kind uint8

const (
	KindRefused        Kind = iota + 1 // nothing was sent
	KindUnfenced                       // a protected write without a usable epoch
	KindFenced                         // a newer epoch or claim kept the rows
	KindAlreadyWritten                 // strict mode: this epoch wrote the row before
)

// Error is one refusal or finding. Its fields mean what the root package's Error's do.
type Error struct {
	Kind             Kind
	Code             string
	Table            string
	Epoch            int64
	StoredEpoch      int64
	HasStored        bool
	Statement        string
	Reason           string
	Fix              string
	Affected, Fenced int64
}

// kindText is each kind's sentinel's text in the root package.
var kindText = [...]string{KindRefused: "sqlfence: refused", KindUnfenced: "sqlfence: unfenced write",
	KindFenced: "sqlfence: fenced", KindAlreadyWritten: "sqlfence: already written by this epoch"}

// KindText is the text of k's sentinel ("sqlfence: refused"), which the root package's
// sentinels are made with, so both spell an error the same way.
func KindText(k Kind) string { return kindText[k] }

// Error spells the error as the root package's *Error does: both call Format.
func (e *Error) Error() string { return Format(kindText[e.Kind], e) }

// Format spells an error: its kind, code, table, epochs, counts, reason, fix and the
// statement, abbreviated.
func Format(kind string, e *Error) string {
	var b strings.Builder
	b.WriteString(kind)
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	if e.Table != "" {
		fmt.Fprintf(&b, ": table %s", e.Table)
	}
	if e.Epoch != 0 || e.Code == rulecode.BadEpoch {
		fmt.Fprintf(&b, ", epoch %d", e.Epoch)
	} else if e.Kind == KindUnfenced {
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
		fmt.Fprintf(&b, " (statement: %s)", Abbreviate(e.Statement, 200))
	}
	return b.String()
}

// ForStatement returns a copy of e that names the statement and epoch, so a cached
// refusal is never shared between callers.
func (e *Error) ForStatement(stmt string, epoch int64) *Error {
	c := *e
	c.Statement = stmt
	c.Epoch = epoch
	return &c
}

// Abbreviate shortens a statement for messages and logs: whitespace runs become one
// space, and past n bytes the rest is cut.
func Abbreviate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
