// What a connector checks once on every new session: where its server stands in the
// cluster's history (timeline.go), and whether the session's commits wait for the
// WAL to be flushed (synchronous_commit), and whether triggers fire in it
// (session_replication_role), read in one round trip.

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
	// ReplicationRole is the session's session_replication_role (origin, replica,
	// local). It is not reported to the client when it changes, so it is read: a
	// role or database default, or the startup parameters, may set it.
	ReplicationRole string
}

// NotOrigin reports whether the session's replication role is anything but origin,
// the default: replica switches off ordinary triggers, rules and foreign-key actions
// (the guard's too, unless enabled always); local fires the same ones as origin but
// is there for replication tools, not an application's sessions.
func (s Session) NotOrigin() bool { return !strings.EqualFold(s.ReplicationRole, "origin") }

// EarlyCommit reports whether the session's commits can return before a
// synchronous standby has them (local), or before the WAL is flushed at all (off).
func (s Session) EarlyCommit() bool {
	return strings.EqualFold(s.SynchronousCommit, "off") || strings.EqualFold(s.SynchronousCommit, "local")
}

const sessionColumns = `, pg_catalog.current_setting('synchronous_commit'), pg_catalog.current_setting('session_replication_role')`

// ReadSession reads the session's position, its synchronous_commit and its
// session_replication_role in one query.
func ReadSession(ctx context.Context, query QueryFunc) (Session, error) {
	p, extra, err := readPosition(ctx, query, sessionColumns)
	if err != nil {
		return Session{}, err
	}
	if len(extra) != 2 {
		return Session{}, fmt.Errorf("pgcatalog: session query returned %d extra columns", len(extra))
	}
	s := Session{Position: p}
	s.SynchronousCommit, _ = extra[0].(string)
	s.ReplicationRole, _ = extra[1].(string)
	return s, nil
}
