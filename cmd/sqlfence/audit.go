package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

const auditUsage = `Usage: sqlfence audit --policy sqlfence.yaml --dsn DSN [--sequence NAME | --jobs-table NAME [--epoch-column COL]] [--fix]

Finds rows of the protected tables whose stored epoch is above the claim counter — a
restored backup, a test, a manual fix. Such a row fences every write until the
counter passes its epoch: no claim has been handed that epoch yet, so every worker is
"superseded" on it. Rows with a NULL epoch are reported too: no fenced write ever
matches them.

The claim counter is either
  --sequence NAME      a sequence every claim draws its epoch from (the claim
                       package's GlobalEpoch; the default is sqlfence_epoch), or
  --jobs-table NAME    a jobs table whose per-job counter is --epoch-column
                       (default lease_epoch); rows are compared with the highest
                       epoch of any job.

--fix moves the counter past the highest stored epoch, in one transaction that holds
off concurrent claims, and prints what it changed; it never lowers a counter and never
touches a protected row (lowering a row's epoch would let a superseded worker write it
again). For a sequence it is setval; for a jobs table it raises every job's epoch below
the highest stored epoch to it — safe, since epochs only grow, but a job claimed at that
moment loses its claim (its renewal and completion are refused) and runs again once its
lease expires, so prefer running it while the workers are stopped.

Large tables are read in batches of --batch-pages pages in one snapshot, with progress
on stderr.

Exit status: 0 nothing found (or everything fixed), 1 rows above the counter (without
--fix) or rows with a NULL epoch, 2 usage, policy or database error.

Flags:
`

type auditCounter struct {
	Kind   string `json:"kind"` // sequence or jobs_table
	Name   string `json:"name"`
	Column string `json:"column,omitempty"`
	Value  int64  `json:"value"` // the highest epoch handed out so far

	oid       uint32
	increment int64
	max       int64
}

type auditExample struct {
	Key   string `json:"key"`
	Epoch int64  `json:"epoch"`
}

type auditTable struct {
	Table       string         `json:"table"`
	PolicyName  string         `json:"policy_name"`
	EpochColumn string         `json:"epoch_column"`
	Scanned     int64          `json:"rows_scanned"`
	Above       int64          `json:"rows_above"`
	Highest     *int64         `json:"highest_epoch"`
	NullEpochs  int64          `json:"null_epochs"`
	Examples    []auditExample `json:"examples"`
}

