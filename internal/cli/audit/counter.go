package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// floorOf is the lowest epoch of timeline tl: every epoch drawn on it is above.
func floorOf(tl int64) int64 { return tl << pgcatalog.EpochShift }

// oldFormatEnd is where the epochs of the format before timelines end: every epoch
// of that format is below it, every epoch drawn on a timeline (1 or later) at or
// above it.
const oldFormatEnd = int64(1) << pgcatalog.EpochShift

// serverTimeline reads the timeline the server writes on. Only a primary has one:
// a standby is refused, since the epochs it would be compared with are drawn on the
// primary, and --fix could not move a counter there anyway.
func serverTimeline(ctx context.Context, conn *pgx.Conn) (int64, error) {
	p, err := pgcatalog.ReadPosition(ctx, cmdutil.QueryFunc(conn))
	if err != nil {
		return 0, fmt.Errorf("reading the server's timeline: %w", err)
	}
	return primaryTimeline(p)
}

func primaryTimeline(p pgcatalog.Position) (int64, error) {
	if p.Standby {
		return 0, fmt.Errorf("the server is a standby (%s, in recovery): audit must run on the primary — claims draw their epochs there, on the primary's write timeline, and --fix moves the primary's counter; give --dsn the primary", p)
	}
	// An epoch is timeline<<32 + counter in a bigint: a timeline from 2^31 on would
	// not fit (PostgreSQL counts them from 1, one per promotion).
	if p.Timeline < 1 || p.Timeline >= 1<<(63-pgcatalog.EpochShift) {
		return 0, fmt.Errorf("the server reports write timeline %d, outside what an epoch can hold (1 to %d)", p.Timeline, int64(1)<<(63-pgcatalog.EpochShift)-1)
	}
	return p.Timeline, nil
}

// onTimeline is the epoch a counter at raw hands out on timeline tl.
func onTimeline(tl, raw int64) (int64, error) {
	if raw > math.MaxInt64-floorOf(tl) {
		return 0, fmt.Errorf("the counter's value %d is too high for an epoch on timeline %d", raw, tl)
	}
	return floorOf(tl) + raw, nil
}

// notFound is the error for a counter that does not exist, with the flags that name
// one.
func notFound(what string) error {
	return fmt.Errorf("%s: name the claim counter with --sequence NAME (GlobalEpoch), --counter NAME for a counter table (CounterEpoch), or --jobs-table NAME for per-job epochs", what)
}

func (a *auditor) sequenceCounter(ctx context.Context, name string, defaulted bool, tl int64) (auditCounter, error) {
	c := auditCounter{Kind: kindSequence, Timeline: tl}
	err := a.conn.QueryRow(ctx, `
		SELECT c.oid, quote_ident(ns.nspname) || '.' || quote_ident(c.relname), s.seqincrement, s.seqmax
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace JOIN pg_sequence s ON s.seqrelid = c.oid
		WHERE c.oid = to_regclass($1)`, name).Scan(&c.oid, &c.Name, &c.increment, &c.max)
	if errors.Is(err, pgx.ErrNoRows) {
		if defaulted {
			return c, notFound(fmt.Sprintf("no sequence %s (the claim helpers' default)", name))
		}
		return c, notFound(fmt.Sprintf("no sequence %s in the database", name))
	}
	if err != nil {
		return c, fmt.Errorf("reading the sequence %s: %w", name, err)
	}
	if c.increment <= 0 {
		return c, fmt.Errorf("sequence %s counts down (INCREMENT %d); epochs must grow", c.Name, c.increment)
	}
	if c.Raw, err = a.sequenceValue(ctx, a.conn, c); err != nil {
		return c, err
	}
	c.Value, err = onTimeline(tl, c.Raw)
	return c, err
}

type queryRower interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// sequenceValue is the highest value the sequence has handed out.
func (a *auditor) sequenceValue(ctx context.Context, q queryRower, c auditCounter) (int64, error) {
	var last int64
	var called bool
	if err := q.QueryRow(ctx, "SELECT last_value, is_called FROM "+c.Name).Scan(&last, &called); err != nil {
		return 0, fmt.Errorf("reading the sequence %s: %w", c.Name, err)
	}
	if !called {
		last -= c.increment // nothing handed out yet
	}
	return last, nil
}

