package pgtree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// TestParseMatches: the comparison of encodings agrees with Equal, the comparison of
// trees, on every pair of the statements below and of the golden statements: equal
// apart from positions, or not.
func TestParseMatches(t *testing.T) {
	texts := []string{
		"UPDATE t SET a = 1 WHERE b = $1",
		"update t set a=1 where b=$1",
		"UPDATE t /* c */ SET a = 1\nWHERE b=$1",
		"UPDATE t SET a = 2 WHERE b = $1",
		"UPDATE t SET a = 1 WHERE b = $2",
		"UPDATE t SET a = 1 WHERE b = $1 AND c",
		"UPDATE ONLY t SET a = 1 WHERE b = $1",
		"UPDATE t SET a = 1",
		"UPDATE t SET a = '1' WHERE b = $1",
		"UPDATE t SET a = 1.0 WHERE b = $1",
		"UPDATE t SET a = -1 WHERE b = $1",
		"UPDATE t SET a = 1 WHERE b = $1 AND t.writer_epoch OPERATOR(pg_catalog.<) $2::bigint",
		"UPDATE t SET a = 1 WHERE b = $1 AND t.writer_epoch OPERATOR(pg_catalog.<=) $2::bigint",
		"UPDATE t SET a = 1 WHERE (b = $1) AND t.writer_epoch < $2::bigint",
		"SELECT 1; SELECT 1",
		"SELECT 1",
		"SELECT ''",
		"SELECT false",
		"SELECT true",
		"SELECT NULL",
	}
	files, _ := filepath.Glob("../../testdata/rewrite/*.sql")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, out, _ := strings.Cut(string(data), "\n---- sent ----\n")
		texts = append(texts, in)
		if out = strings.TrimSpace(out); out != "PASS" && !strings.HasPrefix(out, "REFUSED") {
			texts = append(texts, out)
		}
	}
	trees := map[string]*pg.ParseResult{}
	for _, s := range texts {
		if tree, err := pgquery.Parse(s); err == nil {
			trees[s] = tree
		}
	}
	matches := 0
	for a, ta := range trees {
		for b, tb := range trees {
			want := Equal(ta.ProtoReflect(), tb.ProtoReflect())
			got, err := ParseMatches(ta, b, OutputLimit)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if got != want {
				t.Errorf("ParseMatches(%q, %q) = %v, Equal says %v", a, b, got, want)
			}
			if got {
				matches++
			}
		}
	}
	if matches <= len(trees) {
		t.Fatalf("only %d matches among %d texts: the test compares nothing but identities", matches, len(trees))
	}
}

// TestParseMatchesChangedTree: a tree changed in Go after parsing — a node added, a
// value changed, a list shortened — no longer matches its text.
func TestParseMatchesChangedTree(t *testing.T) {
	const text = "UPDATE t SET a = 1, b = $1 WHERE c = 'x' AND d"
	for name, change := range map[string]func(u *pg.UpdateStmt){
		"target added":   func(u *pg.UpdateStmt) { u.TargetList = append(u.TargetList, u.TargetList[0]) },
		"target dropped": func(u *pg.UpdateStmt) { u.TargetList = u.TargetList[:1] },
		"name changed":   func(u *pg.UpdateStmt) { u.TargetList[0].GetResTarget().Name = "z" },
		"param changed":  func(u *pg.UpdateStmt) { u.TargetList[1].GetResTarget().Val.GetParamRef().Number = 2 },
		"only":           func(u *pg.UpdateStmt) { u.Relation.Inh = false },
		"where dropped":  func(u *pg.UpdateStmt) { u.WhereClause = nil },
		"position moved": nil,
	} {
		tree, err := pgquery.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		u := tree.Stmts[0].Stmt.GetUpdateStmt()
		if change == nil {
			u.Relation.Location += 3
		} else {
			change(u)
		}
		got, err := ParseMatches(tree, text, OutputLimit)
		if err != nil {
			t.Fatal(err)
		}
		if got != (change == nil) {
			t.Errorf("%s: ParseMatches = %v", name, got)
		}
	}
}

