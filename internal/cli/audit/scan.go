package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// scan reads every protected relation in one snapshot.
func (a *auditor) scan(ctx context.Context, rep *auditReport, rels []relation) error {
	tx, err := a.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var version int
	if err := tx.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return err
	}
	rep.Tables = []auditTable{}
	for _, r := range rels {
		if r.kind == "p" {
			continue // no rows of its own: its partitions follow
		}
		t, err := a.scanRelation(ctx, tx, r, rep.Counter, version >= 140000)
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.name, err)
		}
		rep.Tables = append(rep.Tables, t)
		rep.RowsAbove += t.Above
		rep.NullEpochs += t.NullEpochs
		rep.OldFormat += t.OldFormat
		rep.LaterTimeline += t.LaterTimeline
		if t.Highest != nil && *t.Highest > rep.Highest {
			rep.Highest = *t.Highest
		}
	}
	return tx.Commit(ctx)
}

// scanRelation counts r's rows: all of them, those above the counter, those with a
// NULL epoch, an epoch of the format before timelines or one of a later timeline
// than the server's; and it keeps the highest epoch.
func (a *auditor) scanRelation(ctx context.Context, tx pgx.Tx, r relation, c auditCounter, tidRange bool) (auditTable, error) {
	col := sqlident.Quote(r.table.EpochColumn)
	t := auditTable{Table: r.name, PolicyName: r.table.QualifiedName.String(), EpochColumn: r.table.EpochColumn, Examples: []auditExample{}}
	var pages int64
	if err := tx.QueryRow(ctx, "SELECT pg_relation_size($1::oid::regclass) / current_setting('block_size')::bigint", r.oid).Scan(&pages); err != nil {
		return t, err
	}
	batch := int64(a.batchPages)
	batched := tidRange && r.kind == "r" && pages > batch
	if batched {
		fmt.Fprintf(a.progress, "audit: %s: %d pages, reading in batches of %d\n", r.name, pages, batch)
	} else {
		fmt.Fprintf(a.progress, "audit: %s: reading\n", r.name)
	}
	// $1 the counter, $2 the end of the old format, $3 the floor of the next timeline.
	agg := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE %[1]s > $1), max(%[1]s)::bigint, count(*) FILTER (WHERE %[1]s IS NULL),
	count(*) FILTER (WHERE %[1]s < $2), count(*) FILTER (WHERE %[1]s >= $3),
	count(*) FILTER (WHERE %[1]s > $1 AND %[1]s >= $3), coalesce(max(%[1]s) FILTER (WHERE %[1]s > $1 AND %[1]s < $3), 0)::bigint
FROM ONLY %[2]s`, col, r.name)
	later := floorOf(c.Timeline + 1)
	run := func(where string) error {
		var n, above, nulls, old, late, lateAbove, fixable int64
		var highest *int64
		if err := tx.QueryRow(ctx, agg+where, c.Value, oldFormatEnd, later).Scan(&n, &above, &highest, &nulls, &old, &late, &lateAbove, &fixable); err != nil {
			return err
		}
		t.Scanned += n
		t.Above += above
		t.NullEpochs += nulls
		t.OldFormat += old
		t.LaterTimeline += late
		t.laterAbove += lateAbove
		t.highestOnTimeline = max(t.highestOnTimeline, fixable)
		if highest != nil && (t.Highest == nil || *highest > *t.Highest) {
			t.Highest = highest
		}
		return nil
	}
	start := time.Now()
	if !batched {
		if err := run(""); err != nil {
			return t, err
		}
	} else {
		for lo := int64(0); lo < pages; lo += batch {
			where := fmt.Sprintf(" WHERE ctid >= '(%d,0)'::tid", lo)
			if lo+batch < pages {
				where += fmt.Sprintf(" AND ctid < '(%d,0)'::tid", lo+batch)
			} // the last batch is open-ended: the table may have grown
			if err := run(where); err != nil {
				return t, err
			}
			done := min(lo+batch, pages)
			fmt.Fprintf(a.progress, "audit: %s: %3d%% (%d/%d pages), %d rows, %d above the counter so far\n",
				r.name, done*100/pages, done, pages, t.Scanned, t.Above)
		}
	}
	fmt.Fprintf(a.progress, "audit: %s: %d rows in %v, %d above the counter, %d with a NULL epoch\n",
		r.name, t.Scanned, time.Since(start).Round(time.Millisecond), t.Above, t.NullEpochs)
	if t.Above > 0 && a.examples > 0 {
		key, err := keyExpr(ctx, tx, r.oid)
		if err != nil {
			return t, err
		}
		if t.Examples, err = examples(ctx, tx, fmt.Sprintf("SELECT %[1]s, %[2]s::bigint FROM ONLY %[3]s WHERE %[2]s > $1 ORDER BY %[2]s DESC LIMIT %[4]d",
			key, col, r.name, a.examples), c.Value); err != nil {
			return t, err
		}
	}
	return t, nil
}

type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// examples runs a query for rows as (key, epoch).
func examples(ctx context.Context, q querier, sql string, args ...any) ([]auditExample, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (auditExample, error) {
		var e auditExample
		err := row.Scan(&e.Key, &e.Epoch)
		return e, err
	})
	if out == nil {
		out = []auditExample{}
	}
	return out, err
}

// keyExpr is an expression naming a row of the table oid: its primary key columns,
// or its ctid.
func keyExpr(ctx context.Context, q querier, oid uint32) (string, error) {
	rows, err := q.Query(ctx, `
		SELECT a.attname::text FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = $1 AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, oid)
	if err != nil {
		return "", err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	if len(cols) == 0 {
		return "'ctid=' || ctid::text", nil
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s || coalesce(%s::text, 'NULL')", sqlident.Literal(sqlident.Quote(c)+"="), sqlident.Quote(c))
	}
	return "concat_ws(', ', " + strings.Join(parts, ", ") + ")", nil
}
