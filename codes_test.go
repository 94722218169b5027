package sqlfence_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// codeProblem says what is wrong with the rule code of an error sqlfence returned:
// every *Error carries a code from the table, of the kind its sentinel says. "" when
// it is right or err is not sqlfence's.
func codeProblem(err error) string {
	var e *sqlfence.Error
	if !errors.As(err, &e) {
		return ""
	}
	info, ok := rulecode.Lookup(e.Code)
	if !ok {
		return "rule code " + strconvQuote(e.Code) + " is not in the table (internal/rulecode)"
	}
	want := map[error]rulecode.Kind{sqlfence.ErrFenced: rulecode.KindFenced, sqlfence.ErrRefused: rulecode.KindRefused,
		sqlfence.ErrUnfenced: rulecode.KindUnfenced, sqlfence.ErrAlreadyWritten: rulecode.KindAlreadyWritten}[e.Kind]
	if info.Kind != want {
		return "rule code " + e.Code + " is a " + string(info.Kind) + " code on a " + string(want) + " error"
	}
	return ""
}

func strconvQuote(s string) string { return `"` + s + `"` }

// TestRuleCodesDocumented: the rule codes table (docs/errors.md, "Rule codes") lists
// exactly the codes defined, each once, with the anchor the SARIF help links to and
// the title the table holds.
func TestRuleCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile(rulecode.DocFile)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| <a id=\"(sf\\d+)\"></a>`(SF\\d+)` \\| ([a-z ]+) \\| (.+?) \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		anchor, code, kind, title := m[1], m[2], m[3], m[4]
		documented = append(documented, code)
		info, ok := rulecode.Lookup(code)
		switch {
		case !ok:
			t.Errorf("%s documents %s, which internal/rulecode does not define", rulecode.DocFile, code)
			continue
		case anchor != strings.ToLower(code) || !strings.HasSuffix(rulecode.HelpURI(code), "#"+anchor):
			t.Errorf("%s: %s has the anchor %q", rulecode.DocFile, code, anchor)
		case kind != string(info.Kind):
			t.Errorf("%s: %s is documented as %q, defined as %q", rulecode.DocFile, code, kind, info.Kind)
		case !strings.HasPrefix(title, info.Title):
			t.Errorf("%s: %s: the row starts %q, want the title %q", rulecode.DocFile, code, title, info.Title)
		}
	}
	var defined []string
	for _, i := range rulecode.All {
		if slices.Contains(defined, i.Code) {
			t.Errorf("%s is defined twice", i.Code)
		}
		defined = append(defined, i.Code)
	}
	if !slices.Equal(documented, defined) {
		t.Errorf("%s's rule codes, in order:\n  %v\nwant the codes defined:\n  %v", rulecode.DocFile, documented, defined)
	}
}

// TestErrorsCarryCodes reads the package's source: every Error literal names its
// Code, so no refusal, unfenced write or fence can be added without one (refuse takes
// the code as its first argument).
func TestErrorsCarryCodes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	engineFiles, err := filepath.Glob("internal/engine/*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, engineFiles...)
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			lit, ok := node.(*ast.CompositeLit)
			if !ok {
				return true
			}
			switch ty := lit.Type.(type) {
			case *ast.Ident: // Error, in either package
				if ty.Name != "Error" {
					return true
				}
			case *ast.SelectorExpr: // engine.Error
				if ty.Sel.Name != "Error" {
					return true
				}
			default:
				return true
			}
			n++
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
						return true
					}
				}
			}
			t.Errorf("%s: an Error without a Code", fset.Position(lit.Pos()))
			return true
		})
	}
	if n < 10 {
		t.Fatalf("found only %d Error literals: the test no longer reads the package", n)
	}
}
