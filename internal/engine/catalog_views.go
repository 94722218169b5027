// Columns through views: a write through a view is fenced on the view's column of the
// epoch column's name, so that column must be the protected table's own epoch column,
// not another bigint or a computed value under its name.

package engine

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// markViewEpochs makes writes through a view of tables refused when the view's epoch
// column is not, in the view's query as the server keeps it, the epoch column of the
// relation under the view. A view over a view is checked at each level, and refused
// when the view under it is, so a write is fenced only when the column reaches the
// protected table's own epoch column at every step.
func markViewEpochs(tables []Table, raw *pgcatalog.Snapshot) {
	byName := map[QualifiedName]*Table{}
	for i := range tables {
		byName[tables[i].QualifiedName] = &tables[i]
	}
	views := map[uint32]*Table{}
	for _, v := range raw.Views {
		t := byName[QualifiedName{Schema: v.Schema, Name: v.Name}]
		if t == nil {
			continue
		}
		views[v.OID] = t
		if t.unfenceable != "" {
			continue
		}
		if why := viewColumnSource(v.Definition, t.EpochColumn); why != "" {
			name, col := sqlident.QuoteQualified(t.Schema, t.Name), sqlident.Quote(t.EpochColumn)
			t.unfenceable = "the view " + name + " writes a protected table, but its column " + col + " is " + why +
				", not the epoch column of the relation under it: the fence would stamp and compare the wrong column"
			t.unfenceableFix = "write the base table, or select its " + col + " column itself into the view's " + col
		}
	}
	for changed := true; changed; {
		changed = false
		for _, e := range raw.Edges {
			over, under := views[e.From.OID], views[e.To]
			if e.Kind != 'v' || over == nil || under == nil || over.unfenceable != "" || under.unfenceable == "" {
				continue
			}
			over.unfenceable = "the view " + sqlident.QuoteQualified(over.Schema, over.Name) + " writes through the view " +
				sqlident.QuoteQualified(under.Schema, under.Name) + ", which sqlfence cannot fence: " + under.unfenceable
			over.unfenceableFix = under.unfenceableFix
			changed = true
		}
	}
}

// viewColumnSource returns "" when the column col of the view whose query is def is
// the column col of the one relation the query reads, else what it is instead, for
// messages. A query that cannot be read that way (not one relation, not a plain
// column) fails closed.
func viewColumnSource(def, col string) string {
	tree, e := parseBounded(def)
	if e != nil || len(tree.Stmts) != 1 {
		return "in a view query sqlfence cannot read"
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || sel.Op != pg.SetOperation_SETOP_NONE || len(sel.FromClause) != 1 || sel.FromClause[0].GetRangeVar() == nil {
		return "in a view that does not read one relation"
	}
	rv := sel.FromClause[0].GetRangeVar()
	from := rv.Relname
	if rv.Alias != nil {
		from = rv.Alias.Aliasname
	}
	for _, n := range sel.TargetList {
		rt := n.GetResTarget()
		if rt == nil {
			continue
		}
		ref := rt.Val.GetColumnRef()
		name := rt.Name
		var fields []string
		if ref != nil {
			for _, f := range ref.Fields {
				fields = append(fields, f.GetString_().GetSval())
			}
			if name == "" && len(fields) > 0 {
				name = fields[len(fields)-1]
			}
		}
		if name != col {
			continue
		}
		switch {
		case ref == nil:
			return "a computed value"
		case len(fields) == 1 && fields[0] == col, len(fields) == 2 && fields[0] == from && fields[1] == col:
			return ""
		default:
			return "another column (" + joinIdents(fields) + ")"
		}
	}
	return "not a column sqlfence finds in the view's query"
}

func joinIdents(fields []string) string {
	s := ""
	for i, f := range fields {
		if i > 0 {
			s += "."
		}
		s += sqlident.Quote(f)
	}
	return s
}
