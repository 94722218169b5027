package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

func (g guardScript) applyInstall(ctx context.Context, conn *pgx.Conn, stdout io.Writer) error {
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return err
	}
	if version < 130000 {
		return fmt.Errorf("the guard needs PostgreSQL 13 or later; the server is %d.%d", version/10000, version%10000)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, g.lockTimeoutSQL()); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, guardSetupSQL); err != nil {
		return fmt.Errorf("installing the guard's functions: %w", err)
	}
	type guarded struct {
		policyName, column string
		relations          []string
	}
	var report []guarded
	for _, c := range g.calls() {
		var schema any
		if c.schema != "" {
			schema = c.schema
		}
		rows, err := tx.Query(ctx, "SELECT relation, kind FROM sqlfence.install_guard($1, $2, $3, $4)", schema, c.name, c.column, c.insert)
		if err != nil {
			return installError(c, err)
		}
		var rels []string
		for rows.Next() {
			var rel, kind string
			if err := rows.Scan(&rel, &kind); err != nil {
				return err
			}
			if kind != "table" {
				rel += " (" + kind + ")"
			}
			rels = append(rels, rel)
		}
		if err := rows.Err(); err != nil {
			return installError(c, err)
		}
		report = append(report, guarded{c.table.QualifiedName.String(), c.column, rels})
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	ops := "INSERT, UPDATE, DELETE and TRUNCATE"
	if !g.insert {
		ops = "UPDATE, DELETE and TRUNCATE"
	}
	fmt.Fprintf(stdout, "sqlfence guard installed in %s (one transaction):\n", cmdutil.DescribeTarget(conn.Config()))
	for _, r := range report {
		name := fmt.Sprintf("%s (%s):", r.policyName, sqlident.Quote(r.column))
		for i, rel := range r.relations {
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(stdout, "  %-36s %s\n", name, rel)
		}
	}
	fmt.Fprintf(stdout, `%s on these tables now fail unless a statement
of the sqlfence driver fenced them, or the session ran SELECT sqlfence.override('<reason>')
in its transaction (logged in sqlfence.override_log). Writes made by triggers, foreign-key
actions, rules and functions fail, in the driver's sessions too. An UPDATE that lowers an
epoch fails.
Remove the guard with: sqlfence guard --drop --apply --dsn ...
`, ops)
	g.reportVersion(ctx, conn, stdout)
	g.reportAlways(ctx, conn, stdout)
	g.warnCatalog(ctx, conn, stdout)
	return nil
}

// installError is install_guard's error for one policy entry. The guard's own
// errors already say "sqlfence guard: …", as the command's line does: their message
// and hint are given once, with the policy line.
func installError(c guardCall, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Message, "sqlfence guard: ") {
		msg := fmt.Sprintf("%s (policy line %d) [%s]", strings.TrimPrefix(pe.Message, "sqlfence guard: "), c.table.Line, pe.Code)
		if pe.Hint != "" {
			msg += ": " + pe.Hint
		}
		return errors.New(msg)
	}
	return fmt.Errorf("guarding %s (policy line %d): %w", c.table.QualifiedName, c.table.Line, err)
}

// notAlwaysSQL lists the guard's triggers and event triggers that do not fire in
// every replication role (not ENABLE ALWAYS): disabled, or enabled for origin or
// replica sessions only, by hand since the install.
const notAlwaysSQL = `
SELECT 'trigger ' || quote_ident(g.tgname) || ' on ' || g.tgrelid::regclass::text || ' (' ||
       CASE g.tgenabled WHEN 'D' THEN 'disabled' WHEN 'R' THEN 'replica sessions only' ELSE 'origin sessions only' END || ')'
FROM pg_trigger g
WHERE g.tgname IN ('sqlfence_guard', 'sqlfence_guard_epoch') AND g.tgenabled <> 'A'
UNION ALL
SELECT 'event trigger ' || quote_ident(e.evtname) || ' (' ||
       CASE e.evtenabled WHEN 'D' THEN 'disabled' WHEN 'R' THEN 'replica sessions only' ELSE 'origin sessions only' END || ')'
FROM pg_event_trigger e
WHERE e.evtname IN ('sqlfence_catalog_ddl', 'sqlfence_catalog_drop') AND e.evtenabled <> 'A'
ORDER BY 1`

