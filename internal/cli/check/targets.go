package check

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// Which statements write which protected tables: pgtree.Writes, the finder the driver
// uses too, matched against the policy.

// write is one write to a protected table somewhere in a statement.
type write struct {
	kind      string // UPDATE, DELETE, INSERT, MERGE
	table     *sqlfence.Table
	ambiguous bool
	rv        *pg.RangeVar
	qual      string // how the statement refers to the target: its alias or name
	node      proto.Message
	upsert    bool   // INSERT … ON CONFLICT DO UPDATE
	weak      bool   // compares with <= although the table is strict
	in        string // the body the write sits in (pgtree.Write.In), "" for the statement's own
}

// protectedWrites lists the writes to protected tables anywhere in a statement, and
// says why the statement is opaque when a write sits where no epoch can reach (a rule
// or function body) or it calls a function the policy lists.
func protectedWrites(pol *sqlfence.Policy, stmt *pg.Node) (writes []write, opaque string) {
	visit := func(m protoreflect.Message, _ string) bool {
		if fc, ok := m.Interface().(*pg.FuncCall); ok && opaque == "" && pol.MatchFunction(pgtree.FuncName(fc.Funcname)) {
			opaque = "it calls a function the policy lists as writing protected tables"
		}
		return true
	}
	for _, w := range pgtree.Writes(stmt.ProtoReflect(), visit) {
		t, ambiguous := pol.Match(w.Relation.GetSchemaname(), w.Relation.GetRelname())
		if t == nil {
			continue
		}
		if (w.In == "RULE" || w.In == "FUNCTION") && opaque == "" {
			// A body's writes run later, inside the database, where no epoch reaches.
			opaque = "a rule or function body that writes a protected table runs without the fence"
		}
		qual := w.Relation.Relname
		if a := w.Relation.Alias; a != nil && a.Aliasname != "" {
			qual = a.Aliasname
		}
		writes = append(writes, write{kind: w.Kind, table: t, ambiguous: ambiguous, rv: w.Relation, qual: qual, node: w.Node, in: w.In})
	}
	return writes, opaque
}
