package readme

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
)

var update = flag.Bool("update", false, "rewrite the docs' file and output blocks from the files they show")

// root is the repository, relative to this package.
const root = "../.."

// docFiles are the documents checked, relative to the repository: the README and
// every guide under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, g := range guides {
		rel, err := filepath.Rel(root, g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	if len(files) == 1 {
		t.Fatal("no guides under docs/")
	}
	return files
}

// A block is one fenced code block of a document.
type block struct {
	file   string // the document, relative to the repository
	line   int    // of the opening fence, 1-based
	lang   string // after the opening fence
	text   string // between the fences, with the final newline
	marker string // the <!-- readme: … --> comment just before the block, without the wrapping
	start  int    // byte offset of text in the document
}

// pos is where the block starts, as file:line.
func (b block) pos() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// The markers. Go blocks without one type-check against the root module.
//
//	<!-- readme: file PATH -->      the block is the file PATH, whole
//	<!-- readme: output PATH -->    the same, for a program's output that a test of it keeps in PATH
//	<!-- readme: in PATH -->        the block's lines are lines of PATH, in a row (indentation aside)
//	<!-- readme: go given DECLS; module DIR -->
//	                                a Go block: DECLS (var name type; …) are declared for it,
//	                                DIR is the module whose packages it imports (default: the root)
//	<!-- readme: policy [part] -->  a policy file sqlfence.ParsePolicy accepts; part: keys to add
//	                                to one (version and tables are added)
//	<!-- readme: sample REASON -->  shown, not checked, and the reason why
var markerRE = regexp.MustCompile(`^<!-- readme: (.*?) -->$`)

func readBlocks(t *testing.T, file string) (string, []block) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	var blocks []block
	lines := strings.SplitAfter(src, "\n")
	offset := 0
	prev := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		offset += len(l)
		if !strings.HasPrefix(l, "```") {
			if strings.TrimSpace(l) != "" {
				prev = strings.TrimSpace(l)
			}
			continue
		}
		b := block{file: file, line: i + 1, lang: strings.TrimSpace(strings.TrimPrefix(l, "```")), start: offset}
		if m := markerRE.FindStringSubmatch(prev); m != nil {
			b.marker = m[1]
		}
		var text strings.Builder
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			text.WriteString(lines[i])
			offset += len(lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s: the code block is not closed", b.pos())
		}
		offset += len(lines[i])
		b.text = text.String()
		blocks = append(blocks, b)
		prev = ""
	}
	return src, blocks
}

// TestBlocks checks the file, output and in blocks, and that every block of sample
// output says where it comes from, in the README and every guide.
func TestBlocks(t *testing.T) {
	for _, file := range docFiles(t) {
		checkBlocks(t, file)
	}
}