// reportAlways warns about the guard's triggers that do not fire in every session:
// with session_replication_role = replica (a role or database default reaches every
// session) a trigger that is not ENABLE ALWAYS does not fire. The install enables them
// all; this reads back what holds.
func (g guardScript) reportAlways(ctx context.Context, conn *pgx.Conn, stdout io.Writer) {
	rows, err := conn.Query(ctx, notAlwaysSQL)
	if err != nil {
		fmt.Fprintf(stdout, "\nwarning: could not check that the guard's triggers fire in every replication role: %v\n", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		fmt.Fprintf(stdout, "\nwarning: could not check that the guard's triggers fire in every replication role: %v\n", err)
		return
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(stdout, "\nwarning [SF524]: %d of the guard's triggers do not fire in every replication role (ENABLE ALWAYS), so sessions with\n"+
		"session_replication_role = replica pass them, and a connector refuses fenced writes until they do:\n", len(names))
	for _, n := range names {
		fmt.Fprintf(stdout, "  %s\n", n)
	}
	fmt.Fprintf(stdout, "Run sqlfence guard --apply again as a superuser, or ALTER TABLE … ENABLE ALWAYS TRIGGER …; ALTER EVENT TRIGGER … ENABLE ALWAYS.\n")
}

// reportVersion says whether the catalog version is live: without its event triggers
// (they need a superuser) a connector under resolve: catalog refuses fenced writes
// unless its policy sets catalog_refresh.
func (g guardScript) reportVersion(ctx context.Context, conn *pgx.Conn, stdout io.Writer) {
	v, err := pgcatalog.Version(ctx, cmdutil.QueryFunc(conn))
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "\nwarning: could not read the catalog version: %v\n", err)
	case v.Installed():
		fmt.Fprintf(stdout, "The catalog version (%d) moves on with every DDL statement of any session; the driver's fenced\n"+
			"statements carry it, and the guard refuses those decided before DDL they did not see (SF005).\n", v.Version)
	default:
		fmt.Fprintf(stdout, "\nwarning [SF524]: the catalog version's event triggers are missing (they need a superuser): DDL of\n"+
			"other sessions does not reach the driver, which refuses fenced writes unless the policy sets catalog_refresh.\n"+
			"Run this again as a superuser.\n")
	}
}

// warnCatalog reports what in the catalog writes protected tables from inside the
// database, where no epoch reaches: foreign keys that cascade into them, triggers and
// rules whose code writes them, triggers and rules on them that can change or redirect
// their rows. The guard rejects their writes to protected tables (the statements that
// fire them fail); the driver refuses those statements under resolve: catalog.
func (g guardScript) warnCatalog(ctx context.Context, conn *pgx.Conn, stdout io.Writer) {
	findings, err := g.policy.CheckCatalog(ctx, cmdutil.QueryFunc(conn))
	if err != nil {
		fmt.Fprintf(stdout, "\nwarning: could not check the catalog for foreign keys, triggers and rules that write protected tables: %v\n", err)
		return
	}
	if len(findings) == 0 {
		return
	}
	fmt.Fprintf(stdout, "\nwarning: %d %s in the database %s protected tables where no epoch reaches, or change their rows.\n"+
		"The guard rejects their writes to protected tables, so the statements that fire them fail (a BEFORE trigger's\n"+
		"change to the row being written is not such a write); with `resolve: catalog` the driver refuses those\n"+
		"statements before sending them:\n",
		len(findings), cmdutil.Plural(len(findings), "object", "objects"), cmdutil.Plural(len(findings), "writes", "write"))
	for _, f := range findings {
		if f.Kind == "policy" {
			fmt.Fprintf(stdout, "  warning [%s]: policy line %d: %s\n", f.Code, f.Line, f.Message)
			continue
		}
		fmt.Fprintf(stdout, "  warning [%s]: %s %s on %s: %s\n", f.Code, f.Kind, sqlident.Quote(f.Name), f.Relation, f.Message)
	}
}

func (g guardScript) applyDrop(ctx context.Context, conn *pgx.Conn, stdout io.Writer) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var rels []string
	rows, err := tx.Query(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_trigger g
		JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE g.tgname = 'sqlfence_guard' ORDER BY 1`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return err
		}
		rels = append(rels, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var logRows int64 = -1
	var hasLog bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('sqlfence.override_log') IS NOT NULL`).Scan(&hasLog); err != nil {
		return err
	}
	if hasLog {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM sqlfence.override_log`).Scan(&logRows); err != nil {
			return err
		}
	}
	script := g.lockTimeoutSQL() + guardDropSQL
	if !g.keepLog {
		script += guardDropLogSQL
	}
	if _, err := tx.Exec(ctx, script); err != nil {
		return fmt.Errorf("removing the guard: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if len(rels) == 0 {
		fmt.Fprintf(stdout, "sqlfence guard: no guarded tables in %s\n", cmdutil.DescribeTarget(conn.Config()))
	} else {
		fmt.Fprintf(stdout, "sqlfence guard removed from %s in %s\n", strings.Join(rels, ", "), cmdutil.DescribeTarget(conn.Config()))
	}
	switch {
	case !hasLog:
	case g.keepLog:
		fmt.Fprintf(stdout, "kept sqlfence.override_log (%d %s)\n", logRows, cmdutil.Plural(int(logRows), "row", "rows"))
	default:
		fmt.Fprintf(stdout, "dropped sqlfence.override_log (%d %s) and the sqlfence schema's guard functions\n", logRows, cmdutil.Plural(int(logRows), "row", "rows"))
	}
	return nil
}
