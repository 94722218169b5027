package guard

import (
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// guardOptions are the ways of guarding a table that BenchmarkGuardOptions times
// against an unguarded one: the guard as installed, its parts, and the alternatives
// to it, each named by its table, with the SQL that puts its triggers on it.
var guardOptions = []struct{ table, sql string }{
	{"opt_installed", ""},     // sqlfence guard --apply
	{"opt_plain", "SELECT 1"}, // a control: no trigger, like unguarded
	// The guard before this version, both triggers.
	{"opt_before", `CREATE TRIGGER t BEFORE UPDATE ON opt_before FOR EACH STATEMENT
		EXECUTE FUNCTION public.bench_guard_one_expression('opt_before');
		CREATE TRIGGER sqlfence_guard_epoch AFTER UPDATE ON opt_before FOR EACH ROW
		WHEN (NEW.writer_epoch < OLD.writer_epoch OR (NEW.writer_epoch IS NULL AND OLD.writer_epoch IS NOT NULL))
		EXECUTE FUNCTION sqlfence.guard_epoch('writer_epoch')`},
	// The statement trigger before this version: one expression for all its checks.
	{"opt_statement_one_expr", `
		CREATE TRIGGER t BEFORE UPDATE ON opt_statement_one_expr FOR EACH STATEMENT
		EXECUTE FUNCTION public.bench_guard_one_expression('opt_statement_one_expr')`},
	// The check for function frames alone: GET DIAGNOSTICS PG_CONTEXT and one test.
	{"opt_ctx", `CREATE FUNCTION public.bench_ctx() RETURNS trigger LANGUAGE plpgsql AS $fn$
		DECLARE ctx pg_catalog.text;
		BEGIN GET DIAGNOSTICS ctx = PG_CONTEXT;
		IF pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.=) 0 THEN RETURN NULL; END IF; RAISE EXCEPTION 'x'; END $fn$;
		CREATE TRIGGER t BEFORE UPDATE ON opt_ctx FOR EACH STATEMENT EXECUTE FUNCTION public.bench_ctx()`},
	// One PL/pgSQL expression, the smallest: a prefix test of current_query().
	{"opt_min", `CREATE FUNCTION public.bench_min() RETURNS trigger LANGUAGE plpgsql AS $fn$
		BEGIN IF pg_catalog.starts_with(pg_catalog.current_query(), '/*sqlfence fenced: ') THEN RETURN NULL; END IF; RAISE EXCEPTION 'x'; END $fn$;
		CREATE TRIGGER t BEFORE UPDATE ON opt_min FOR EACH STATEMENT EXECUTE FUNCTION public.bench_min()`},
	// The statement checks before this version without the context check.
	{"opt_noctx", `CREATE FUNCTION public.bench_noctx() RETURNS trigger LANGUAGE plpgsql AS $fn$
		BEGIN
		IF pg_catalog.starts_with(pg_catalog.current_query(), '/*sqlfence fenced: ')
		   AND pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 1
		   AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on'
		   AND TG_ARGV[0] OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(pg_catalog.split_part(
		       pg_catalog.substr(pg_catalog.current_query(), 20), '*/', 1), ' ')) THEN RETURN NULL; END IF;
		RAISE EXCEPTION 'x'; END $fn$;
		CREATE TRIGGER t BEFORE UPDATE ON opt_noctx FOR EACH STATEMENT EXECUTE FUNCTION public.bench_noctx('opt_noctx')`},
	{"opt_statement", `CREATE TRIGGER sqlfence_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON opt_statement
		FOR EACH STATEMENT EXECUTE FUNCTION sqlfence.guard('opt_statement')`},
	{"opt_row", `CREATE TRIGGER sqlfence_guard_epoch AFTER UPDATE ON opt_row FOR EACH ROW
		WHEN ((NEW.writer_epoch < OLD.writer_epoch) IS NOT FALSE) EXECUTE FUNCTION sqlfence.guard_epoch('writer_epoch')`},
	// The row trigger's WHEN clause before this version: three comparisons.
	{"opt_row_when3", `CREATE TRIGGER sqlfence_guard_epoch AFTER UPDATE ON opt_row_when3 FOR EACH ROW
		WHEN (NEW.writer_epoch < OLD.writer_epoch OR (NEW.writer_epoch IS NULL AND OLD.writer_epoch IS NOT NULL))
		EXECUTE FUNCTION sqlfence.guard_epoch('writer_epoch')`},
	// The row check as a constraint trigger: an AFTER row trigger by another name.
	{"opt_row_constraint", `CREATE CONSTRAINT TRIGGER sqlfence_guard_epoch AFTER UPDATE ON opt_row_constraint
		DEFERRABLE INITIALLY IMMEDIATE FOR EACH ROW
		WHEN ((NEW.writer_epoch < OLD.writer_epoch) IS NOT FALSE) EXECUTE FUNCTION sqlfence.guard_epoch('writer_epoch')`},
	// What any PL/pgSQL statement trigger costs: one that checks nothing.
	{"opt_empty", `CREATE TRIGGER t BEFORE UPDATE ON opt_empty FOR EACH STATEMENT EXECUTE FUNCTION public.bench_empty()`},
	// The floor of two triggers: the empty statement trigger and the row trigger.
	{"opt_floor", `CREATE TRIGGER t BEFORE UPDATE ON opt_floor FOR EACH STATEMENT EXECUTE FUNCTION public.bench_empty();
		CREATE TRIGGER sqlfence_guard_epoch AFTER UPDATE ON opt_floor FOR EACH ROW
		WHEN ((NEW.writer_epoch < OLD.writer_epoch) IS NOT FALSE) EXECUTE FUNCTION sqlfence.guard_epoch('writer_epoch')`},
	// One trigger instead of two, at its cheapest: a row trigger without WHEN whose
	// function checks nothing (the checks would come on top, per row).
	{"opt_one_row", `CREATE TRIGGER t AFTER UPDATE ON opt_one_row FOR EACH ROW EXECUTE FUNCTION public.bench_empty()`},
	// The statement checks in the trigger's WHEN clause, so that PL/pgSQL runs only to
	// reject (without the check for function frames, which only PL/pgSQL can make).
	{"opt_when", `CREATE TRIGGER sqlfence_guard BEFORE UPDATE ON opt_when FOR EACH STATEMENT
		WHEN (NOT coalesce(pg_catalog.starts_with(pg_catalog.current_query(), '/*sqlfence fenced: ')
			AND pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 0
			AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on'
			AND 'opt_when' OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(pg_catalog.split_part(
				pg_catalog.substr(pg_catalog.current_query(), 20), '*/', 1), ' ')), false))
		EXECUTE FUNCTION sqlfence.guard('opt_when')`},
}

// BenchmarkGuardOptions times a fenced single-row UPDATE by primary key (resolve:
// none, 1 worker) on an unguarded table and on one table per guardOptions entry, all
// in the same run, taking turns; <option>/unguarded is each one's ratio of the medians
// (go test -run '^$' -bench GuardOptions -count 5 ./internal/cli/guard).
// "The guard's cost" in docs/performance.md gives the figures.
func BenchmarkGuardOptions(b *testing.B) {
	dsn := pgtest.NewDB(b)
	raw := clitest.PGConnect(b, dsn, nil)
	tables := []string{"unguarded"}
	setup := `CREATE TABLE unguarded (id int PRIMARY KEY, n int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
		INSERT INTO unguarded SELECT i, 0, 0 FROM generate_series(1, 1000) i;
		CREATE FUNCTION public.bench_empty() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;` + guardOneExpression
	for _, o := range guardOptions {
		tables = append(tables, o.table)
		setup += "CREATE TABLE " + o.table + " (LIKE unguarded INCLUDING ALL); INSERT INTO " + o.table + " SELECT * FROM unguarded;"
	}
	if _, err := raw.Exec(b.Context(), setup); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	guardPolicy := clitest.WriteFile(b, dir, "guard.yaml", "version: 1\ntables: [opt_installed]\n")
	if out, errOut, code := clitest.Run(b, Run, "--policy", guardPolicy, "--apply", "--dsn", dsn); code != cmdutil.ExitOK {
		b.Fatalf("guard: %s%s", out, errOut)
	}
	for _, o := range guardOptions {
		if o.sql == "" {
			continue
		}
		if _, err := raw.Exec(b.Context(), o.sql); err != nil {
			b.Fatalf("%s: %v", o.table, err)
		}
	}
	policy := clitest.WriteFile(b, dir, "sqlfence.yaml", "version: 1\ntables: ["+strings.Join(tables, ", ")+"]\nresolve: none\n")
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var epoch atomic.Int64
	m := alternate(b, db, &epoch, 1, tables...)
	b.ReportMetric(m[0], "unguarded-ns/write")
	for i, o := range guardOptions {
		b.ReportMetric(m[i+1]/m[0], strings.TrimPrefix(o.table, "opt_")+"/unguarded")
	}
}

// guardOneExpression is the statement trigger's function before this version, which
// made all its checks in one expression.
const guardOneExpression = `
CREATE FUNCTION public.bench_guard_one_expression() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
    ctx pg_catalog.text;
BEGIN
    GET DIAGNOSTICS ctx = PG_CONTEXT;
    IF pg_catalog.starts_with(pg_catalog.current_query(), '/*sqlfence fenced: ')
       AND pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 1
       AND pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.=) 0
       AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on'
       AND TG_ARGV[0] OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(pg_catalog.split_part(
           pg_catalog.substr(pg_catalog.current_query(), 20), '*/', 1), ' '))
       AND (NOT pg_catalog.starts_with(pg_catalog.current_query(), '/*sqlfence fenced: @')
            OR pg_catalog.starts_with(pg_catalog.current_query(), pg_catalog.textcat(pg_catalog.textcat('/*sqlfence fenced: @',
               pg_catalog.pg_sequence_last_value('sqlfence.catalog_version'::pg_catalog.regclass)::pg_catalog.text), ' '))) THEN
        RETURN NULL;
    END IF;
    PERFORM sqlfence.guard_reject(TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME,
        pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.>) 0);
    RETURN NULL;
END
$fn$;`
