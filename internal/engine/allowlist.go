// The allowlist: on a fenced connection a statement runs only when sqlfence can say
// what it does to protected tables. Reads, fenced or provably unprotected DML,
// transaction control, a list of settings, and a few session statements pass;
// everything else is refused with what to do instead. Writes to protected tables are
// then found (protected.go) and fenced (rewrite*.go).

package engine

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// admit checks every statement of a parsed text against the allowlist.
func admit(p *Policy, tree *pg.ParseResult) *Error {
	for _, raw := range tree.Stmts {
		if e := admitStatement(p, raw.Stmt); e != nil {
			return e
		}
	}
	return nil
}

// admitStatement judges one statement, at the top of a text or inside a routine body.
func admitStatement(p *Policy, n *pg.Node) *Error {
	if n == nil {
		return nil
	}
	switch s := n.Node.(type) {
	case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt, *pg.Node_MergeStmt,
		*pg.Node_ReturnStmt, *pg.Node_CreateTableAsStmt:
		if _, ok := s.(*pg.Node_CreateTableAsStmt); ok && !p.AllowDDL {
			return refuseDDL("CREATE TABLE AS")
		}
		if sel := n.GetSelectStmt(); sel != nil && sel.IntoClause != nil && !p.AllowDDL {
			return refuseDDL("SELECT … INTO (it creates a table)")
		}
		for _, w := range pgtree.WritesIn(n, nil) {
			if w.Relation != nil && systemRelation(w.Relation) {
				return refuse(rulecode.SystemRelation, nil, w.Kind+" of the system relation "+nameOfRangeVar(w.Relation)+" is not run on a fenced connection: writing the catalog or pg_settings changes what statements mean out of the fence's sight",
					"change the schema with DDL and settings with SET, outside the driver if sqlfence refuses them")
			}
			// Triggers, rules and foreign-key actions the catalog shows (resolve: catalog).
			if e := p.catalog.judgeWrite(w, p); e != nil {
				return e
			}
		}
		return admitCalls(p, n.ProtoReflect())
	case *pg.Node_ExplainStmt:
		// Without ANALYZE the statement is planned, not run — but planning evaluates
		// IMMUTABLE calls with constant arguments (a column default's among them) and
		// inlines SQL functions, and either may call a routine that writes. So the
		// statement is judged as if it ran.
		return admitStatement(p, s.ExplainStmt.Query)
	case *pg.Node_TransactionStmt, *pg.Node_VariableShowStmt, *pg.Node_ListenStmt, *pg.Node_UnlistenStmt,
		*pg.Node_NotifyStmt, *pg.Node_DiscardStmt, *pg.Node_DeallocateStmt, *pg.Node_LockStmt,
		*pg.Node_FetchStmt, *pg.Node_ClosePortalStmt, *pg.Node_ConstraintsSetStmt:
		return nil
	case *pg.Node_RefreshMatViewStmt:
		return judgeRefresh(p, s.RefreshMatViewStmt)
	case *pg.Node_DeclareCursorStmt:
		return admitStatement(p, s.DeclareCursorStmt.Query)
	case *pg.Node_VariableSetStmt:
		return admitSetting(s.VariableSetStmt)
	case *pg.Node_CopyStmt:
		c := s.CopyStmt
		if c.Filename != "" || c.IsProgram {
			return refuse(rulecode.CopyProgram, nil, "COPY to or from a server file or program is not run on a fenced connection",
				"use COPY … FROM STDIN / TO STDOUT")
		}
		if c.Query != nil {
			return admitStatement(p, c.Query)
		}
		if c.IsFrom {
			if e := p.catalog.judgeRelationWrite(c.Relation, evInsert, "COPY FROM", nil); e != nil {
				return e
			}
		}
		return admitCalls(p, n.ProtoReflect()) // a WHERE on COPY FROM
	case *pg.Node_TruncateStmt:
		if s.TruncateStmt.Behavior == pg.DropBehavior_DROP_CASCADE {
			return refuse(rulecode.TruncateCascade, nil, "TRUNCATE … CASCADE empties every table with a foreign key to the named ones, protected tables among them",
				"truncate the tables by name, or delete the rows with DELETE under an epoch")
		}
		for _, r := range s.TruncateStmt.Relations {
			if e := p.catalog.judgeRelationWrite(r.GetRangeVar(), evTruncate, "TRUNCATE", nil); e != nil {
				return e
			}
		}
		return nil // of a protected table: refused by findWrites
	case *pg.Node_DoStmt:
		return judgeDo(p, s.DoStmt)
	case *pg.Node_CallStmt:
		fc := s.CallStmt.GetFunccall()
		if fc == nil {
			return refuse(rulecode.UnjudgedCall, nil, "a CALL sqlfence cannot read", "call procedures by name")
		}
		if e := judgeCall(p, fc.Funcname, fc.Args, "CALL"); e != nil {
			return e
		}
		return admitCalls(p, n.ProtoReflect())
	case *pg.Node_PrepareStmt, *pg.Node_ExecuteStmt:
		return refuse(rulecode.SQLPrepare, nil, "SQL-level PREPARE and EXECUTE are not run on a fenced connection: EXECUTE runs a statement sqlfence cannot see, with parameters it does not bind",
			"prepare through database/sql (db.PrepareContext); drivers prepare at the protocol level, where sqlfence fences the statement")
	}
	if !p.AllowDDL {
		return refuseDDL(statementKind(n))
	}
	return admitDDL(p, n)
}

// refuseDDL is the refusal for DDL, and statements outside the allowlist, under
// ddl: deny.
func refuseDDL(kind string) *Error {
	return refuse(rulecode.NotAllowlisted, nil, kind+" is not run on a fenced connection: it is DDL or outside the allowlist, and the policy does not allow DDL (ddl: deny, the default)",
		"run migrations outside the driver, or set `ddl: allow` in the policy for programs that migrate through the same handle")
}

// statementKind names a statement by its parse-tree node for messages:
// "the statement (create_stmt)".
func statementKind(n *pg.Node) string {
	m := n.ProtoReflect()
	return "the statement (" + string(m.WhichOneof(m.Descriptor().Oneofs().Get(0)).Name()) + ")"
}

func nameOfRangeVar(rv *pg.RangeVar) string {
	if rv.Schemaname == "" {
		return QualifiedName{Name: rv.Relname}.String()
	}
	return QualifiedName{Schema: rv.Schemaname, Name: rv.Relname}.String()
}
