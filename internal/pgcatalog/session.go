// What a connector checks once on every new session: where its server stands in the
// cluster's history (timeline.go), whether the session's commits wait for the WAL to
// be flushed (synchronous_commit), whether triggers fire in it
// (session_replication_role), and what a reset returns the settings decisions rest
// on to, read in one round trip.

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
	// Defaults are the values RESET, RESET ALL, SET … TO DEFAULT and DISCARD ALL
	// return the settings of ResetSettings to (pg_settings.reset_val): what the
	// session started with — the server's configuration, then database and role
	// defaults, then the startup parameters — not what a SET after connect (a
	// pool's AfterConnect) changed. A setting the server does not have is missing.
	Defaults map[string]string
	// ReplicationRole is the session's session_replication_role (origin, replica,
	// local). It is not reported to the client when it changes, so it is read: a
	// role or database default, or the startup parameters, may set it.
	ReplicationRole string
}

// ResetSettings are the settings whose defaults ReadSession reads: those a
// decision assumes keep a value (engine.Pinned).
var ResetSettings = []string{"standard_conforming_strings", "client_encoding", "synchronous_commit", "session_replication_role"}

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

var sessionColumns = `, pg_catalog.current_setting('synchronous_commit'), pg_catalog.current_setting('session_replication_role'),
 (SELECT pg_catalog.string_agg(name || '=' || reset_val, ',') FROM pg_catalog.pg_settings WHERE name IN ('` + strings.Join(ResetSettings, "', '") + `'))`

// ReadSession reads the session's position, its synchronous_commit, its
// session_replication_role and its settings' defaults in one query.
func ReadSession(ctx context.Context, query QueryFunc) (Session, error) {
	p, extra, err := readPosition(ctx, query, sessionColumns)
	if err != nil {
		return Session{}, err
	}
	if len(extra) != 3 {
		return Session{}, fmt.Errorf("pgcatalog: session query returned %d extra columns", len(extra))
	}
	s := Session{Position: p, Defaults: map[string]string{}}
	s.SynchronousCommit, _ = extra[0].(string)
	s.ReplicationRole, _ = extra[1].(string)
	all, _ := extra[2].(string)
	for _, kv := range strings.Split(all, ",") {
		if name, value, ok := strings.Cut(kv, "="); ok {
			s.Defaults[name] = value
		}
	}
	return s, nil
}
