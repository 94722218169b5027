// The write finder: every INSERT, UPDATE, DELETE and MERGE in a tree, with the body
// it sits in.

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
	// In names the body the write sits in when it runs later, not as part of this
	// statement: "PREPARE", "RULE" or "FUNCTION" (functions and procedures); "" for a
	// write the statement itself makes.
	In string
}

// WriteOf returns the write m is, if it is one.
func WriteOf(m protoreflect.Message) (Write, bool) { return writeOf(m.Interface()) }

func writeOf(m proto.Message) (Write, bool) {
	switch s := m.(type) {
	case *pg.InsertStmt:
		return Write{Node: s, Kind: "INSERT", Relation: s.Relation}, true
	case *pg.UpdateStmt:
		return Write{Node: s, Kind: "UPDATE", Relation: s.Relation}, true
	case *pg.DeleteStmt:
		return Write{Node: s, Kind: "DELETE", Relation: s.Relation}, true
	case *pg.MergeStmt:
		for _, c := range s.MergeWhenClauses {
			if c.GetMergeWhenClause().GetCommandType() != pg.CmdType_CMD_NOTHING {
				return Write{Node: s, Kind: "MERGE", Relation: s.Relation}, true
			}
		}
		// Every clause is DO NOTHING: the MERGE writes no row.
	}
	return Write{}, false
}

// bodyOf names the body m holds statements for, when they run later rather than now.
func bodyOf(m proto.Message) string {
	switch m.(type) {
	case *pg.RuleStmt:
		return "RULE"
	case *pg.CreateFunctionStmt:
		return "FUNCTION"
	case *pg.PrepareStmt:
		return "PREPARE"
	}
	return ""
}

// Writes lists every write in the tree, in walk order: the one definition of "what
// does this statement write" that the driver and sqlfence check share. A plain
// EXPLAIN only plans its statement, so its writes are not listed; EXPLAIN ANALYZE's
// are. visit, when not nil, is called first on every message with the body it sits in
// (Write.In); returning false skips the message's subtree, writes included.
func Writes(root protoreflect.Message, visit func(m protoreflect.Message, in string) bool) []Write {
	if visit == nil {
		return WritesIn(root.Interface(), nil)
	}
	return WritesIn(root.Interface(), func(m proto.Message, in string) bool { return visit(m.ProtoReflect(), in) })
}

// WritesIn is Writes for callers that switch on each message's Go type.
func WritesIn(root proto.Message, visit func(m proto.Message, in string) bool) []Write {
	var out []Write
	var walk func(in string) func(proto.Message) bool
	walk = func(in string) func(proto.Message) bool {
		return func(m proto.Message) bool {
			if visit != nil && !visit(m, in) {
				return false
			}
			if w, ok := writeOf(m); ok {
				w.In = in
				out = append(out, w)
			}
			if e, ok := m.(*pg.ExplainStmt); ok && !ExplainAnalyze(e) {
				return false
			}
			if body := bodyOf(m); in == "" && body != "" {
				inner := walk(body)
				eachChild(m, func(c proto.Message) bool {
					WalkNodes(c, inner)
					return true
				})
				return false
			}
			return true
		}
	}
	WalkNodes(root, walk(""))
	return out
}