func checkBlocks(t *testing.T, file string) {
	src, blocks := readBlocks(t, file)
	var out strings.Builder
	last := 0
	for _, b := range blocks {
		kind, arg, _ := strings.Cut(b.marker, " ")
		switch kind {
		case "file", "output":
			want, err := os.ReadFile(filepath.Join(root, arg))
			if err != nil {
				t.Errorf("%s: %v", b.pos(), err)
				continue
			}
			if *update {
				out.WriteString(src[last:b.start])
				out.Write(want)
				last = b.start + len(b.text)
			} else if b.text != string(want) {
				t.Errorf("%s: the block is not %s (go test -update refreshes the document from it):\n%s", b.pos(), arg, diffLines(string(want), b.text))
			}
		case "in":
			data, err := os.ReadFile(filepath.Join(root, arg))
			if err != nil {
				t.Errorf("%s: %v", b.pos(), err)
				continue
			}
			if !containsLines(string(data), b.text) {
				t.Errorf("%s: the block's lines are not lines of %s, in a row:\n%s", b.pos(), arg, b.text)
			}
		case "policy":
			text := b.text
			if arg == "part" {
				text = "version: 1\ntables: [inventory]\n" + text
			}
			if _, err := sqlfence.ParsePolicy([]byte(text), b.pos()); err != nil {
				t.Errorf("%s: %v", b.pos(), err)
			}
		case "sample", "go", "":
			if b.lang == "" && kind != "sample" {
				t.Errorf("%s: a block of output without <!-- readme: output PATH --> (or sample REASON) before it", b.pos())
			}
		default:
			t.Errorf("%s: unknown marker %q", b.pos(), b.marker)
		}
	}
	if *update {
		out.WriteString(src[last:])
		if err := os.WriteFile(filepath.Join(root, file), []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// containsLines reports whether the lines of part, each trimmed, are lines of
// whole, each trimmed, in a row.
func containsLines(whole, part string) bool {
	trim := func(s string) []string {
		ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range ls {
			ls[i] = strings.TrimSpace(l)
		}
		return ls
	}
	w, p := trim(whole), trim(part)
	for i := 0; i+len(p) <= len(w); i++ {
		if slices.Equal(w[i:i+len(p)], p) {
			return true
		}
	}
	return false
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  doc:  %s\n  file: %s\n", i+1, gl, wl)
		}
	}
	return b.String()
}

// knownPackages are the import paths of the package names the snippets use without
// importing them, as a reader would add them.
var knownPackages = map[string]string{
	"sql":              "database/sql",
	"context":          "context",
	"errors":           "errors",
	"fmt":              "fmt",
	"time":             "time",
	"slog":             "log/slog",
	"sqlfence":         "github.com/sqlfence/sqlfence",
	"claim":            "github.com/sqlfence/sqlfence/claim",
	"outbox":           "github.com/sqlfence/sqlfence/outbox",
	"pgx":              "github.com/jackc/pgx/v5",
	"stdlib":           "github.com/jackc/pgx/v5/stdlib",
	"inventorydb":      "github.com/sqlfence/sqlfence/examples/sqlc/inventorydb",
	"sqlfenceotel":     "github.com/sqlfence/sqlfence/contrib/otel",
	"sqlfencegorm":     "github.com/sqlfence/sqlfence/contrib/gorm",
	"sqlfencemock":     "github.com/sqlfence/sqlfence/contrib/sqlmock",
	"sqlfenceriver":    "github.com/sqlfence/sqlfence/contrib/river",
	"sqlmock":          "github.com/DATA-DOG/go-sqlmock",
	"pq":               "github.com/lib/pq",
	"bun":              "github.com/uptrace/bun",
	"pgdialect":        "github.com/uptrace/bun/dialect/pgdialect",
	"sqlx":             "github.com/jmoiron/sqlx",
	"gorm":             "gorm.io/gorm",
	"postgres":         "gorm.io/driver/postgres",
	"river":            "github.com/riverqueue/river",
	"rivertype":        "github.com/riverqueue/river/rivertype",
	"riverdatabasesql": "github.com/riverqueue/river/riverdriver/riverdatabasesql",
	"metric":           "go.opentelemetry.io/otel/metric",
}

// A snippet is a Go block made into a file of its own package.
type snippet struct {
	block
	module string
	file   string // the Go source type-checked
}

// makeSnippet turns a Go block into a file: its imports, the imports it uses
// without writing them, the declarations its marker gives, and its statements
// wrapped in a function (a block of declarations stays at the top level).
func makeSnippet(b block) (snippet, error) {
	s := snippet{block: b, module: "."}
	var given []string
	for part := range strings.SplitSeq(strings.TrimPrefix(b.marker, "go"), ";") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.HasPrefix(part, "module "):
			s.module = strings.TrimSpace(strings.TrimPrefix(part, "module "))
		case strings.HasPrefix(part, "given "):
			given = append(given, strings.TrimPrefix(part, "given "))
		default:
			given = append(given, part)
		}
	}
	// The imports come first: import "x" lines, or import ( … ) up to a line ")".
	var imports []string
	lines := strings.SplitAfter(b.text, "\n")
	i := 0
	for i < len(lines) {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "":
			i++
			continue
		case strings.HasPrefix(l, "import ("):
			j := i
			for j < len(lines) && strings.TrimSpace(lines[j]) != ")" {
				j++
			}
			imports = append(imports, strings.TrimPrefix(strings.Join(lines[i:min(j+1, len(lines))], ""), "import "))
			i = j + 1
			continue
		case strings.HasPrefix(l, "import "):
			imports = append(imports, strings.TrimPrefix(l, "import "))
			i++
			continue
		}
		break
	}
	body := strings.Join(lines[min(i, len(lines)):], "")
	wrapped := "func _() error {\n" + body + "\nreturn nil\n}\n"
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+body, 0); err == nil {
		wrapped = body // declarations only
	}
	head := "package p\n\n"
	for _, imp := range imports {
		head += "import " + imp + "\n"
	}
	text := strings.Join(imports, "\n")
	uses := body + strings.Join(given, "\n")
	for name, path := range knownPackages {
		if regexp.MustCompile(`\b`+name+`\.[A-Z]`).MatchString(uses) && !strings.Contains(text, strconv.Quote(path)) {
			head += fmt.Sprintf("import %s %q\n", name, path)
		}
	}
	for _, g := range given {
		head += "var " + g + "\n"
	}
	s.file = head + "\n" + wrapped
	return s, nil
}