// table finds a table given by a flag and the type of its column, "" when it has no
// such column. A table that does not exist is an error naming the tables called
// like it.
func (a *auditor) table(ctx context.Context, flag, table, column string) (oid uint32, name, typ string, err error) {
	err = a.conn.QueryRow(ctx, `
		SELECT c.oid, quote_ident(ns.nspname) || '.' || quote_ident(c.relname),
		       coalesce((SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		                 WHERE a.attrelid = c.oid AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped), '')
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, table, column).Scan(&oid, &name, &typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", "", fmt.Errorf("no table %s in the database (%s)%s", table, flag, a.didYouMean(ctx, table))
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("reading the table %s (%s): %w", table, flag, err)
	}
	return oid, name, typ, nil
}

// didYouMean names the tables called most like name, as " (did you mean a or b?)",
// or "" when there are none (or the name does not parse).
func (a *auditor) didYouMean(ctx context.Context, name string) string {
	q, err := sqlfence.ParseQualifiedName(name)
	if err != nil {
		return ""
	}
	return similarHint(ctx, cmdutil.QueryFunc(a.conn), q.Schema, q.Name)
}

// similarHint is " (did you mean a or b?)" for the relations called most like
// schema.name (pgcatalog.Similar; unqualified when the name is), or "".
func similarHint(ctx context.Context, query pgcatalog.QueryFunc, schema, name string) string {
	similar, err := pgcatalog.Similar(ctx, query, schema, name)
	if err != nil || len(similar) == 0 {
		return "" // a hint, not worth failing for
	}
	if schema == "" {
		for i, s := range similar {
			similar[i] = s[strings.IndexByte(s, '.')+1:]
		}
		similar = slices.Compact(similar)
	}
	return " (did you mean " + strings.Join(similar, " or ") + "?)"
}

func integerType(typ string) bool {
	switch typ {
	case "bigint", "integer", "smallint":
		return true
	}
	return false
}

// counterTable reads a counter table (CounterEpoch): one row whose value each claim
// increments.
func (a *auditor) counterTable(ctx context.Context, name string, tl int64) (auditCounter, error) {
	c := auditCounter{Kind: kindCounter, Timeline: tl}
	oid, qname, typ, err := a.table(ctx, "--counter", name, "value")
	if err != nil {
		return c, err
	}
	c.oid, c.Name = oid, qname
	switch {
	case typ == "":
		return c, fmt.Errorf("%s has no column value: it is not a claim counter table (the claim helpers' CounterEpoch creates one)", c.Name)
	case !integerType(typ):
		return c, fmt.Errorf("%s.value is %s, not an integer counter", c.Name, typ)
	}
	var rows int64
	var value *int64
	if err := a.conn.QueryRow(ctx, "SELECT count(*), max(value)::bigint FROM "+c.Name).Scan(&rows, &value); err != nil {
		return c, fmt.Errorf("reading the counter %s: %w", c.Name, err)
	}
	if rows != 1 || value == nil {
		return c, fmt.Errorf("the counter table %s has %d rows, and a claim counter has one, with a value: create it with the claim helpers' Schema", c.Name, rows)
	}
	c.Raw = *value
	c.Value, err = onTimeline(tl, c.Raw)
	return c, err
}

func (a *auditor) jobsCounter(ctx context.Context, table, column string, tl int64) (auditCounter, error) {
	c := auditCounter{Kind: kindJobs, Column: column, Timeline: tl, LaterJobs: []auditExample{}}
	oid, qname, typ, err := a.table(ctx, "--jobs-table", table, column)
	if err != nil {
		return c, err
	}
	c.oid, c.Name = oid, qname
	switch {
	case typ == "":
		return c, fmt.Errorf("jobs table %s has no column %s (--epoch-column)", c.Name, sqlident.Quote(column))
	case !integerType(typ):
		return c, fmt.Errorf("%s.%s is %s, not an integer epoch column", c.Name, sqlident.Quote(column), typ)
	}
	col := sqlident.Quote(column)
	later := floorOf(tl + 1)
	if err := a.conn.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(max(%[1]s), 0)::bigint, count(*) FILTER (WHERE %[1]s >= $1) FROM %[2]s", col, c.Name), later).
		Scan(&c.Raw, &c.JobsLaterTimeline); err != nil {
		return c, fmt.Errorf("reading %s.%s: %w", c.Name, col, err)
	}
	// A job's next claim is above its own epoch and above the timeline's floor.
	c.Value = max(c.Raw, floorOf(tl))
	if c.JobsLaterTimeline > 0 && a.examples > 0 {
		key, err := keyExpr(ctx, a.conn, c.oid)
		if err != nil {
			return c, err
		}
		if c.LaterJobs, err = examples(ctx, a.conn, fmt.Sprintf("SELECT %[1]s, %[2]s FROM %[3]s WHERE %[2]s >= $1 ORDER BY %[2]s DESC LIMIT %[4]d",
			key, col, c.Name, a.examples), later); err != nil {
			return c, fmt.Errorf("reading %s.%s: %w", c.Name, col, err)
		}
	}
	return c, nil
}
