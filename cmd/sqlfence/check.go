package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sqlfence/sqlfence"
)

const checkUsage = `Usage: sqlfence check --policy sqlfence.yaml [flags] PATH...

Lints SQL that does not go through the sqlfence driver — migrations, maintenance
scripts, seed files — for writes to protected tables that would bypass the fence, and
SQL string literals in Go source for statements the driver would refuse.

PATH is a file or a directory (searched recursively for *.sql and *.go files;
directories named testdata, vendor, node_modules or starting with . or _ are skipped,
and so are *_test.go files unless --tests is given).

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

In .go files, string constants passed as the query of Exec, ExecContext, Query,
QueryContext, QueryRow, QueryRowContext, Prepare, PrepareContext (pgx's
Prepare(ctx, name, sql) too) and pgx Batch.Queue are checked as the driver would
check them: a statement it refuses is a finding. Only literals, concatenations of
literals and constants declared in the same package are seen; strings that do not
parse as SQL are skipped. pgx CopyFrom into a protected table is a finding.

Suppress a finding with a comment that starts with sqlfence:ignore and gives a
reason, directly before the statement (only comments in between) in SQL, or on the
line of the call or the line before it in Go:
  -- sqlfence:ignore one-off repair after INC-1234, run with the guard override
  // sqlfence:ignore this service writes through plain pgx under the guard override
A sqlfence:ignore without a reason, or one that suppresses nothing, is a finding.
Statements that follow SELECT sqlfence.override('<reason>') in a SQL file, up to the
next COMMIT or ROLLBACK, run under the guard's logged operator override (sqlfence
guard) and count as suppressed with that reason.

Exit status: 0 no findings, 1 findings, 2 usage error, missing policy, or a file that
cannot be read or parsed.

Flags:
`

// A finding is one statement the linter reports.
type finding struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"` // exclusive, like SARIF's endColumn
	Rule      string `json:"rule"`
	Table     string `json:"table,omitempty"`
	Message   string `json:"message"`
	Statement string `json:"statement,omitempty"`
	Reason    string `json:"suppressed_because,omitempty"`
}

// fileError is a file the linter could not check.
type fileError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

type checkResult struct {
	Findings   []finding   `json:"findings"`
	Suppressed []finding   `json:"suppressed"`
	Errors     []fileError `json:"errors"`
	Files      int         `json:"files"`
	Statements int         `json:"statements"`
}