type auditFix struct {
	Applied    bool   `json:"applied"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
	JobsRaised int64  `json:"jobs_raised,omitempty"`
	Note       string `json:"note,omitempty"`
}

type auditReport struct {
	Counter    auditCounter `json:"counter"`
	Tables     []auditTable `json:"tables"`
	RowsAbove  int64        `json:"rows_above"`
	Highest    int64        `json:"highest_epoch"`
	NullEpochs int64        `json:"null_epochs"`
	Fix        *auditFix    `json:"fix,omitempty"`
}

func runAudit(args []string, stdout, stderr io.Writer) int {
	f := newFlags("audit", auditUsage)
	policyPath := f.String("policy", "", "policy file (default $SQLFENCE_POLICY)")
	dsn := f.String("dsn", "", "the database to audit")
	sequence := f.String("sequence", "", "the sequence claims draw epochs from (default sqlfence_epoch, unless --jobs-table)")
	jobsTable := f.String("jobs-table", "", "a jobs table with a per-job epoch counter, instead of --sequence")
	epochColumn := f.String("epoch-column", "lease_epoch", "the jobs table's epoch column, with --jobs-table")
	fix := f.Bool("fix", false, "move the counter past the highest stored epoch")
	asJSON := f.Bool("json", false, "print the report as JSON")
	examples := f.Int("examples", 5, "rows to show per table (by key)")
	batchPages := f.Int("batch-pages", 16384, "pages read per batch on large tables (progress is shown per batch)")
	quiet := f.Bool("quiet", false, "no progress on stderr")
	connectTimeout := f.Duration("connect-timeout", defaultConnectTimeout, "how long to wait for the database to answer")
	lockTimeout := f.Duration("lock-timeout", 10*time.Second, "with --fix: how long to wait to hold off claims")
	pos, code, done := f.parse(args, stdout, stderr)
	if done {
		return code
	}
	switch {
	case len(pos) > 0:
		return f.usageError(stderr, "unexpected argument %q", pos[0])
	case *sequence != "" && *jobsTable != "":
		return f.usageError(stderr, "give --sequence or --jobs-table, not both")
	case *dsn == "":
		return f.usageError(stderr, "no database: give --dsn postgres://user@host:5432/dbname")
	case *examples < 0 || *batchPages < 1:
		return f.usageError(stderr, "--examples must be >= 0 and --batch-pages >= 1")
	case *lockTimeout <= 0:
		return f.usageError(stderr, "--lock-timeout must be positive")
	}
	pol, err := loadPolicy(*policyPath)
	if err != nil {
		return fail(stderr, "audit", err)
	}
	ctx := context.Background()
	conn, err := connect(ctx, *dsn, *connectTimeout)
	if err != nil {
		return fail(stderr, "audit", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	progress := stderr
	if *quiet {
		progress = io.Discard
	}
	a := &auditor{conn: conn, progress: progress, examples: *examples, batchPages: *batchPages, lockTimeout: *lockTimeout}
	var rep auditReport
	if *jobsTable != "" {
		rep.Counter, err = a.jobsCounter(ctx, *jobsTable, *epochColumn)
	} else {
		name := *sequence
		if name == "" {
			name = "sqlfence_epoch"
		}
		rep.Counter, err = a.sequenceCounter(ctx, name, *sequence == "")
	}
	if err != nil {
		return fail(stderr, "audit", err)
	}
	rels, err := resolveTables(ctx, conn, pol)
	if err != nil {
		return fail(stderr, "audit", err)
	}
	if err := a.scan(ctx, &rep, rels); err != nil {
		return fail(stderr, "audit", err)
	}
	if *fix && rep.RowsAbove > 0 {
		if rep.Fix, err = a.fix(ctx, &rep.Counter, rep.Highest); err != nil {
			return fail(stderr, "audit", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(rep)
	} else {
		writeAuditText(stdout, &rep, *fix)
	}
	switch {
	case rep.RowsAbove > 0 && (rep.Fix == nil || !rep.Fix.Applied), rep.NullEpochs > 0:
		return exitFindings
	}
	return exitOK
}

type auditor struct {
	conn        *pgx.Conn
	progress    io.Writer
	examples    int
	batchPages  int
	lockTimeout time.Duration
}

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
		return c, fmt.Errorf("jobs table %s has no column %s (--epoch-column)", c.Name, quoteIdent(column))
	case "bigint", "integer", "smallint":
	default:
		return c, fmt.Errorf("%s.%s is %s, not an integer epoch column", c.Name, quoteIdent(column), typ)
	}
	if err := a.conn.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(max(%s), 0)::bigint FROM %s", quoteIdent(column), c.Name)).Scan(&c.Value); err != nil {
		return c, fmt.Errorf("reading %s.%s: %w", c.Name, quoteIdent(column), err)
	}
	return c, nil
}

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
		t, err := a.scanRelation(ctx, tx, r, rep.Counter.Value, version >= 140000)
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.name, err)
		}
		rep.Tables = append(rep.Tables, t)
		rep.RowsAbove += t.Above
		rep.NullEpochs += t.NullEpochs
		if t.Highest != nil && *t.Highest > rep.Highest {
			rep.Highest = *t.Highest
		}
	}
	return tx.Commit(ctx)
}

func (a *auditor) scanRelation(ctx context.Context, tx pgx.Tx, r relation, counter int64, tidRange bool) (auditTable, error) {
	col := quoteIdent(r.table.EpochColumn)
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
	agg := fmt.Sprintf("SELECT count(*), count(*) FILTER (WHERE %[1]s > $1), max(%[1]s) FILTER (WHERE %[1]s > $1), count(*) FILTER (WHERE %[1]s IS NULL) FROM ONLY %[2]s",
		col, r.name)
	run := func(where string) error {
		var n, above, nulls int64
		var highest *int64
		if err := tx.QueryRow(ctx, agg+where, counter).Scan(&n, &above, &highest, &nulls); err != nil {
			return err
		}
		t.Scanned += n
		t.Above += above
		t.NullEpochs += nulls
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
		key, err := keyExpr(ctx, tx, r)
		if err != nil {
			return t, err
		}
		rows, err := tx.Query(ctx, fmt.Sprintf("SELECT %[1]s, %[2]s FROM ONLY %[3]s WHERE %[2]s > $1 ORDER BY %[2]s DESC LIMIT %[4]d",
			key, col, r.name, a.examples), counter)
		if err != nil {
			return t, err
		}
		for rows.Next() {
			var e auditExample
			if err := rows.Scan(&e.Key, &e.Epoch); err != nil {
				rows.Close()
				return t, err
			}
			t.Examples = append(t.Examples, e)
		}
		if err := rows.Err(); err != nil {
			return t, err
		}
	}
	return t, nil
}

// keyExpr is an expression naming a row: its primary key columns, or its ctid.
func keyExpr(ctx context.Context, tx pgx.Tx, r relation) (string, error) {
	rows, err := tx.Query(ctx, `
		SELECT a.attname::text FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = $1 AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, r.oid)
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
		parts[i] = fmt.Sprintf("%s || coalesce(%s::text, 'NULL')", quoteLiteral(quoteIdent(c)+"="), quoteIdent(c))
	}
	return "concat_ws(', ', " + strings.Join(parts, ", ") + ")", nil
}

