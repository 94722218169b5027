package check

import (
	"fmt"
	"io"
	"strings"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// writeText prints the findings on stdout, and the files that could not be checked
// and a summary on stderr.
func writeText(stdout, stderr io.Writer, res *result) {
	for _, e := range res.Errors {
		if e.Line > 0 {
			fmt.Fprintf(stderr, "%s: error: %s\n", position(e.File, e.Line, e.Column), e.Message)
		} else {
			fmt.Fprintf(stderr, "%s: error: %s\n", e.File, e.Message)
		}
		if e.Statement != "" {
			fmt.Fprintf(stderr, "\t%s\n", e.Statement)
		}
	}
	for _, f := range res.Findings {
		fmt.Fprintf(stdout, "%s: %s: %s\n", position(f.File, f.Line, f.Column), f.Rule, f.Message)
		if f.Statement != "" {
			fmt.Fprintf(stdout, "\t%s\n", f.Statement)
		}
	}
	suppressed := ""
	if n := len(res.Suppressed); n > 0 {
		suppressed = fmt.Sprintf(", %d suppressed", n)
	}
	where := fmt.Sprintf("%d %s (%d %s checked)", res.Files, cmdutil.Plural(res.Files, "file", "files"), res.Statements, cmdutil.Plural(res.Statements, "statement", "statements"))
	if len(res.Packages) > 0 {
		pkgs := "Go packages " + strings.Join(res.Packages, " ")
		if res.Files == 0 {
			where = pkgs
		} else {
			where = pkgs + " and " + where
		}
	}
	summary := fmt.Sprintf("%d %s%s in %s", len(res.Findings), cmdutil.Plural(len(res.Findings), "finding", "findings"), suppressed, where)
	files, stmts := 0, 0
	for _, e := range res.Errors {
		if e.Statement != "" {
			stmts++
		} else {
			files++
		}
	}
	if files > 0 {
		summary += fmt.Sprintf("; %d %s could not be checked", files, cmdutil.Plural(files, "file", "files"))
	}
	if stmts > 0 {
		summary += fmt.Sprintf("; %d %s could not be parsed", stmts, cmdutil.Plural(stmts, "statement", "statements"))
	}
	fmt.Fprintf(stderr, "sqlfence check: %s\n", summary)
}

// position is file:line:column, columns counted from 1 as editors and compilers do;
// without a column (0: the position is a whole line) it is file:line.
func position(file string, line, column int) string {
	if column < 1 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return fmt.Sprintf("%s:%d:%d", file, line, column)
}