// Rules, with the descriptions SARIF consumers show.
var checkRules = []struct{ id, short, help string }{
	{"unfenced-write", "Write to a protected table that bypasses the fence",
		"Run outside the sqlfence driver, this statement writes a protected table without comparing the rows' epochs, so it can overwrite what a newer claim wrote. Run it through the driver under an epoch, fence it by hand (assign the epoch column and compare it in WHERE), or suppress it with `sqlfence:ignore <reason>` and run it under the guard's audited override."},
	{"unfenceable", "Statement that cannot be fenced",
		"TRUNCATE, COPY FROM, DO blocks, calls of functions the policy lists, and rule or function bodies that write a protected table cannot carry an epoch. Rewrite the write as plain INSERT/UPDATE/DELETE under an epoch, or suppress it with a reason and run it under the guard's override."},
	{"refused", "Statement the sqlfence driver refuses",
		"The sqlfence driver refuses this statement and sends nothing; the error says what to write instead."},
	{"ignore-without-reason", "sqlfence:ignore without a reason",
		"A suppression must say why the statement is safe: `sqlfence:ignore <reason>`."},
	{"unused-ignore", "sqlfence:ignore that suppresses nothing",
		"The comment is not directly before a statement with a finding (in Go: not on the line of a checked call or the line before it). Remove it or move it."},
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	f := newFlags("check", checkUsage)
	policyPath := f.String("policy", "", "policy file (default $SQLFENCE_POLICY)")
	format := f.String("format", "text", "output format: text, json or sarif")
	withGo := f.Bool("go", true, "also check SQL string literals in .go files found in directories")
	withTests := f.Bool("tests", false, "also check *_test.go files found in directories")
	paths, code, done := f.parse(args, stdout, stderr)
	if done {
		return code
	}
	switch *format {
	case "text", "json", "sarif":
	default:
		return f.usageError(stderr, "--format must be text, json or sarif, not %q", *format)
	}
	if len(paths) == 0 {
		return f.usageError(stderr, "no PATH to check: give .sql files or directories, for example: sqlfence check --policy sqlfence.yaml migrations/")
	}
	pol, err := loadPolicy(*policyPath)
	if err != nil {
		return fail(stderr, "check", err)
	}
	sqlFiles, goFiles, err := collectFiles(paths, *withGo, *withTests)
	if err != nil {
		return fail(stderr, "check", err)
	}
	res := &checkResult{Findings: []finding{}, Suppressed: []finding{}, Errors: []fileError{}}
	for _, p := range sqlFiles {
		src, err := os.ReadFile(p)
		if err != nil {
			res.Errors = append(res.Errors, fileError{File: p, Message: err.Error()})
			continue
		}
		res.Files++
		checkSQLFile(p, src, pol, res)
	}
	checkGoFiles(goFiles, pol, res)
	sortFindings(res.Findings)
	sortFindings(res.Suppressed)
	slices.SortStableFunc(res.Errors, func(a, b fileError) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})

	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(res)
	case "sarif":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(toSARIF(res))
	default:
		writeCheckText(stdout, stderr, res)
	}
	switch {
	case len(res.Errors) > 0:
		return exitError
	case len(res.Findings) > 0:
		return exitFindings
	}
	return exitOK
}

func sortFindings(fs []finding) {
	slices.SortStableFunc(fs, func(a, b finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Rule, b.Rule))
	})
}

