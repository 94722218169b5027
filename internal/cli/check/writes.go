package check

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// The write finder: which statements write which protected tables. The root package
// has its own (rewrite.go); this one is kept alone in this file so that both can
// move to one shared package.

// write is one write to a protected table somewhere in a statement.
type write struct {
	kind      string // UPDATE, DELETE, INSERT, MERGE
	table     *sqlfence.Table
	ambiguous bool
	rv        *pg.RangeVar
	qual      string // how the statement refers to the target: its alias or name
	node      proto.Message
	upsert    bool // INSERT … ON CONFLICT DO UPDATE
	weak      bool // compares with <= although the table is strict
}

// protectedWrites lists the writes to protected tables anywhere in a statement, and
// says why the statement is opaque when a write sits where no epoch can reach (a rule
// or function body) or it calls a function the policy lists.
func protectedWrites(pol *sqlfence.Policy, stmt *pg.Node) (writes []write, opaque string) {
	var visit func(inBody bool) func(m protoreflect.Message) bool
	visit = func(inBody bool) func(m protoreflect.Message) bool {
		return func(m protoreflect.Message) bool {
			var (
				rv   *pg.RangeVar
				kind string
			)
			switch s := m.Interface().(type) {
			case *pg.UpdateStmt:
				rv, kind = s.Relation, "UPDATE"
			case *pg.DeleteStmt:
				rv, kind = s.Relation, "DELETE"
			case *pg.InsertStmt:
				rv, kind = s.Relation, "INSERT"
			case *pg.MergeStmt:
				rv, kind = s.Relation, "MERGE"
			case *pg.ExplainStmt:
				return pgtree.ExplainAnalyze(s) // plain EXPLAIN plans the write without running it
			case *pg.RuleStmt, *pg.CreateFunctionStmt:
				if !inBody {
					// A body's writes run later, inside the database: walk it as such.
					pgtree.Walk(m, visit(true))
					return false
				}
			case *pg.FuncCall:
				if listedFunction(pol, s.Funcname) && opaque == "" {
					opaque = "it calls a function the policy lists as writing protected tables"
				}
			}
			if rv != nil {
				if t, ambiguous := pol.Match(rv.Schemaname, rv.Relname); t != nil {
					if inBody && opaque == "" {
						opaque = "a rule or function body that writes a protected table runs without the fence"
					}
					qual := rv.Relname
					if rv.Alias != nil && rv.Alias.Aliasname != "" {
						qual = rv.Alias.Aliasname
					}
					writes = append(writes, write{kind: kind, table: t, ambiguous: ambiguous, rv: rv, qual: qual, node: m.Interface()})
				}
			}
			return true
		}
	}
	pgtree.Walk(stmt.ProtoReflect(), visit(false))
	return writes, opaque
}

func listedFunction(pol *sqlfence.Policy, name []*pg.Node) bool {
	schema, fn := pgtree.FuncName(name)
	return fn != "" && pol.MatchFunction(schema, fn)
}
