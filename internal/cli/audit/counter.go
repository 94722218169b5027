package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

func (a *auditor) sequenceCounter(ctx context.Context, name string, defaulted bool) (auditCounter, error) {
	c := auditCounter{Kind: "sequence"}
	err := a.conn.QueryRow(ctx, `
		SELECT c.oid, quote_ident(ns.nspname) || '.' || quote_ident(c.relname), s.seqincrement, s.seqmax
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace JOIN pg_sequence s ON s.seqrelid = c.oid
		WHERE c.oid = to_regclass($1)`, name).Scan(&c.oid, &c.Name, &c.increment, &c.max)
	if errors.Is(err, pgx.ErrNoRows) {
		if defaulted {
			return c, fmt.Errorf("no sequence %s (the claim helpers' default): name the claim counter with --sequence NAME, or --jobs-table NAME for per-job epochs", name)
		}
		return c, fmt.Errorf("no sequence %s in the database; name the claim counter with --sequence NAME, or --jobs-table NAME for per-job epochs", name)
	}
	if err != nil {
		return c, fmt.Errorf("reading the sequence %s: %w", name, err)
	}
	if c.increment <= 0 {
		return c, fmt.Errorf("sequence %s counts down (INCREMENT %d); epochs must grow", c.Name, c.increment)
	}
	c.Value, err = a.sequenceValue(ctx, a.conn, c)
	return c, err
}

// sequenceValue is the highest epoch the sequence has handed out.
func (a *auditor) sequenceValue(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, c auditCounter) (int64, error) {
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

func (a *auditor) jobsCounter(ctx context.Context, table, column string) (auditCounter, error) {
	c := auditCounter{Kind: "jobs_table", Column: column}
	var typ string
	err := a.conn.QueryRow(ctx, `
		SELECT c.oid, quote_ident(ns.nspname) || '.' || quote_ident(c.relname),
		       coalesce((SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		                 WHERE a.attrelid = c.oid AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped), '')
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')`, table, column).Scan(&c.oid, &c.Name, &typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("no table %s in the database (--jobs-table)", table)
	}
	if err != nil {
		return c, fmt.Errorf("reading the jobs table %s: %w", table, err)
	}
	switch typ {
	case "":
		return c, fmt.Errorf("jobs table %s has no column %s (--epoch-column)", c.Name, sqlident.Quote(column))
	case "bigint", "integer", "smallint":
	default:
		return c, fmt.Errorf("%s.%s is %s, not an integer epoch column", c.Name, sqlident.Quote(column), typ)
	}
	if err := a.conn.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(max(%s), 0)::bigint FROM %s", sqlident.Quote(column), c.Name)).Scan(&c.Value); err != nil {
		return c, fmt.Errorf("reading %s.%s: %w", c.Name, sqlident.Quote(column), err)
	}
	return c, nil
}
