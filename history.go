// A connector never goes back in time: it remembers where the servers it used stood in
// their cluster's history (pgcatalog.Position), and refuses a new session on a server
// behind that — the old primary restarted after a failover, a standby promoted while
// it lagged — or on a server of another cluster. With asynchronous replication the old
// primary's last commits are not in the new timeline: a write there is lost, and a
// claim made there hands out an epoch the new primary issues again.

package sqlfence

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// history is one connector's memory of its servers' positions, shared by every
// session it opens. It only moves forward.
type history struct {
	mu sync.Mutex
	// system is the first system identifier a session could read ("" until then).
	system string
	// high is the newest position seen: the highest timeline, and on it the
	// furthest WAL position a primary had written (0 while only standbys were seen
	// on it). Standby is always false: it is a summary, compared as a primary's.
	high pgcatalog.Position
	// from is the host of the DSN high was read on by the probe before the first
	// session (probe.go), "" once a session moved high on, or when no probe set it.
	from string
	// timeline is high.Timeline, read without the lock before each statement of a
	// session accepted on a primary (sessionCheck.stale).
	timeline atomic.Int64
}

// admit judges a new session's position against what the connector has seen and,
// when the session may be used, records it. The judgment and the record are one step
// under the lock, so two sessions that arrive together are judged in some order.
func (h *history) admit(p pgcatalog.Position) *Error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.System != "" && h.system != "" && p.System != h.system {
		return otherClusterError(p, h.system, h.high)
	}
	if p.Timeline != 0 && p.Before(h.high) {
		used := ""
		if h.from != "" {
			used = "this connector read on " + h.from + ", another host of its DSN (a fresh connector reads them before it judges a session)"
		}
		return behindError(p, h.high, used)
	}
	if p.System != "" && h.system == "" {
		h.system = p.System
	}
	if h.record(p) {
		h.from = ""
	}
	return nil
}

// record makes p part of the history (under h.mu) and reports whether it moved high.
func (h *history) record(p pgcatalog.Position) bool {
	switch {
	case p.Timeline == 0:
		// Unknown (a standby whose role may not read its timeline): nothing learnt.
	case p.Timeline > h.high.Timeline:
		h.high = pgcatalog.Position{Timeline: p.Timeline}
		if !p.Standby {
			h.high.LSN = p.LSN
		}
		h.timeline.Store(p.Timeline)
		return true
	case !p.Standby && p.LSN > h.high.LSN:
		h.high.LSN = p.LSN // the same timeline, further on
		return true
	}
	return false
}

// seed starts the history from the positions the probe read on the DSN's other
// hosts (probe.go): the newest of them, and the host it was read on. Hosts of more
// than one cluster seed nothing: which is the connector's cannot be told; the systems
// are returned for the log.
func (h *history) seed(ps []probed) (mixed string) {
	system := ""
	for _, pr := range ps {
		if pr.pos.System == "" {
			continue
		}
		if system != "" && pr.pos.System != system {
			return system + ", " + pr.pos.System
		}
		system = pr.pos.System
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if system != "" && h.system != "" && system != h.system {
		return h.system + ", " + system
	}
	if system != "" {
		h.system = system
	}
	for _, pr := range ps {
		if h.record(pr.pos) {
			h.from = pr.host
		}
	}
	return ""
}

// highest is the newest position seen, for messages.
func (h *history) highest() pgcatalog.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.high
}

// sessionCheck is what a session accepted on a primary is checked on before each
// statement: a primary's timeline never changes, so once the connector has seen a
// newer one this session's server is the old primary (a split brain: both up), and
// its writes are not in the cluster's history.
type sessionCheck struct {
	h   *history
	pos pgcatalog.Position
}

// stale is nil while the session may be used (one atomic load), else the refusal.
func (c *sessionCheck) stale() *Error {
	if c == nil || c.h.timeline.Load() <= c.pos.Timeline {
		return nil
	}
	return behindError(c.pos, c.h.highest(), "this connector has used since this session was opened")
}

// describeHigh spells the newest position seen for a message.
func describeHigh(h pgcatalog.Position) string {
	if h.LSN == 0 {
		return fmt.Sprintf("timeline %d", h.Timeline)
	}
	return fmt.Sprintf("timeline %d at %X/%X", h.Timeline, h.LSN>>32, uint32(h.LSN))
}

const historyFix = "fence the old node so that it cannot come back as a primary (Patroni's watchdog; never restart a failed primary without pg_rewind, or reinitialise it as a standby of the new one); " +
	"if the cluster was changed on purpose (restored from a backup, rebuilt), open a new connector or pool"

// behindError is the refusal of a session on p, behind high. used says when the
// connector saw high ("" for before the session: "this connector already used").
func behindError(p, high pgcatalog.Position, used string) *Error {
	if used == "" {
		used = "this connector already used"
	}
	var what string
	switch {
	case p.Standby:
		what = "a standby that has not followed the promotion to the newer timeline (it may still replicate from the old primary), whose reads miss what was written since"
	default:
		what = "an old primary come back after a failover: its last commits are not in the newer timeline's history, so a write there is lost and a claim made there hands out an epoch the new primary issues again"
	}
	return &Error{Kind: ErrRefused, Code: rulecode.BehindHistory,
		Reason: fmt.Sprintf("the server is a %s, behind %s, which %s: it is %s; so no statement runs on this session", p, describeHigh(high), used, what),
		Fix:    historyFix}
}