// TestGoSnippets type-checks every Go block of the README and the guides that is
// not a sample.
func TestGoSnippets(t *testing.T) {
	var blocks []block
	for _, file := range docFiles(t) {
		_, bs := readBlocks(t, file)
		blocks = append(blocks, bs...)
	}
	var snippets []snippet
	for _, b := range blocks {
		if kind, _, _ := strings.Cut(b.marker, " "); b.lang != "go" || kind == "sample" || kind == "in" || kind == "file" {
			continue
		}
		s, err := makeSnippet(b)
		if err != nil {
			t.Errorf("%s: %v", b.pos(), err)
			continue
		}
		snippets = append(snippets, s)
	}
	byModule := map[string][]snippet{}
	for _, s := range snippets {
		byModule[s.module] = append(byModule[s.module], s)
	}
	for module, ss := range byModule {
		fset := token.NewFileSet()
		var files []*ast.File
		paths := map[string]bool{}
		for _, s := range ss {
			f, err := parser.ParseFile(fset, s.pos(), s.file, 0)
			if err != nil {
				t.Errorf("%s: %v\n%s", s.pos(), err, s.file)
				files = append(files, nil)
				continue
			}
			files = append(files, f)
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				paths[p] = true
			}
		}
		exports := exportData(t, filepath.Join(root, module), slices.Sorted(func(yield func(string) bool) {
			for p := range paths {
				if !yield(p) {
					return
				}
			}
		}))
		imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exports[path]
			if !ok {
				return nil, fmt.Errorf("no export data for %s (is it in %s's go.mod?)", path, module)
			}
			return os.Open(file)
		})
		for i, s := range ss {
			if files[i] == nil {
				continue
			}
			var errs []string
			conf := types.Config{Importer: imp, Error: func(err error) {
				msg := err.Error()
				if strings.Contains(msg, "declared and not used") || strings.Contains(msg, "imported and not used") {
					return // fragments use what they declare on later lines the document does not show
				}
				errs = append(errs, msg)
			}}
			conf.Check("p", fset, []*ast.File{files[i]}, nil)
			if len(errs) > 0 {
				t.Errorf("%s: the Go block does not compile (module %s):\n\t%s\nas checked:\n%s", s.pos(), module, strings.Join(errs, "\n\t"), s.file)
			}
		}
	}
}

// exportData compiles the packages (go list -export) in module dir and returns
// the export data file of each of them and their dependencies.
func exportData(t *testing.T, dir string, paths []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Export,Error"}, paths...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export in %s: %v\n%s", dir, err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export string
			Error              *struct{ Err string }
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Errorf("go list in %s: %s: %s", dir, p.ImportPath, p.Error.Err)
		}
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
	}
	return exports
}
