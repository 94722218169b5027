// Package check is `sqlfence check`: it lints .sql files, which run outside the
// driver, for writes to protected tables that are not fenced by hand, and SQL string
// constants in .go files for statements the driver would refuse.
package check

import (
	"cmp"
	"context"
	"io"
	"os"
	"slices"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

const usage = `Usage: sqlfence check --policy sqlfence.yaml [flags] PATH... [PACKAGES]
       sqlfence check --policy sqlfence.yaml --dsn postgres://… [PATH...] [PACKAGES]

Lints SQL that does not go through the sqlfence driver — migrations, maintenance
scripts, seed files — for writes to protected tables that would bypass the fence, and
the SQL that Go code sends through the driver for statements it would refuse.

PATH is a file or a directory (searched recursively for *.sql and *.go files;
directories named testdata, vendor, node_modules or starting with . or _ are skipped,
and so are *_test.go files unless --tests is given).

PACKAGES are Go package patterns: an argument with ... (./..., ./internal/...,
example.com/shop/...), or an import path not on disk whose first element has a dot
(example.com/shop/db). They are checked by the Go analyzer, sqlfence-vet, with the
same policy (and --dsn, --tests), and its reports join the findings; directories
given with them are then searched for *.sql files only. sqlfence-vet is found by
--vettool, next to the sqlfence binary, or on PATH; install it with
  go install github.com/sqlfence/sqlfence/contrib/analyzer/cmd/sqlfence-vet@latest
To check a directory's Go package with the analyzer, write it as ./dir/...

In .sql files, every statement that writes a protected table is a finding unless it
is fenced by hand:
  UPDATE            SET <epoch column> = E and WHERE … AND <epoch column> < E
  DELETE            WHERE … AND <epoch column> < E
  INSERT            names <epoch column> in its column list; ON CONFLICT DO UPDATE
                    also as UPDATE (E may be excluded.<epoch column>)
  MERGE             every WHEN MATCHED clause as UPDATE/DELETE, every INSERT names
                    the epoch column
where E is the same expression in SET and WHERE: an integer, a parameter, a scalar
subquery, or a column of another table in the statement (j.lease_epoch); the
comparison is a top-level AND condition; tables in mode repeatable may use <=.
TRUNCATE, COPY FROM, DO blocks, and anything else the driver refuses outright are
always findings.

In .go files found in directories (read without types), string constants passed as the query of Exec, ExecContext, Query,
QueryContext, QueryRow, QueryRowContext, Prepare, PrepareContext (pgx's
Prepare(ctx, name, sql) too) and pgx Batch.Queue are checked as the driver would
check them: a statement it refuses is a finding. Only literals, concatenations of
literals and constants declared in the same package are seen; strings that do not
parse as SQL are skipped, except statements with ? placeholders, which the driver
refuses (SF321). pgx CopyFrom is decided as the INSERT it amounts to, as the pgx
front decides it (rows that bring their own epoch column are refused). For the SQL that
reaches database calls through variables, helpers and fmt.Sprintf, with the types
known, give Go packages (./...) instead.

Suppress a finding with a comment that starts with sqlfence:ignore and gives a
reason, directly before the statement (only comments in between) in SQL, or on the
line of the call or the line before it in Go:
  -- sqlfence:ignore one-off repair after INC-1234, run with the guard override
  // sqlfence:ignore this service writes through plain pgx under the guard override
A rule code after the marker limits it to that rule:
  -- sqlfence:ignore SF301 nightly reset of the demo data, under the guard override
A sqlfence:ignore without a reason, or one that suppresses nothing, is a finding.
Statements that follow SELECT sqlfence.override('<reason>') in a SQL file, up to the
next COMMIT or ROLLBACK, run under the guard's logged operator override (sqlfence
guard) and count as suppressed with that reason.

Each finding carries a rule code: SF801 a write not fenced by hand, SF802 a body or
function call whose writes no epoch reaches, SF803 and SF804 a sqlfence:ignore without
a reason or that suppresses nothing, and otherwise the code of the driver's refusal
(SF301 TRUNCATE, …). The table of codes is in docs/errors.md (SARIF: each rule's helpUri).

With --dsn, the policy is also checked against that database as the driver checks it
before its first statement (resolve: catalog): SF520 a table the database does not
have (with the closest names it has), SF521 an epoch column that is missing, not
bigint or nullable (with the ALTER TABLE that fixes it), SF522 an unqualified name
that matches tables in two schemas of the search path, SF523 a role that cannot read
the catalog; findings at their line of the policy file. When the policy matches, the
catalog's foreign keys, triggers and rules that make the driver refuse writes are
reported (SF501, SF502, SF503). The Go packages' statements are then decided with
that database's catalog, as the driver decides them under resolve: catalog (writes
through partitions, children and views of protected tables, functions by their
bodies); without --dsn, from their text and the policy's names alone. Give the DSN
of a database migrated to the schema the application runs against, or of an empty
scratch database and --migrations DIR: the directory's up migrations (*.sql in name
order; *.down.sql skipped, a file's "-- +goose Down" or "-- migrate:down" half cut)
are applied there inside a transaction that is rolled back once the catalog is read,
and the policy and the Go packages are checked against the schema they make.

A statement that does not parse is reported as an error, and the rest of its file is
still checked.

Exit status: 0 no findings, 1 findings, 2 usage error, missing policy, or a file or
statement that cannot be read or parsed.

Flags:
`

// Run is sqlfence check: it lints the files under the PATH arguments and prints the
// findings as text, JSON or SARIF.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("check", usage)
	policyPath := f.String("policy", "", "policy file (default $SQLFENCE_POLICY)")
	format := f.String("format", "text", "output format: text, json or sarif")
	withGo := f.Bool("go", true, "also check SQL string literals in .go files found in directories")
	withTests := f.Bool("tests", false, "also check *_test.go files found in directories")
	dsn := f.String("dsn", "", "also check the policy against this database, as the driver does before its first statement, and decide the Go packages' statements with its catalog")
	migrations := f.String("migrations", "", "with --dsn of an empty scratch database: apply the up migrations of this directory there, in a transaction that is rolled back, and check against the schema they make")
	vettool := f.String("vettool", "", "the Go analyzer that checks Go packages (default: "+vetTool+" next to sqlfence, else on PATH)")
	args, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	var paths, packages []string
	for _, a := range args {
		if isPackagePattern(a) {
			packages = append(packages, a)
		} else {
			paths = append(paths, a)
		}
	}
	switch *format {
	case "text", "json", "sarif":
	default:
		return f.UsageError(stderr, "--format must be text, json or sarif, not %q", *format)
	}
	if *migrations != "" && *dsn == "" {
		return f.UsageError(stderr, "--migrations needs --dsn: the DSN of an empty scratch database to apply them to (inside a transaction that is rolled back)")
	}
	if len(args) == 0 && *dsn == "" {
		return f.UsageError(stderr, "no PATH to check: give .sql files, directories or Go packages, for example: sqlfence check --policy sqlfence.yaml migrations/ ./...")
	}
	pol, err := cmdutil.LoadPolicy(*policyPath)
	if err != nil {
		return cmdutil.Fail(stderr, "check", err)
	}
	path := *policyPath
	if path == "" {
		path = os.Getenv(sqlfence.PolicyEnv)
	}
	var tool string
	if len(packages) > 0 {
		if tool, err = findVetTool(*vettool); err != nil {
			return cmdutil.Fail(stderr, "check", err)
		}
	}
	// With Go packages the analyzer reads the Go source; directories are then
	// searched for .sql files only, so no call is reported twice.
	sqlFiles, goFiles, err := collectFiles(paths, *withGo && len(packages) == 0, *withTests)
	if err != nil {
		return cmdutil.Fail(stderr, "check", err)
	}
	res := &result{Findings: []finding{}, Suppressed: []finding{}, Errors: []fileError{}}
	srcs := make([][]byte, len(sqlFiles))
	for i, p := range sqlFiles {
		if srcs[i], err = os.ReadFile(p); err != nil {
			res.Errors = append(res.Errors, fileError{File: p, Message: err.Error()})
		}
	}
	filePolicy := sqlFilePolicy(pol)
	writers := collectWriters(filePolicy, srcs)
	for i, p := range sqlFiles {
		if srcs[i] == nil {
			continue
		}
		res.Files++
		checkSQLFile(p, srcs[i], filePolicy, writers, res)
	}
	checkGoFiles(goFiles, pol, res)
	if len(packages) > 0 {
		res.Packages = packages
		checkGoPackages(context.Background(), vetRun{tool: tool, patterns: packages, policyPath: path, dsn: *dsn, migrations: *migrations, tests: *withTests}, res)
	}
	if *dsn != "" {
		if err := checkDatabase(*dsn, *migrations, path, pol, res); err != nil {
			return cmdutil.Fail(stderr, "check", err)
		}
	}
	sortFindings(res.Findings)
	sortFindings(res.Suppressed)
	slices.SortStableFunc(res.Errors, func(a, b fileError) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})

	switch *format {
	case "json":
		cmdutil.WriteJSON(stdout, res)
	case "sarif":
		cmdutil.WriteJSON(stdout, toSARIF(res))
	default:
		writeText(stdout, stderr, res)
	}
	switch {
	case len(res.Errors) > 0:
		return cmdutil.ExitError
	case len(res.Findings) > 0:
		return cmdutil.ExitFindings
	}
	return cmdutil.ExitOK
}
