// DDL under `ddl: allow`: what a program that migrates through the fenced handle may
// run. DDL that could change which rows are protected or how the fence reads them is
// refused even then: renaming or moving protected tables, schemas or epoch columns,
// inheritance and partition changes involving them, changes to the epoch column,
// switching triggers or rules, foreign keys that cascade into protected tables, and
// code (functions, procedures, triggers, rules, operators, casts, event triggers,
// extensions) that writes them or whose effect cannot be read.

package engine

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// refuseFenceDDL is the refusal for DDL that moves the fence's ground.
func refuseFenceDDL(t *Table, what string) *Error {
	return refuse(rulecode.FenceDDL, t, what+" changes which rows are protected or how the fence reads them, so it is not run on a fenced connection even with `ddl: allow`",
		"run it as a reviewed migration outside the driver, then update the policy and re-run `sqlfence guard`")
}

func refuseCodeDDL(what string) *Error {
	return refuse(rulecode.CodeDDL, nil, what+" creates code whose effect on protected tables sqlfence cannot read, so it is not run on a fenced connection even with `ddl: allow`",
		"run it as a reviewed migration outside the driver")
}

// admitDDL judges DDL when the policy allows DDL.
func admitDDL(p *Policy, n *pg.Node) *Error {
	if e := admitEpochObjectDDL(n); e != nil {
		return e
	}
	if e := p.judgeBoundDDL(n); e != nil { // catalog_bound.go: event triggers, rebuilt rows
		return e
	}
	switch s := n.Node.(type) {
	case *pg.Node_RenameStmt:
		return admitRename(p, s.RenameStmt)
	case *pg.Node_AlterObjectSchemaStmt:
		a := s.AlterObjectSchemaStmt
		if a.Relation != nil {
			if t := match(p, a.Relation); t != nil {
				return refuseFenceDDL(t, "moving a protected table to another schema")
			}
			if t, _ := p.Match(a.Newschema, a.Relation.Relname); t != nil {
				return refuseFenceDDL(t, "moving a table into a protected table's place")
			}
		}
		if routineObject(a.ObjectType) {
			return refuseCodeDDL("moving a function, procedure or operator to another schema")
		}
	case *pg.Node_AlterTableStmt:
		return admitAlterTable(p, s.AlterTableStmt)
	case *pg.Node_CreateStmt:
		c := s.CreateStmt
		for _, inh := range c.InhRelations {
			if t := match(p, inh.GetRangeVar()); t != nil {
				return refuseFenceDDL(t, "a table that inherits from or is a partition of a protected table")
			}
		}
		if t := match(p, c.Relation); t != nil {
			if e := cascadingKeys(t, n.ProtoReflect()); e != nil {
				return e
			}
		}
	case *pg.Node_ViewStmt:
		if t := readsProtected(p, s.ViewStmt.Query); t != nil && writableView(s.ViewStmt.Query) {
			return refuseFenceDDL(t, "a view over a protected table that PostgreSQL can write through (writes through it would reach the table under another name)")
		}
	case *pg.Node_CreateFunctionStmt:
		return admitRoutine(p, s.CreateFunctionStmt)
	case *pg.Node_CreateTrigStmt:
		tr := s.CreateTrigStmt
		if t := match(p, tr.Relation); t != nil {
			return refuseFenceDDL(t, "a trigger on a protected table (it can change the epoch column or the row behind the fence)")
		}
		if e := judgeCall(p, tr.Funcname, nil, "trigger function"); e != nil {
			return e
		}
	case *pg.Node_RuleStmt:
		r := s.RuleStmt
		if t := match(p, r.Relation); t != nil {
			return refuseFenceDDL(t, "a rule on a protected table (it can redirect or drop fenced writes)")
		}
		for _, a := range r.Actions {
			if e := admitStatement(p, a); e != nil {
				return e
			}
			if t := tableIn(p, a.ProtoReflect()); t != nil {
				return refuse(rulecode.BodyWrites, t, "a rule that writes a protected table runs without the fence",
					"write the table with plain statements under an epoch")
			}
		}
	case *pg.Node_DefineStmt:
		if s.DefineStmt.Kind == pg.ObjectType_OBJECT_OPERATOR {
			return refuseCodeDDL("CREATE OPERATOR")
		}
	case *pg.Node_CreateCastStmt:
		return refuseCodeDDL("CREATE CAST")
	case *pg.Node_CreateEventTrigStmt, *pg.Node_AlterEventTrigStmt:
		return refuseCodeDDL("an event trigger")
	case *pg.Node_CreateExtensionStmt:
		return admitExtension(s.CreateExtensionStmt) // extensions.go
	case *pg.Node_CreateTransformStmt, *pg.Node_CreatePlangStmt, *pg.Node_LoadStmt,
		*pg.Node_AlterExtensionStmt, *pg.Node_AlterExtensionContentsStmt, *pg.Node_CreateOpClassStmt,
		*pg.Node_AlterOpFamilyStmt, *pg.Node_CreateConversionStmt:
		return refuseCodeDDL(statementKind(n))
	case *pg.Node_AlterFunctionStmt, *pg.Node_AlterOperatorStmt:
		return refuseCodeDDL("ALTER FUNCTION or ALTER OPERATOR")
	case *pg.Node_AlterSystemStmt, *pg.Node_AlterDatabaseSetStmt, *pg.Node_AlterRoleSetStmt:
		return refuse(rulecode.Defaults, nil, "changing server, database or role defaults is not run on a fenced connection: a default such as client_encoding changes how later sessions read statements",
			"change defaults as a reviewed migration outside the driver")
	case *pg.Node_DropStmt:
		return admitDrop(p, s.DropStmt)
	case *pg.Node_CreateSchemaStmt:
		for _, e := range s.CreateSchemaStmt.SchemaElts {
			if err := admitStatement(p, e); err != nil {
				return err
			}
		}
		return nil
	}
	return admitCalls(p, n.ProtoReflect())
}

