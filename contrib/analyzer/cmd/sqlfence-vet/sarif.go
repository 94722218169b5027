// -sarif: load the packages, run the analyzer, print its reports as SARIF.

package main

import (
	"flag"
	"fmt"
	"go/token"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/sqlfence/sqlfence/contrib/analyzer"
	"github.com/sqlfence/sqlfence/internal/cli/check"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

func wantsSARIF(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-sarif" || a == "--sarif" || a == "-sarif=true" || a == "--sarif=true" {
			return true
		}
	}
	return false
}

// runSARIF is sqlfence-vet -sarif [-policy PATH] [-test] PACKAGES: exit 0 without
// reports, 1 with reports, 2 when the packages cannot be loaded or checked.
func runSARIF(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sqlfence-vet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("sarif", true, "print the reports as a SARIF 2.1.0 log")
	tests := fs.Bool("test", true, "also check the packages' tests")
	analyzer.Analyzer.Flags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) })
	if err := fs.Parse(args); err != nil {
		return 2
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	cfg := &packages.Config{Mode: packages.LoadAllSyntax, Tests: *tests}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		fmt.Fprintln(stderr, "sqlfence-vet:", err)
		return 2
	}
	if packages.PrintErrors(pkgs) > 0 {
		return 2
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{analyzer.Analyzer}, pkgs, nil)
	if err != nil {
		fmt.Fprintln(stderr, "sqlfence-vet:", err)
		return 2
	}
	var findings []check.Finding
	seen := map[string]bool{} // a package and its test variant share files
	failed := false
	cols := columns{}
	for act := range graph.All() {
		if act.Analyzer != analyzer.Analyzer {
			continue
		}
		if act.Err != nil {
			fmt.Fprintln(stderr, "sqlfence-vet:", act.Err)
			failed = true
			continue
		}
		for _, d := range act.Diagnostics {
			start, end := act.Package.Fset.Position(d.Pos), act.Package.Fset.Position(d.End)
			key := fmt.Sprint(start, d.Message)
			if seen[key] {
				continue
			}
			seen[key] = true
			f := check.Finding{File: cmdutil.RelPath(start.Filename), Rule: d.Category, Message: d.Message}
			f.Line, f.Column = start.Line, cols.of(start)
			if end.IsValid() {
				f.EndLine, f.EndColumn = end.Line, cols.of(end)
			}
			findings = append(findings, f)
		}
	}
	if failed {
		return 2
	}
	cmdutil.WriteJSON(stdout, check.SARIF(findings))
	if len(findings) > 0 {
		return 1
	}
	return 0
}

// columns converts go/token's byte columns into SARIF's code-point columns.
type columns map[string][]string

func (c columns) of(p token.Position) int {
	lines, ok := c[p.Filename]
	if !ok {
		src, _ := os.ReadFile(p.Filename)
		lines = strings.Split(string(src), "\n")
		c[p.Filename] = lines
	}
	if p.Line < 1 || p.Line > len(lines) || p.Column-1 > len(lines[p.Line-1]) {
		return p.Column
	}
	return utf8.RuneCountInString(lines[p.Line-1][:p.Column-1]) + 1
}