// fix moves the counter to highest, holding off claims while it does.
func (a *auditor) fix(ctx context.Context, c *auditCounter, highest int64) (*auditFix, error) {
	tx, err := a.conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+cmdutil.PGDuration(a.lockTimeout)+"'"); err != nil {
		return nil, err
	}
	out := &auditFix{From: c.Value, To: highest}
	switch c.Kind {
	case "sequence":
		if highest > c.max {
			return nil, fmt.Errorf("the highest stored epoch %d is above the sequence %s's MAXVALUE %d", highest, c.Name, c.max)
		}
		// nextval cannot be locked out with LOCK TABLE, but ALTER SEQUENCE takes a lock
		// that conflicts with it: this no-op ALTER holds every claim off until COMMIT,
		// so the value read next cannot move before setval.
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER SEQUENCE %s INCREMENT BY %d", c.Name, c.increment)); err != nil {
			return nil, fmt.Errorf("locking the sequence %s against claims: %w", c.Name, err)
		}
		cur, err := a.sequenceValue(ctx, tx, *c)
		if err != nil {
			return nil, err
		}
		out.From = cur
		if cur >= highest {
			out.Note = fmt.Sprintf("the sequence is already at %d, past the highest stored epoch", cur)
			out.To = cur
			break
		}
		if _, err := tx.Exec(ctx, "SELECT setval($1::oid::regclass, $2, true)", c.oid, highest); err != nil {
			return nil, fmt.Errorf("moving the sequence %s: %w", c.Name, err)
		}
	case "jobs_table":
		if _, err := tx.Exec(ctx, "LOCK TABLE "+c.Name+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return nil, fmt.Errorf("locking %s against claims: %w", c.Name, err)
		}
		col := quoteIdent(c.Column)
		tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = $1 WHERE %s < $1", c.Name, col, col), highest)
		if err != nil {
			return nil, fmt.Errorf("raising %s.%s: %w", c.Name, col, err)
		}
		out.JobsRaised = tag.RowsAffected()
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	out.Applied = true
	c.Value = out.To
	return out, nil
}