func routineObject(t pg.ObjectType) bool {
	switch t {
	case pg.ObjectType_OBJECT_FUNCTION, pg.ObjectType_OBJECT_PROCEDURE, pg.ObjectType_OBJECT_ROUTINE,
		pg.ObjectType_OBJECT_AGGREGATE, pg.ObjectType_OBJECT_OPERATOR:
		return true
	}
	return false
}

// schemaMayHoldProtected reports whether a protected table may live in schema: an
// unqualified policy entry matches in every schema.
func (p *Policy) schemaMayHoldProtected(schema string) *Table {
	for i := range p.Tables {
		if t := &p.Tables[i]; t.Schema == "" || t.Schema == schema {
			return t
		}
	}
	return nil
}

func admitRename(p *Policy, r *pg.RenameStmt) *Error {
	switch r.RenameType {
	case pg.ObjectType_OBJECT_SCHEMA:
		if t := p.schemaMayHoldProtected(r.Subname); t != nil {
			return refuseFenceDDL(t, "renaming a schema that may hold a protected table")
		}
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW, pg.ObjectType_OBJECT_FOREIGN_TABLE:
		if t := match(p, r.Relation); t != nil {
			return refuseFenceDDL(t, "renaming a protected table")
		}
		if t, _ := p.Match(r.Relation.GetSchemaname(), r.Newname); t != nil {
			return refuseFenceDDL(t, "renaming a table into a protected table's name")
		}
	case pg.ObjectType_OBJECT_COLUMN:
		if t := match(p, r.Relation); t != nil && (r.Subname == t.EpochColumn || r.Newname == t.EpochColumn) {
			return refuseFenceDDL(t, "renaming the epoch column")
		}
	default:
		if routineObject(r.RenameType) {
			return refuseCodeDDL("renaming a function, procedure or operator (the new name can shadow another)")
		}
	}
	return nil
}

func admitAlterTable(p *Policy, a *pg.AlterTableStmt) *Error {
	t := match(p, a.Relation)
	for _, c := range a.Cmds {
		cmd := c.GetAlterTableCmd()
		if cmd == nil {
			continue
		}
		switch cmd.Subtype {
		case pg.AlterTableType_AT_AttachPartition, pg.AlterTableType_AT_DetachPartition, pg.AlterTableType_AT_DetachPartitionFinalize:
			part := match(p, cmd.Def.GetPartitionCmd().GetName())
			if t != nil || part != nil {
				return refuseFenceDDL(firstTable(t, part), "attaching or detaching a partition of or as a protected table")
			}
		case pg.AlterTableType_AT_AddInherit, pg.AlterTableType_AT_DropInherit:
			parent := match(p, cmd.Def.GetRangeVar())
			if t != nil || parent != nil {
				return refuseFenceDDL(firstTable(t, parent), "changing the inheritance of or from a protected table")
			}
		}
		if t == nil {
			continue
		}
		switch cmd.Subtype {
		case pg.AlterTableType_AT_AlterColumnType:
			return refuseFenceDDL(t, "changing a column's type on a protected table (it rewrites every row outside the fence)")
		case pg.AlterTableType_AT_DropColumn, pg.AlterTableType_AT_DropNotNull, pg.AlterTableType_AT_ColumnDefault,
			pg.AlterTableType_AT_SetExpression, pg.AlterTableType_AT_DropExpression, pg.AlterTableType_AT_AddIdentity,
			pg.AlterTableType_AT_SetIdentity, pg.AlterTableType_AT_DropIdentity:
			if cmd.Name == t.EpochColumn {
				return refuseFenceDDL(t, "changing the epoch column")
			}
		case pg.AlterTableType_AT_EnableTrig, pg.AlterTableType_AT_EnableAlwaysTrig, pg.AlterTableType_AT_EnableReplicaTrig,
			pg.AlterTableType_AT_DisableTrig, pg.AlterTableType_AT_EnableTrigAll, pg.AlterTableType_AT_DisableTrigAll,
			pg.AlterTableType_AT_EnableTrigUser, pg.AlterTableType_AT_DisableTrigUser, pg.AlterTableType_AT_EnableRule,
			pg.AlterTableType_AT_EnableAlwaysRule, pg.AlterTableType_AT_EnableReplicaRule, pg.AlterTableType_AT_DisableRule:
			return refuseFenceDDL(t, "switching triggers or rules of a protected table (the database-side guard is a trigger)")
		case pg.AlterTableType_AT_AddOf, pg.AlterTableType_AT_DropOf, pg.AlterTableType_AT_SetAccessMethod:
			return refuseFenceDDL(t, "changing a protected table's type or storage")
		}
	}
	if t != nil {
		if e := cascadingKeys(t, a.ProtoReflect()); e != nil {
			return e
		}
	}
	return admitCalls(p, a.ProtoReflect())
}