// TestMatchEveryField holds the generated comparison (match_gen.go) to what it must
// tell apart, over every statement of the repository's SQL corpora: the parser's
// output matches its own tree, still matches with a position moved, and no longer
// matches once any other field of any node is changed, set, cleared, or a list
// grown or shortened.
func TestMatchEveryField(t *testing.T) {
	stmts := corpusStatements(t)
	checked := 0
	for _, stmt := range stmts {
		enc, err := pgquery.ParseToProtobuf(stmt)
		if err != nil {
			continue
		}
		tree, err := pgquery.Parse(stmt)
		if err != nil {
			t.Fatal(err)
		}
		if !matchParseResult(enc, tree) {
			t.Fatalf("%q does not match its own tree", stmt)
		}
		var msgs []protoreflect.Message
		Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool { msgs = append(msgs, m); return true })
		for _, m := range msgs {
			fields := m.Descriptor().Fields()
			for i := 0; i < fields.Len(); i++ {
				fd := fields.Get(i)
				for _, change := range changesOf(m, fd) {
					undo := change.do()
					if got := matchParseResult(enc, tree); got != isPosition(fd) {
						t.Fatalf("%q: %s %s: match = %v", stmt, fd.FullName(), change.what, got)
					}
					undo()
					checked++
				}
			}
		}
		if !matchParseResult(enc, tree) {
			t.Fatalf("%q: the changes were not undone", stmt)
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d changes checked", checked)
	}
	t.Logf("%d statements, %d changes", len(stmts), checked)
}

type change struct {
	what string
	do   func() (undo func())
}

// changesOf lists the changes to field fd of m that change the tree (for a
// position: that move the node).
func changesOf(m protoreflect.Message, fd protoreflect.FieldDescriptor) []change {
	restore := func() func() {
		if !m.Has(fd) {
			return func() { m.Clear(fd) }
		}
		old := m.Get(fd)
		return func() { m.Set(fd, old) }
	}
	set := func(what string, v func() protoreflect.Value) change {
		return change{what, func() func() { undo := restore(); m.Set(fd, v()); return undo }}
	}
	if fd.ContainingOneof() != nil {
		if !m.Has(fd) {
			return nil
		}
		return []change{{"cleared", func() func() { undo := restore(); m.Clear(fd); return undo }}}
	}
	switch {
	case fd.IsList():
		l := m.Mutable(fd).List()
		var extra protoreflect.Value
		switch fd.Kind() {
		case protoreflect.MessageKind:
			if l.Len() == 0 {
				extra = protoreflect.ValueOfMessage(l.NewElement().Message())
			} else {
				extra = l.Get(l.Len() - 1)
			}
		case protoreflect.StringKind:
			extra = protoreflect.ValueOfString("x")
		case protoreflect.Uint64Kind:
			extra = protoreflect.ValueOfUint64(1)
		default:
			panic(fd.FullName())
		}
		cs := []change{{"grown", func() func() {
			l.Append(extra)
			return func() { l.Truncate(l.Len() - 1) }
		}}}
		if l.Len() > 0 {
			cs = append(cs, change{"shortened", func() func() {
				last := l.Get(l.Len() - 1)
				l.Truncate(l.Len() - 1)
				return func() { l.Append(last) }
			}})
		}
		return cs
	case fd.Kind() == protoreflect.MessageKind:
		if m.Has(fd) {
			return []change{{"cleared", func() func() { undo := restore(); m.Clear(fd); return undo }}}
		}
		return []change{set("set empty", func() protoreflect.Value { return protoreflect.ValueOfMessage(m.NewField(fd).Message()) })}
	}
	v := m.Get(fd)
	var next protoreflect.Value
	switch fd.Kind() {
	case protoreflect.BoolKind:
		next = protoreflect.ValueOfBool(!v.Bool())
	case protoreflect.EnumKind:
		next = protoreflect.ValueOfEnum(v.Enum() + 1)
	case protoreflect.Int32Kind:
		next = protoreflect.ValueOfInt32(int32(v.Int()) + 1)
	case protoreflect.Int64Kind:
		next = protoreflect.ValueOfInt64(v.Int() + 1)
	case protoreflect.Uint32Kind:
		next = protoreflect.ValueOfUint32(uint32(v.Uint()) + 1)
	case protoreflect.Uint64Kind:
		next = protoreflect.ValueOfUint64(v.Uint() + 1)
	case protoreflect.StringKind:
		next = protoreflect.ValueOfString(v.String() + "x")
	case protoreflect.DoubleKind:
		next = protoreflect.ValueOfFloat64(v.Float() + 1)
	default:
		panic(fd.FullName())
	}
	cs := []change{set("changed", func() protoreflect.Value { return next })}
	if m.Has(fd) && !isPosition(fd) {
		cs = append(cs, change{"cleared", func() func() { undo := restore(); m.Clear(fd); return undo }})
	}
	return cs
}

// corpusStatements is every statement of the repository's SQL corpora, and each
// corpus file whole.
func corpusStatements(t *testing.T) []string {
	var stmts []string
	_ = filepath.WalkDir("../../testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".sql") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range append(strings.Split(string(text), "\n--! name:"), string(text)) {
			if i := strings.Index(stmt, "\n"); i >= 0 && !strings.HasPrefix(stmt, "--") {
				stmt = stmt[i:]
			}
			stmts = append(stmts, stmt)
		}
		return nil
	})
	if len(stmts) < 500 {
		t.Fatalf("only %d statements in the corpora", len(stmts))
	}
	return stmts
}