func writeAuditText(w io.Writer, rep *auditReport, fix bool) {
	c := rep.Counter
	from := c.Value
	if rep.Fix != nil {
		from = rep.Fix.From
	}
	switch c.Kind {
	case "sequence":
		fmt.Fprintf(w, "claim counter: sequence %s, highest epoch handed out %d\n", c.Name, from)
	default:
		fmt.Fprintf(w, "claim counter: %s.%s (per-job epochs), highest epoch of any job %d\n", c.Name, quoteIdent(c.Column), from)
	}
	fmt.Fprintf(w, "\n%-32s %12s %12s %14s %12s\n", "TABLE", "ROWS", "ABOVE", "HIGHEST EPOCH", "NULL EPOCH")
	for _, t := range rep.Tables {
		highest := "-"
		if t.Highest != nil {
			highest = fmt.Sprint(*t.Highest)
		}
		fmt.Fprintf(w, "%-32s %12d %12d %14s %12d\n", t.Table, t.Scanned, t.Above, highest, t.NullEpochs)
		if len(t.Examples) > 0 {
			var ex []string
			for _, e := range t.Examples {
				ex = append(ex, fmt.Sprintf("%s (epoch %d)", e.Key, e.Epoch))
			}
			more := ""
			if int64(len(t.Examples)) < t.Above {
				more = ", …"
			}
			fmt.Fprintf(w, "    %s%s\n", strings.Join(ex, "; "), more)
		}
	}
	fmt.Fprintln(w)
	if rep.RowsAbove == 0 {
		fmt.Fprintf(w, "No row holds an epoch above the counter (%d).\n", from)
	} else {
		tables := 0
		for _, t := range rep.Tables {
			if t.Above > 0 {
				tables++
			}
		}
		fmt.Fprintf(w, "%d %s in %d %s %s epochs above the counter (%d), up to %d: every write with an epoch up to %d is fenced on them.\n",
			rep.RowsAbove, cmdutil.Plural(int(rep.RowsAbove), "row", "rows"), tables, cmdutil.Plural(tables, "table", "tables"),
			cmdutil.Plural(int(rep.RowsAbove), "holds", "hold"), from, rep.Highest, rep.Highest)
	}
	if c.Kind == "jobs_table" {
		fmt.Fprintf(w, "Per-job epochs: rows are compared with the highest epoch of any job, so a row above its own job's epoch but not above %d is not found.\n", from)
	}
	switch f := rep.Fix; {
	case f != nil && f.Note != "":
		fmt.Fprintf(w, "Fixed nothing: %s.\n", f.Note)
	case f != nil && c.Kind == "sequence":
		fmt.Fprintf(w, "Fixed, in one transaction: sequence %s moved from %d to %d; the next claim gets %d. No row was changed.\n", c.Name, f.From, f.To, f.To+1)
	case f != nil:
		fmt.Fprintf(w, "Fixed, in one transaction: raised %s.%s to %d on %d %s; every job's next claim gets at least %d. No protected row was changed.\n",
			c.Name, quoteIdent(c.Column), f.To, f.JobsRaised, cmdutil.Plural(int(f.JobsRaised), "job", "jobs"), f.To+1)
		fmt.Fprintln(w, "A job that was claimed while this ran has lost its claim: its renewal and completion are refused, and it runs again once its lease expires.")
	case rep.RowsAbove > 0 && !fix:
		next := "the next claim then gets"
		if c.Kind == "jobs_table" {
			next = "every job's next claim then gets at least"
		}
		fmt.Fprintf(w, "Run with --fix to move the counter to %d; %s %d.\n", rep.Highest, next, rep.Highest+1)
	}
	if rep.NullEpochs > 0 {
		fmt.Fprintf(w, "%d %s a NULL epoch, which no fenced write ever matches (NULL < $e is never true): set it to 0 under the guard's override and make the column NOT NULL DEFAULT 0.\n",
			rep.NullEpochs, cmdutil.Plural(int(rep.NullEpochs), "row has", "rows have"))
	}
}
