// What a connector checks once on every new session: where its server stands in the
// cluster's history (timeline.go), and whether the session's commits wait for the
// WAL to be flushed (synchronous_commit), read in one round trip.

package pgcatalog

import (
	"context"
	"fmt"
	"strings"
)

// Session is what a new session is checked on before its first statement.
type Session struct {
	Position
	// SynchronousCommit is the session's effective synchronous_commit, as the server
	// spells it (on, off, local, remote_write, remote_apply): whatever set it — the
	// server's configuration, a role or database default, the startup parameters.
	SynchronousCommit string
}

// EarlyCommit reports whether the session's commits can return before a
// synchronous standby has them (local), or before the WAL is flushed at all (off).
func (s Session) EarlyCommit() bool {
	return strings.EqualFold(s.SynchronousCommit, "off") || strings.EqualFold(s.SynchronousCommit, "local")
}

const sessionColumns = `, pg_catalog.current_setting('synchronous_commit')`

// ReadSession reads the session's position and its synchronous_commit in one query.
func ReadSession(ctx context.Context, query QueryFunc) (Session, error) {
	p, extra, err := readPosition(ctx, query, sessionColumns)
	if err != nil {
		return Session{}, err
	}
	if len(extra) != 1 {
		return Session{}, fmt.Errorf("pgcatalog: session query returned %d extra columns", len(extra))
	}
	s := Session{Position: p}
	s.SynchronousCommit, _ = extra[0].(string)
	return s, nil
}
