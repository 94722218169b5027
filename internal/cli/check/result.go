package check

import (
	"cmp"
	"errors"
	"slices"

	"github.com/sqlfence/sqlfence"
)

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

// result is everything one run found; --format json prints it as it is.
type result struct {
	Findings   []finding   `json:"findings"`
	Suppressed []finding   `json:"suppressed"`
	Errors     []fileError `json:"errors"`
	Files      int         `json:"files"`
	Statements int         `json:"statements"`
}

// Rules, with the descriptions SARIF consumers show.
var rules = []struct{ id, short, help string }{
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

func sortFindings(fs []finding) {
	slices.SortStableFunc(fs, func(a, b finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Rule, b.Rule))
	})
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
