package pgtree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// reflectWalk is the walk by protobuf reflection that children_gen.go replaces: the
// oracle the generated walk is held to.
func reflectWalk(m protoreflect.Message, f func(protoreflect.Message)) {
	f(m)
	mf := fieldsOf(m.Descriptor())
	each := func(fd protoreflect.FieldDescriptor) {
		if v := m.Get(fd); fd.IsList() {
			for i, l := 0, v.List(); i < l.Len(); i++ {
				reflectWalk(l.Get(i).Message(), f)
			}
		} else {
			reflectWalk(v.Message(), f)
		}
	}
	for _, fd := range mf.children {
		if m.Has(fd) {
			each(fd)
		}
	}
	for _, o := range mf.oneofs {
		if fd := m.WhichOneof(o); fd != nil && fd.Kind() == protoreflect.MessageKind {
			each(fd)
		}
	}
}

// TestWalkMatchesReflection holds the generated walk to the reflective one: the
// same messages in the same order, over every statement of the repository's SQL
// corpora (go generate ./internal/pgtree after upgrading pg_query).
func TestWalkMatchesReflection(t *testing.T) {
	var files []string
	_ = filepath.WalkDir("../../testdata", func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".sql") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no corpus files")
	}
	n := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range append(strings.Split(string(text), "\n--! name:"), string(text)) {
			if i := strings.Index(stmt, "\n"); i >= 0 && !strings.HasPrefix(stmt, "--") {
				stmt = stmt[i:] // the entry's name
			}
			tree, err := pgquery.Parse(stmt)
			if err != nil {
				continue
			}
			var want, got []protoreflect.Message
			reflectWalk(tree.ProtoReflect(), func(m protoreflect.Message) { want = append(want, m) })
			Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool { got = append(got, m); return true })
			if len(got) != len(want) {
				t.Fatalf("%s: %q: %d messages walked, want %d", file, stmt, len(got), len(want))
			}
			for i := range got {
				if got[i].Interface() != want[i].Interface() {
					t.Fatalf("%s: %q: message %d is %s, want %s", file, stmt, i, got[i].Descriptor().FullName(), want[i].Descriptor().FullName())
				}
			}
			n++
		}
	}
	if n < 500 {
		t.Fatalf("only %d statements parsed", n)
	}
	t.Logf("%d statements", n)
}
