package check

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sqlfence/sqlfence"
)

// goFile is a parsed Go source file.
type goFile struct {
	path string
	src  []byte
	file *ast.File
	fset *token.FileSet
}

// checkGoFiles lints the SQL string constants of Go files, which go through the
// driver: a finding is a statement the driver would refuse.
func checkGoFiles(paths []string, pol *sqlfence.Policy, res *result) {
	// Constants are resolved across the files of one package directory.
	byDir := map[string][]string{}
	var dirs []string
	for _, p := range paths {
		d := filepath.Dir(p)
		if _, ok := byDir[d]; !ok {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], p)
	}
	for _, d := range dirs {
		fset := token.NewFileSet()
		var files []*goFile
		consts := map[string]map[string]ast.Expr{} // package name → constant name → value
		for _, p := range byDir[d] {
			src, err := os.ReadFile(p)
			if err != nil {
				res.Errors = append(res.Errors, fileError{File: p, Message: err.Error()})
				continue
			}
			f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				res.Errors = append(res.Errors, fileError{File: p, Message: "cannot parse Go source: " + err.Error()})
				continue
			}
			res.Files++
			files = append(files, &goFile{path: p, src: src, file: f, fset: fset})
			pkg := f.Name.Name
			if consts[pkg] == nil {
				consts[pkg] = map[string]ast.Expr{}
			}
			collectConsts(f, consts[pkg])
		}
		for _, f := range files {
			checkGoFile(f, consts[f.file.Name.Name], pol, res)
		}
	}
}

// ambiguousConst marks a constant name declared more than once in a package (in
// different functions): it is not resolved.
var ambiguousConst = &ast.BadExpr{}

func collectConsts(f *ast.File, out map[string]ast.Expr) {
	ast.Inspect(f, func(n ast.Node) bool {
		g, ok := n.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			return true
		}
		for _, s := range g.Specs {
			vs, ok := s.(*ast.ValueSpec)
			if !ok || len(vs.Values) != len(vs.Names) {
				continue
			}
			for i, name := range vs.Names {
				if _, dup := out[name.Name]; dup {
					out[name.Name] = ambiguousConst
				} else {
					out[name.Name] = vs.Values[i]
				}
			}
		}
		return true
	})
}

// constString evaluates a constant string expression: literals, + of constant
// strings, parentheses and the package's constants.
func constString(e ast.Expr, consts map[string]ast.Expr, depth int) (string, bool) {
	if depth > 50 {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return constString(e.X, consts, depth+1)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		a, ok := constString(e.X, consts, depth+1)
		if !ok {
			return "", false
		}
		b, ok := constString(e.Y, consts, depth+1)
		return a + b, ok
	case *ast.Ident:
		v, ok := consts[e.Name]
		if !ok || v == ambiguousConst {
			return "", false
		}
		return constString(v, consts, depth+1)
	}
	return "", false
}
