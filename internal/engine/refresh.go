// REFRESH MATERIALIZED VIEW: it writes only the view's own storage, but it runs the
// view's query and its indexes' expressions, and every function they call.

package engine

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// judgeRefresh passes a REFRESH when every materialized view the name may reach has
// a query that passes as a read and indexes whose expressions call nothing that could
// write: the calls are the only way a refresh reaches another table (a materialized
// view has no triggers or rules, and its query cannot hold a data-modifying WITH).
// The query is in the catalog, so without resolve: catalog the refresh is refused.
func judgeRefresh(p *Policy, s *pg.RefreshMatViewStmt) *Error {
	rv := s.GetRelation()
	if rv == nil {
		return refuse(rulecode.UnjudgedCall, nil, "a REFRESH MATERIALIZED VIEW sqlfence cannot read", "name the view")
	}
	shown := nameOfRangeVar(rv)
	if p.catalog == nil {
		return refuse(rulecode.UnjudgedCall, nil, "REFRESH MATERIALIZED VIEW "+shown+" runs the view's query, whose function calls sqlfence can judge only from the catalog",
			"set `resolve: catalog` in the policy, or refresh the view outside the driver")
	}
	found := false
	for i := range p.catalog.matviews {
		m := &p.catalog.matviews[i]
		if m.Name != rv.Relname || (rv.Schemaname != "" && m.Schema != rv.Schemaname) {
			continue
		}
		found = true
		what := "REFRESH MATERIALIZED VIEW " + QualifiedName{Schema: m.Schema, Name: m.Name}.String()
		tree, e := parseBounded(m.Query)
		if e == nil {
			for _, raw := range tree.Stmts {
				if raw.Stmt.GetSelectStmt() == nil {
					e = refuse(rulecode.UnreadableBody, nil, "its query is not a SELECT", "refresh the view outside the driver")
				} else {
					e = admitStatement(p, raw.Stmt)
				}
				if e != nil {
					break
				}
			}
		}
		for _, def := range m.Indexes {
			if e != nil {
				break
			}
			var idx *pg.ParseResult
			if idx, e = parseBounded(def); e == nil {
				e = admitCalls(p, idx.ProtoReflect())
			}
		}
		if e != nil {
			c := *e
			c.Reason = what + ": " + c.Reason
			return &c
		}
	}
	if !found {
		return refuse(rulecode.UnjudgedCall, nil, "REFRESH MATERIALIZED VIEW "+shown+": no materialized view of that name was in the catalog when sqlfence read it",
			"create it before the application connects, or through the driver with `ddl: allow`")
	}
	return nil
}