func otherClusterError(p pgcatalog.Position, system string, high pgcatalog.Position) *Error {
	return &Error{Kind: ErrRefused, Code: rulecode.OtherCluster,
		Reason: fmt.Sprintf("the server (system identifier %s, a %s) belongs to another cluster than the servers this connector already used (system identifier %s, %s): a restore, a rebuilt cluster, or a DSN that points elsewhere; the epochs and claims of one cluster say nothing about another's rows, so no statement runs on this session",
			p.System, p, system, describeHigh(high)),
		Fix: "point the DSN back at the cluster the connector was using; if the cluster was changed on purpose (restored from a backup, rebuilt), open a new connector or pool"}
}

// earlyCommitError is the refusal of a session whose synchronous_commit is off or
// local, from whatever set it.
func earlyCommitError(s pgcatalog.Session) *Error {
	why := "a commit is acknowledged before its WAL is flushed, so a crash or a failover can lose it"
	if s.SynchronousCommit == "local" {
		why = "a commit is acknowledged once it is flushed on the primary, before the synchronous standbys have it, so a failover can lose it"
	}
	return &Error{Kind: ErrRefused, Code: rulecode.SessionCommit,
		Reason: "the session's synchronous_commit is " + s.SynchronousCommit + " (a startup parameter, a role or database default, or the server's configuration): " + why +
			", and a claim lost that way lets its epoch be issued again to another holder while the first one's writes stand; so no statement runs on this session",
		Fix: "remove the setting where it comes from: the DSN's options (-c synchronous_commit=…), a role or database default (ALTER ROLE … RESET synchronous_commit, ALTER DATABASE … RESET synchronous_commit), or the server's configuration, whose default must be on, remote_apply or remote_write"}
}

// replicationRoleError is the refusal of a session whose session_replication_role
// is not origin, from whatever set it.
func replicationRoleError(s pgcatalog.Session) *Error {
	return &Error{Kind: ErrRefused, Code: rulecode.ReplicationRole,
		Reason: "the session's session_replication_role is " + s.ReplicationRole + " (a startup parameter, a role or database default, or the server's configuration): " +
			"in replica mode ordinary triggers, rules and foreign-key actions do not fire, so a statement does something else than sqlfence decided from the catalog, " +
			"and a database guard whose triggers are not enabled always does not check it; so no statement runs on this session",
		Fix: "remove the setting where it comes from: the DSN's options (-c session_replication_role=…), a role or database default (ALTER ROLE … IN DATABASE … RESET session_replication_role, ALTER DATABASE … RESET session_replication_role), or the server's configuration; " +
			"replication tools that need replica mode connect without sqlfence"}
}

// Session is front.Fence.Session: one query on a new session, before its first
// statement (and before the catalog is read on it).
func (f *fence) Session(ctx context.Context, q front.Querier, conn *pgx.Conn) (func() error, *engine.Defaults, error) {
	chk, def, err := f.session(ctx, q, conn)
	if err != nil {
		return nil, nil, err
	}
	if chk == nil {
		return nil, def, nil
	}
	return func() error {
		if e := chk.stale(); e != nil {
			f.refused(ctx, e)
			return e
		}
		return nil
	}, def, nil
}

// session reads where q's server stands, its synchronous_commit, its session_replication_role and the defaults
// of its pinned settings, and judges the first three. The check it returns is nil
// where nothing is to be checked per statement (a standby, an unknown timeline); the
// defaults are what each statement's resets are judged against (Decision.InSession).
// conn is q's pgx connection (nil on another driver): a fresh connector first reads
// the other hosts of its DSN (probe.go).
func (f *fence) session(ctx context.Context, q front.Querier, conn *pgx.Conn) (*sessionCheck, *engine.Defaults, error) {
	f.probeHosts(ctx, conn)
	s, err := pgcatalog.ReadSession(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlfence: reading where the server stands in its cluster's history failed, so the session was not used: %w", err)
	}
	if !s.Standby && s.EarlyCommit() {
		e := earlyCommitError(s)
		f.refused(ctx, e)
		return nil, nil, e
	}
	if s.NotOrigin() {
		e := replicationRoleError(s)
		f.refused(ctx, e)
		return nil, nil, e
	}
	if e := f.history.admit(s.Position); e != nil {
		f.refused(ctx, e)
		return nil, nil, e
	}
	def := engine.NewDefaults(s.Defaults)
	if s.Standby || s.Timeline == 0 {
		return nil, def, nil
	}
	return &sessionCheck{h: &f.history, pos: s.Position}, def, nil
}

// refused tells the observer of a session refused, in shadow mode too: like a session
// that reads text differently, a server behind the connector's history is refused
// whatever the policy's enforce says.
func (f *fence) refused(ctx context.Context, e *Error) {
	if en := f.current(); en.observing {
		en.emit(ctx, Event{Outcome: OutcomeRefuse, Err: e}, false)
	}
}