func writeCheckText(stdout, stderr io.Writer, res *checkResult) {
	for _, e := range res.Errors {
		if e.Line > 0 {
			fmt.Fprintf(stderr, "%s:%d:%d: error: %s\n", e.File, e.Line, e.Column, e.Message)
		} else {
			fmt.Fprintf(stderr, "%s: error: %s\n", e.File, e.Message)
		}
	}
	for _, f := range res.Findings {
		fmt.Fprintf(stdout, "%s:%d:%d: %s: %s\n", f.File, f.Line, f.Column, f.Rule, f.Message)
		if f.Statement != "" {
			fmt.Fprintf(stdout, "\t%s\n", f.Statement)
		}
	}
	suppressed := ""
	if n := len(res.Suppressed); n > 0 {
		suppressed = fmt.Sprintf(", %d suppressed", n)
	}
	summary := fmt.Sprintf("%d %s%s in %d %s (%d %s checked)", len(res.Findings), plural(len(res.Findings), "finding", "findings"),
		suppressed, res.Files, plural(res.Files, "file", "files"), res.Statements, plural(res.Statements, "statement", "statements"))
	if len(res.Errors) > 0 {
		summary += fmt.Sprintf("; %d %s could not be checked", len(res.Errors), plural(len(res.Errors), "file", "files"))
	}
	fmt.Fprintf(stderr, "sqlfence check: %s\n", summary)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// collectFiles expands the command line's paths into the SQL and Go files to check.
func collectFiles(paths []string, withGo, withTests bool) (sqlFiles, goFiles []string, err error) {
	seen := map[string]bool{}
	add := func(p string, isGo bool) {
		if seen[p] {
			return
		}
		seen[p] = true
		if isGo {
			goFiles = append(goFiles, p)
		} else {
			sqlFiles = append(sqlFiles, p)
		}
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("%s: no such file or directory", root)
			}
			return nil, nil, err
		}
		if !info.IsDir() {
			// A file named on the command line is checked whatever its name: a .go
			// file as Go, anything else as SQL.
			add(root, strings.HasSuffix(root, ".go"))
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if p != root && (name == "testdata" || name == "vendor" || name == "node_modules" ||
					strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			switch {
			case strings.HasSuffix(name, ".sql"):
				add(p, false)
			case withGo && strings.HasSuffix(name, ".go") && (withTests || !strings.HasSuffix(name, "_test.go")):
				add(p, true)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return sqlFiles, goFiles, nil
}

// lines maps byte offsets of a source to 1-based lines and columns, columns counted
// in Unicode code points (SARIF's columnKind unicodeCodePoints).
type lines struct {
	src   []byte
	start []int // byte offset of each line's first byte
}

func newLines(src []byte) *lines {
	l := &lines{src: src, start: []int{0}}
	for i, c := range src {
		if c == '\n' {
			l.start = append(l.start, i+1)
		}
	}
	return l
}

func (l *lines) pos(off int) (line, col int) {
	off = min(max(off, 0), len(l.src))
	i, found := slices.BinarySearch(l.start, off)
	if !found {
		i--
	}
	return i + 1, utf8.RuneCount(l.src[l.start[i]:off]) + 1
}

// excerpt returns the statement's text on one line, shortened for display.
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 120
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// refusal describes a sqlfence refusal as a finding message.
func refusal(err error) (table, msg string) {
	var e *sqlfence.Error
	if errors.As(err, &e) {
		msg = e.Reason
		if e.Fix != "" {
			msg += "; " + e.Fix
		}
		return e.Table, msg
	}
	return "", err.Error()
}

// ignoreMarker is the suppression comment's keyword.
const ignoreMarker = "sqlfence:ignore"

// parseIgnore reads a comment (with its delimiters: --, //, /* */) and reports
// whether it is a suppression — a comment that starts with the marker — and the
// reason it gives.
func parseIgnore(comment string) (reason string, ok bool) {
	body := comment
	for _, open := range []string{"--", "//", "/*"} {
		if strings.HasPrefix(body, open) {
			body = body[len(open):]
			break
		}
	}
	body = strings.TrimSuffix(body, "*/")
	body = strings.TrimLeft(body, " \t\r\n-*/")
	rest, found := strings.CutPrefix(body, ignoreMarker)
	if !found {
		return "", false
	}
	if rest != "" && !strings.ContainsAny(rest[:1], " \t\r\n") {
		return "", false // sqlfence:ignored, sqlfence:ignore-foo: not the marker
	}
	return strings.TrimSpace(rest), true
}

// suppression is one sqlfence:ignore comment in a file.
type suppression struct {
	file      string
	line, col int
	endLine   int
	endCol    int
	reason    string
	used      bool
}

// settle reports the suppressions that need a finding of their own: a missing reason,
// or nothing suppressed.
func settle(res *checkResult, sups []*suppression) {
	for _, s := range sups {
		f := finding{File: s.file, Line: s.line, Column: s.col, EndLine: s.endLine, EndColumn: s.endCol}
		switch {
		case s.reason == "":
			f.Rule = "ignore-without-reason"
			f.Message = "sqlfence:ignore needs a reason: say why this write is safe, e.g. `sqlfence:ignore one-off repair after INC-1234, run under the guard override`"
		case !s.used:
			f.Rule = "unused-ignore"
			f.Message = "sqlfence:ignore suppresses nothing: it must come directly before a statement with a finding (in Go: on the line of a checked call or the line before it)"
		default:
			continue
		}
		res.Findings = append(res.Findings, f)
	}
}

// report files a finding, or a suppressed finding when a suppression with a reason
// covers it.
func report(res *checkResult, f finding, sup *suppression) {
	if sup != nil {
		sup.used = true
		if sup.reason != "" {
			f.Reason = sup.reason
			res.Suppressed = append(res.Suppressed, f)
			return
		}
	}
	res.Findings = append(res.Findings, f)
}
