// The write finder: every write to a protected table or a claim table anywhere in a
// tree, independent of the rewrite, and the statements that cannot be fenced at all.

package engine

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// claimWrite finds a write to a claim table's epoch or status column: claiming, in
// effect. Only the claim helpers' statements may do that, or one job type could be
// claimed without incrementing the epoch and its writes would carry no token.
func claimWrite(p *Policy, tree *pg.ParseResult) *ClaimTable {
	var found *ClaimTable
	// allColumns: an INSERT without a column list writes every column, the claim
	// columns included.
	check := func(rv *pg.RangeVar, allColumns bool, lists ...[]*pg.Node) {
		if rv == nil || found != nil {
			return
		}
		if isEpochObject(rv.Relname) {
			found = counterClaim(rv) // epochobjects.go: any write to an epoch counter
			return
		}
		c := p.MatchClaim(rv.Schemaname, rv.Relname)
		if c == nil {
			return
		}
		if allColumns {
			found = c
		}
		for _, l := range lists {
			for _, n := range l {
				if rt := n.GetResTarget(); rt != nil && (rt.Name == c.EpochColumn || rt.Name == c.StatusColumn) {
					found = c
				}
			}
		}
	}
	pgtree.WalkNodes(tree, func(m proto.Message) bool {
		switch s := m.(type) {
		case *pg.UpdateStmt:
			check(s.Relation, false, s.TargetList)
		case *pg.InsertStmt:
			check(s.Relation, len(s.Cols) == 0 && s.SelectStmt != nil, s.Cols, s.OnConflictClause.GetTargetList())
		case *pg.MergeStmt:
			for _, w := range s.MergeWhenClauses {
				c := w.GetMergeWhenClause()
				check(s.Relation, c.GetCommandType() == pg.CmdType_CMD_INSERT && len(c.GetTargetList()) == 0 && len(c.GetValues()) > 0, c.GetTargetList())
			}
		case *pg.CopyStmt:
			if s.IsFrom || !isEpochObject(s.Relation.GetRelname()) {
				check(s.Relation, s.IsFrom)
			}
		case *pg.DeleteStmt:
			if isEpochObject(s.Relation.GetRelname()) {
				check(s.Relation, false)
			}
		case *pg.TruncateStmt:
			for _, r := range s.Relations {
				if rv := r.GetRangeVar(); isEpochObject(rv.GetRelname()) {
					check(rv, false)
				}
			}
		}
		return found == nil
	})
	return found
}

func readOnlyWith(w *pg.WithClause) bool {
	for _, c := range w.Ctes {
		q := c.GetCommonTableExpr().GetCtequery()
		if q.GetSelectStmt() == nil || hasWrite(q) {
			return false
		}
	}
	return true
}

func hasWrite(n *pg.Node) bool { return len(pgtree.Writes(n.ProtoReflect(), nil)) > 0 }

// protectedWrite is a write to a protected table somewhere in a statement's tree.
type protectedWrite struct {
	node  proto.Message
	table *Table
}

// findWrites lists every write to a protected table anywhere in the tree, and refuses
// the statements sqlfence cannot fence at all. It is independent of the rewrite: a
// write the rewrite did not reach is refused because it is on this list.
func findWrites(p *Policy, tree *pg.ParseResult) ([]protectedWrite, *Error) {
	var (
		writes []protectedWrite
		err    *Error
	)
	// visit refuses the protected writes that cannot be fenced at all; pgtree.Writes
	// lists the writes. Everything else a statement may do was judged by admit.
	visit := func(m proto.Message, _ string) bool {
		if err != nil {
			return false
		}
		switch s := m.(type) {
		case *pg.TruncateStmt:
			for _, n := range s.Relations {
				if t := match(p, n.GetRangeVar()); t != nil {
					err = refuse(rulecode.Truncate, t, "TRUNCATE cannot be fenced",
						"delete the rows with DELETE under an epoch, or truncate outside the driver with the guard's operator override")
				}
			}
		case *pg.CopyStmt:
			if t := match(p, s.Relation); t != nil && s.IsFrom {
				err = refuse(rulecode.CopyFrom, t, "COPY FROM cannot be fenced",
					"insert the rows with INSERT … VALUES or INSERT … SELECT FROM unnest($1::…[]) under an epoch")
			}
		}
		return err == nil
	}
	for _, s := range tree.Stmts {
		for _, w := range pgtree.WritesIn(s, visit) {
			// A deferred write (a rule or routine body created with ddl: allow) runs
			// later, where no epoch reaches; admitDDL judged it.
			if t := match(p, w.Relation); t != nil && w.In == "" {
				writes = append(writes, protectedWrite{node: w.Node, table: t})
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return writes, nil
}

func match(p *Policy, rv *pg.RangeVar) *Table {
	if rv == nil {
		return nil
	}
	t, _ := p.Match(rv.Schemaname, rv.Relname)
	return t
}

// tableIn returns the first protected table written anywhere under root, deferred
// bodies included.
func tableIn(p *Policy, root protoreflect.Message) *Table {
	for _, w := range pgtree.Writes(root, nil) {
		if t := match(p, w.Relation); t != nil {
			return t
		}
	}
	return nil
}

func nameOf(name []*pg.Node) string {
	parts := make([]string, 0, len(name))
	for _, n := range name {
		parts = append(parts, sqlident.Quote(n.GetString_().GetSval()))
	}
	return strings.Join(parts, ".")
}
