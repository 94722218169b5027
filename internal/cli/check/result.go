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

// Finding is a finding as other front ends of the same rules build one (the Go
// analyzer's sqlfence-vet -sarif), for SARIF.
type Finding = finding

// fileError is a file the linter could not check, or, with Statement, a statement
// of a file that does not parse (the rest of the file is checked).
type fileError struct {
	File      string `json:"file"`
	Line      int    `json:"line,omitempty"`
	Column    int    `json:"column,omitempty"`
	Message   string `json:"message"`
	Statement string `json:"statement,omitempty"`
}

// result is everything one run found; --format json prints it as it is.
type result struct {
	Findings   []finding   `json:"findings"`
	Suppressed []finding   `json:"suppressed"`
	Errors     []fileError `json:"errors"`
	Files      int         `json:"files"`
	Packages   []string    `json:"go_packages,omitempty"` // the patterns the Go analyzer checked
	Statements int         `json:"statements"`
}

// codeOf is the rule code of a sqlfence error, or otherwise.
func codeOf(err error, otherwise string) string {
	var e *sqlfence.Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return otherwise
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
