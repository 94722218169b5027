// Suppressions: sqlfence:ignore comments, read as sqlfence check reads them in Go files.

package analyzer

import (
	"go/ast"
	"go/token"

	"golang.org/x/tools/go/analysis"

	"github.com/sqlfence/sqlfence/internal/cli/check"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// ignore is one sqlfence:ignore comment.
type ignore struct {
	comment *ast.Comment
	code    string // "" for every rule
	reason  string
	used    bool
}

// ignores are the suppressions of one file: each covers the calls that start on its
// line or the next one.
type ignores struct {
	pass   *analysis.Pass
	all    []*ignore
	byLine map[int][]*ignore
}

func newIgnores(pass *analysis.Pass, f *ast.File) *ignores {
	ig := &ignores{pass: pass, byLine: map[int][]*ignore{}}
	for _, g := range f.Comments {
		for _, c := range g.List {
			code, reason, ok := check.ParseIgnore(c.Text)
			if !ok {
				continue
			}
			i := &ignore{comment: c, code: code, reason: reason}
			line := ig.line(c.Pos())
			ig.all = append(ig.all, i)
			ig.byLine[line] = append(ig.byLine[line], i)
			ig.byLine[line+1] = append(ig.byLine[line+1], i)
		}
	}
	return ig
}

func (ig *ignores) line(p token.Pos) int { return ig.pass.Fset.Position(p).Line }

// report files d unless a suppression with a reason covers it. One without a reason
// suppresses nothing: it is reported itself (SF803).
func (ig *ignores) report(d analysis.Diagnostic) {
	suppressed := false
	for _, i := range ig.byLine[ig.line(d.Pos)] {
		if i.code == "" || i.code == d.Category {
			i.used = true
			suppressed = suppressed || i.reason != ""
		}
	}
	if !suppressed {
		ig.pass.Report(d)
	}
}

// settle reports the suppressions without a reason and those that suppressed
// nothing, as sqlfence check does.
func (ig *ignores) settle() {
	for _, i := range ig.all {
		switch {
		case i.reason == "":
			ig.pass.Report(analysis.Diagnostic{Pos: i.comment.Pos(), End: i.comment.End(), Category: rulecode.CheckIgnoreNoWhy,
				Message: rulecode.CheckIgnoreNoWhy + ": sqlfence:ignore needs a reason: say why this statement is safe, e.g. //sqlfence:ignore " + rulecode.Truncate + " nightly reset of the demo data, runs under the guard override"})
		case !i.used:
			ig.pass.Report(analysis.Diagnostic{Pos: i.comment.Pos(), End: i.comment.End(), Category: rulecode.CheckUnusedIgnore,
				Message: rulecode.CheckUnusedIgnore + ": sqlfence:ignore suppresses nothing: it must be on the line of a reported database call or the line before it" + ig.limitedTo(i)})
		}
	}
}

func (ig *ignores) limitedTo(i *ignore) string {
	if i.code == "" {
		return ""
	}
	return ", and it is limited to " + i.code
}