func firstTable(ts ...*Table) *Table {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return nil
}

// cascadingKeys refuses a foreign key on the protected table t whose ON DELETE or ON
// UPDATE action changes t's rows when the referenced row changes: a write to the
// parent would reach t without the fence.
func cascadingKeys(t *Table, root protoreflect.Message) *Error {
	var err *Error
	pgtree.Walk(root, func(m protoreflect.Message) bool {
		c, ok := m.Interface().(*pg.Constraint)
		if ok && c.Contype == pg.ConstrType_CONSTR_FOREIGN && (cascades(c.FkDelAction) || cascades(c.FkUpdAction)) {
			err = refuseFenceDDL(t, "a foreign key whose ON DELETE or ON UPDATE action writes the protected table (CASCADE, SET NULL, SET DEFAULT)")
		}
		return err == nil
	})
	return err
}

// cascades reports whether a foreign-key action letter writes the referencing rows:
// c cascade, n set null, d set default (a no action, r restrict only check).
func cascades(action string) bool { return action == "c" || action == "n" || action == "d" }

// writableView reports whether PostgreSQL may write through a view whose query is q
// without a trigger or rule: its automatically updatable views. A view is not one
// when its query, at the top level, is a set operation or has a WITH, DISTINCT,
// GROUP BY, HAVING, LIMIT or OFFSET, or reads anything but exactly one table or view
// (a join, several FROM items, a subquery, a function, or none); the server then
// refuses every INSERT, UPDATE, DELETE and MERGE through it. Only an INSTEAD OF
// trigger or an INSTEAD rule on the view can make it writable, and each is judged
// when it is created (CREATE TRIGGER, CREATE RULE): its function or actions must
// write no protected table. A view whose query is anything else is taken as
// writable: aggregates in the select list, which also keep a view from being
// updatable, are not told from other calls here.
func writableView(q *pg.Node) bool {
	sel := q.GetSelectStmt()
	switch {
	case sel == nil:
		return true
	case sel.Op != pg.SetOperation_SETOP_NONE, sel.WithClause != nil, len(sel.DistinctClause) > 0,
		len(sel.GroupClause) > 0, sel.HavingClause != nil, sel.LimitCount != nil, sel.LimitOffset != nil,
		len(sel.FromClause) != 1:
		return false
	}
	return sel.FromClause[0].GetRangeVar() != nil
}

// readsProtected returns a protected table the query reads, if any.
func readsProtected(p *Policy, q *pg.Node) *Table {
	var t *Table
	pgtree.Walk(q.ProtoReflect(), func(m protoreflect.Message) bool {
		if rv, ok := m.Interface().(*pg.RangeVar); ok {
			t = match(p, rv)
		}
		return t == nil
	})
	return t
}

func admitDrop(p *Policy, d *pg.DropStmt) *Error {
	for _, o := range d.Objects {
		var names []string
		for _, part := range o.GetList().GetItems() {
			names = append(names, part.GetString_().GetSval())
		}
		switch d.RemoveType {
		case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_FOREIGN_TABLE:
			rv := &pg.RangeVar{Relname: names[len(names)-1]}
			if len(names) > 1 {
				rv.Schemaname = names[len(names)-2]
			}
			if t := match(p, rv); t != nil {
				return refuseFenceDDL(t, "dropping a protected table")
			}
		case pg.ObjectType_OBJECT_TRIGGER, pg.ObjectType_OBJECT_RULE:
			// names: [schema.]table.trigger
			if len(names) >= 2 {
				rv := &pg.RangeVar{Relname: names[len(names)-2]}
				if len(names) > 2 {
					rv.Schemaname = names[len(names)-3]
				}
				if t := match(p, rv); t != nil {
					return refuseFenceDDL(t, "dropping a trigger or rule of a protected table (the database-side guard is a trigger)")
				}
			}
		case pg.ObjectType_OBJECT_SCHEMA:
			if name := o.GetString_().GetSval(); d.Behavior == pg.DropBehavior_DROP_CASCADE {
				if t := p.schemaMayHoldProtected(name); t != nil {
					return refuseFenceDDL(t, "dropping a schema that may hold a protected table, with CASCADE")
				}
			}
		}
	}
	return nil
}

