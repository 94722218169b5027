// Each connection's session checked once, before its first statement: a server behind
// the history the fence has seen, of another cluster, or a session that commits
// before it is safe is refused (front.Fence.Session). A pool hands out connections
// this front did not open, so the record of which were checked lives on each
// connection, in its PgConn.CustomData: it goes when the connection goes, and costs
// a map lookup per statement.

package pgxfence

import (
	"context"
	"errors"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/engine"
)

// sessionState is the fence's record on one connection.
type sessionState struct {
	check   func() error // asked before each statement; nil: nothing to ask
	refused error        // the session was refused: every statement gets this
	// def are what a reset returns the session's pinned settings to, read with
	// the check: each statement is bound with them (front.Fence.Bind).
	def *engine.Defaults
}

// session checks t's connection the first time the fence sees it, and before each
// later statement asks what the check returned; it returns the session's defaults.
// A refused connection stays refused (a pool's is closed by release). A failed read
// is not a refusal: it is tried again on the next statement.
func (fe *fence) session(ctx context.Context, t target) (*engine.Defaults, error) {
	data := t.conn.PgConn().CustomData()
	if st, ok := data[fe.key].(*sessionState); ok {
		if st.refused == nil && st.check != nil {
			st.refused = st.check()
		}
		return st.def, st.refused
	}
	check, def, err := fe.f.Session(ctx, t.querier(fe), t.conn)
	if data == nil {
		// A PgConn made without one (pgconn.Construct of a hijacked connection with
		// none): checked on every statement instead.
		return def, err
	}
	if err != nil {
		if se := (*sqlfence.Error)(nil); errors.As(err, &se) {
			data[fe.key] = &sessionState{refused: err}
		}
		return nil, err
	}
	data[fe.key] = &sessionState{check: check, def: def}
	return def, nil
}
