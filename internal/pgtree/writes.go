package pgtree

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Write is a data-modifying statement somewhere in a tree: INSERT, UPDATE, DELETE or
// MERGE, with the relation it writes.
type Write struct {
	Node     proto.Message // the *pg.InsertStmt, *pg.UpdateStmt, *pg.DeleteStmt or *pg.MergeStmt
	Kind     string        // "INSERT", "UPDATE", "DELETE" or "MERGE"
	Relation *pg.RangeVar
	// Deferred: the write sits in a body that runs later, not as part of this
	// statement: a rule, a function or procedure body, or a PREPARE.
	Deferred bool
}

// WriteOf returns the write m is, if it is one.
func WriteOf(m protoreflect.Message) (Write, bool) {
	switch s := m.Interface().(type) {
	case *pg.InsertStmt:
		return Write{Node: s, Kind: "INSERT", Relation: s.Relation}, true
	case *pg.UpdateStmt:
		return Write{Node: s, Kind: "UPDATE", Relation: s.Relation}, true
	case *pg.DeleteStmt:
		return Write{Node: s, Kind: "DELETE", Relation: s.Relation}, true
	case *pg.MergeStmt:
		return Write{Node: s, Kind: "MERGE", Relation: s.Relation}, true
	}
	return Write{}, false
}

// defers reports whether m holds statements that run later rather than now.
func defers(m protoreflect.Message) bool {
	switch m.Interface().(type) {
	case *pg.RuleStmt, *pg.CreateFunctionStmt, *pg.PrepareStmt:
		return true
	}
	return false
}

// Writes lists every write in the tree, in walk order: the one definition of "what
// does this statement write" that the driver and sqlfence check share. A plain
// EXPLAIN only plans its statement, so its writes are not listed; EXPLAIN ANALYZE's
// are. visit, when not nil, is called first on every message with whether it sits in
// a deferred body; returning false skips the message's subtree, writes included.
func Writes(root protoreflect.Message, visit func(m protoreflect.Message, deferred bool) bool) []Write {
	var out []Write
	var walk func(deferred bool) func(protoreflect.Message) bool
	walk = func(deferred bool) func(protoreflect.Message) bool {
		return func(m protoreflect.Message) bool {
			if visit != nil && !visit(m, deferred) {
				return false
			}
			if w, ok := WriteOf(m); ok {
				w.Deferred = deferred
				out = append(out, w)
			}
			if e, ok := m.Interface().(*pg.ExplainStmt); ok && !ExplainAnalyze(e) {
				return false
			}
			if !deferred && defers(m) {
				walkChildren(m, walk(true))
				return false
			}
			return true
		}
	}
	Walk(root, walk(false))
	return out
}