// admitRoutine judges CREATE FUNCTION and CREATE PROCEDURE: the body is read and
// every statement in it judged, its SET clauses too. A body in another language
// cannot be read.
func admitRoutine(p *Policy, f *pg.CreateFunctionStmt) *Error {
	what := "the function " + nameOf(f.Funcname)
	if f.IsProcedure {
		what = "the procedure " + nameOf(f.Funcname)
	}
	lang, body := "sql", ""
	for _, o := range f.Options {
		d := o.GetDefElem()
		switch {
		case d == nil:
		case d.Defname == "language":
			lang = d.Arg.GetString_().GetSval()
		case d.Defname == "as":
			if items := d.Arg.GetList().GetItems(); len(items) > 0 {
				body = items[0].GetString_().GetSval()
			}
		case d.Defname == "set":
			if vs := d.Arg.GetVariableSetStmt(); vs != nil {
				if e := admitSetting(vs); e != nil {
					return e
				}
			}
		}
	}
	switch {
	case f.SqlBody != nil:
		var err *Error
		pgtree.Walk(f.SqlBody.ProtoReflect(), func(m protoreflect.Message) bool {
			if err != nil {
				return false
			}
			if nd, ok := m.Interface().(*pg.Node); ok && isStatementNode(nd) {
				err = judgeBodyNode(p, what, nd)
				return false
			}
			return true
		})
		return err
	case lang == "sql":
		return judgeSQLBody(p, what, body)
	case lang == "plpgsql":
		text, err := pgtree.Deparse(&pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: plpgsqlHeader(f)}}})
		if err != nil {
			return refuse(rulecode.UnreadableBody, nil, what+" cannot be read back", "create it as a migration outside the driver")
		}
		return judgePlpgsql(p, what, body, text)
	}
	return refuseCodeDDL(what + " in language " + lang)
}

// plpgsqlHeader is what pg_query's PL/pgSQL parser reads of a CREATE FUNCTION: the
// name, the parameters without their defaults, the result and the options. The
// defaults are expressions of any depth, judged with the rest of the statement; left
// out, the tree Deparse walks is a few levels deep whatever the statement holds.
func plpgsqlHeader(f *pg.CreateFunctionStmt) *pg.Node {
	h := &pg.CreateFunctionStmt{IsProcedure: f.IsProcedure, Replace: f.Replace, Funcname: f.Funcname,
		ReturnType: f.ReturnType, Options: f.Options}
	for _, a := range f.Parameters {
		if fp := a.GetFunctionParameter(); fp != nil {
			a = &pg.Node{Node: &pg.Node_FunctionParameter{FunctionParameter: &pg.FunctionParameter{
				Name: fp.Name, ArgType: fp.ArgType, Mode: fp.Mode}}}
		}
		h.Parameters = append(h.Parameters, a)
	}
	return &pg.Node{Node: &pg.Node_CreateFunctionStmt{CreateFunctionStmt: h}}
}

// isStatementNode reports whether n is a statement that can stand in a BEGIN ATOMIC body.
func isStatementNode(n *pg.Node) bool {
	switch n.Node.(type) {
	case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt, *pg.Node_MergeStmt,
		*pg.Node_ReturnStmt:
		return true
	}
	return false
}

// judgeBodyNode is judgeBodyText for a statement already parsed.
func judgeBodyNode(p *Policy, what string, n *pg.Node) *Error {
	if e := admitStatement(p, n); e != nil {
		e.Reason = what + ": " + e.Reason
		return e
	}
	if t := tableIn(p, n.ProtoReflect()); t != nil {
		return refuse(rulecode.BodyWrites, t, what+" writes the protected table, and no epoch reaches inside it",
			"run the write as a plain statement under sqlfence.WithEpoch")
	}
	tree := &pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: n}}}
	if c := claimWrite(p, tree); c != nil {
		return refuse(rulecode.ClaimWrite, nil, what+" writes the claim table "+c.QualifiedName.String(),
			"claim jobs with the helpers in github.com/sqlfence/sqlfence/claim")
	}
	return nil
}
