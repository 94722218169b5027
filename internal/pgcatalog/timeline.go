// Where a server is in its cluster's history: the timeline it writes on, how far it
// has written, and which cluster it belongs to. A promotion starts a new timeline, so
// epochs built on the timeline never go back across a failover (package claim), and
// a connector that remembers the highest position it has seen can refuse a server
// that is behind it in time (the old primary come back, a lagging standby promoted).

package pgcatalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// WriteTimelineSQL is an expression for the timeline the server writes WAL on, as
// bigint: read from the name of the WAL segment being written, whose first eight hex
// digits are the timeline. It changes at once on promotion, where
// pg_control_checkpoint().timeline_id follows only at the next checkpoint, and needs no
// privilege. On a standby it is an error (no WAL is written there), so a statement
// that draws an epoch from it cannot run on a standby either.
const WriteTimelineSQL = "('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint"

// EpochShift places the timeline in an epoch: an epoch drawn on timeline t is
// t<<EpochShift plus the source's own counter. Between two timelines lie 2^32 epochs,
// so an epoch drawn after a promotion is above every epoch the old primary drew on
// the earlier timeline, unless its lost WAL tail held more than four billion claims
// (or one job was claimed that often on one timeline, for per-job epochs).
const EpochShift = 32

// EpochFloorSQL is the lowest epoch of the server's write timeline, as bigint.
const EpochFloorSQL = "(" + WriteTimelineSQL + " << " + "32" + ")"

// EpochTimeline is the timeline an epoch was drawn on, or 0 for an epoch of the
// format before timelines (below 2^32). For an epoch whose source counter had passed
// 2^32 it reads too high; it is for messages, never for a decision.
func EpochTimeline(epoch int64) int64 { return epoch >> EpochShift }

// Position is where a server stands in its cluster's history when a session starts.
type Position struct {
	// System is the cluster's system identifier (pg_control_system), the same on a
	// primary and every standby made from it; "" where the role may not read it.
	System string
	// Timeline is the timeline the server writes on (a primary), or the newest it
	// has received (a standby; 0 when it cannot tell).
	Timeline int64
	// LSN is how far the server has written (a primary) or replayed (a standby).
	LSN uint64
	// Standby: the server is in recovery and takes no writes.
	Standby bool
}

// String spells the position as PostgreSQL spells a WAL position.
func (p Position) String() string {
	role := "primary"
	if p.Standby {
		role = "standby"
	}
	return fmt.Sprintf("%s on timeline %d at %X/%X", role, p.Timeline, p.LSN>>32, uint32(p.LSN))
}

// Before reports whether p is behind q in the history of one cluster: an older
// timeline. The WAL position is not compared: two sessions on one primary read its
// position at moments the connector cannot order, so the one that read first could
// be judged behind the other; a second server that took the same timeline number
// (two standbys promoted at once) is not told apart from the first.
func (p Position) Before(q Position) bool {
	return p.Timeline != 0 && p.Timeline < q.Timeline
}

// positionBody reads the position without the system identifier; positionSQL adds it.
// A standby's timeline is the one its WAL receiver last received (visible to roles
// with pg_read_all_stats), else its last restartpoint's.
const positionBody = `pg_catalog.pg_is_in_recovery(),
	CASE WHEN pg_catalog.pg_is_in_recovery()
	     THEN coalesce((SELECT w.received_tli::bigint FROM pg_catalog.pg_stat_wal_receiver w),
	                   (SELECT c.timeline_id::bigint FROM pg_catalog.pg_control_checkpoint() c), 0)
	     ELSE ` + WriteTimelineSQL + ` END,
	(CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END)::text`

const (
	positionSQL      = `SELECT (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s), ` + positionBody
	positionNoSysSQL = `SELECT NULL::text, ` + positionBody
	// positionUnknownSQL reads no WAL or control function: for a server that refuses
	// them (revoked on a standby's pg_control_checkpoint, WAL functions a managed
	// service does not offer).
	positionUnknownSQL = `SELECT NULL::text, pg_catalog.pg_is_in_recovery(), 0::bigint, NULL::text`
	insufficientPrivs  = "42501"
)

// ReadPosition reads where the server stands. A role that may not read the control
// file's functions (some managed services revoke them) gets a position without
// System; a server that refuses the WAL functions too, a position with no Timeline
// (which Before never finds behind).
func ReadPosition(ctx context.Context, query QueryFunc) (Position, error) {
	p, _, err := readPosition(ctx, query, "")
	return p, err
}

// readPosition is ReadPosition with more columns after the position's (extra: ", "
// and their expressions), returned as they were read.
func readPosition(ctx context.Context, query QueryFunc, extra string) (Position, []any, error) {
	rows, err := query(ctx, positionSQL+extra)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == insufficientPrivs {
		rows, err = query(ctx, positionNoSysSQL+extra)
	}
	if errors.As(err, &pgErr) {
		// The server refused a WAL or control function (its error, not a lost
		// connection): where it stands is unknown.
		rows, err = query(ctx, positionUnknownSQL+extra)
	}
	if err != nil {
		return Position{}, nil, err
	}
	if len(rows) != 1 || len(rows[0]) < 4 {
		return Position{}, nil, fmt.Errorf("pgcatalog: position query returned %v", rows)
	}
	var p Position
	r := rows[0]
	if s, ok := r[0].(string); ok {
		p.System = s
	}
	p.Standby, _ = r[1].(bool)
	switch t := r[2].(type) {
	case int64:
		p.Timeline = t
	case int32:
		p.Timeline = int64(t)
	}
	if s, ok := r[3].(string); ok {
		if p.LSN, err = ParseLSN(s); err != nil {
			return Position{}, nil, err
		}
	}
	return p, r[4:], nil
}

// ParseLSN reads a pg_lsn's text form ("16/B374D848").
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("pgcatalog: %q is not a WAL position", s)
	}
	return h<<32 | l, nil
}
