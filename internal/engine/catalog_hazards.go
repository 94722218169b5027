// The catalog snapshot's hazards: foreign keys that cascade into protected tables,
// triggers and rules whose code sqlfence refuses, BEFORE triggers that could change the
// epoch column, INSTEAD rules — found where the catalog has them.

package engine

import (
	"regexp"
	"strings"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// baseHazard is a hazard where the catalog has it, before it is carried to the
// relations that reach it.
type baseHazard struct {
	rel  pgcatalog.Rel
	kind string // for CatalogFinding
	name string
	writeHazard
}

// triggerEvents maps a trigger's type to the writes that fire it.
func triggerEvents(tgtype int64) events {
	var e events
	if tgtype&pgcatalog.TriggerInsert != 0 {
		e |= evInsert
	}
	if tgtype&pgcatalog.TriggerUpdate != 0 {
		e |= evUpdate
	}
	if tgtype&pgcatalog.TriggerDelete != 0 {
		e |= evDelete
	}
	if tgtype&pgcatalog.TriggerTruncate != 0 {
		e |= evTruncate
	}
	return e
}

func ruleEvents(ev byte) events {
	switch ev {
	case '2':
		return evUpdate
	case '3':
		return evInsert
	case '4':
		return evDelete
	}
	return evInsert | evUpdate | evDelete
}

func relName(r pgcatalog.Rel) string { return sqlident.QuoteQualified(r.Schema, r.Name) }

// writesChild reports whether a foreign-key action letter writes the referencing rows:
// c cascade, n set null, d set default.
func writesChild(action byte) bool { return action == 'c' || action == 'n' || action == 'd' }

func actionName(action byte) string {
	switch action {
	case 'c':
		return "CASCADE"
	case 'n':
		return "SET NULL"
	case 'd':
		return "SET DEFAULT"
	case 'r':
		return "RESTRICT"
	}
	return "NO ACTION"
}

func fkActions(fk pgcatalog.ForeignKey) string {
	var parts []string
	if writesChild(fk.OnDelete) {
		parts = append(parts, "ON DELETE "+actionName(fk.OnDelete))
	}
	if writesChild(fk.OnUpdate) {
		parts = append(parts, "ON UPDATE "+actionName(fk.OnUpdate))
	}
	return strings.Join(parts, ", ")
}

// staticHazards are the hazards the catalog shows without judging code: foreign keys
// that cascade into protected tables, INSTEAD rules on protected relations, and
// BEFORE and INSTEAD OF triggers on them whose functions are VOLATILE. target holds
// every relation that is protected or reaches a protected one.
//
// With carries (the guard fences the server's writes with the statement's epoch), a
// foreign key's action is a carried hazard: the guard compares and stamps the rows it
// writes.
func (s *catalogSnapshot) staticHazards(raw *pgcatalog.Snapshot, protected, target map[uint32]*Table, carries bool) []*baseHazard {
	var out []*baseHazard
	for _, fk := range raw.ForeignKeys {
		if protected[fk.Child.OID] == nil || fk.Child.Kind == "v" {
			continue
		}
		var ev events
		if writesChild(fk.OnDelete) {
			ev |= evDelete
		}
		if writesChild(fk.OnUpdate) {
			ev |= evUpdate
		}
		child := relName(fk.Child)
		var list []carried
		if carries {
			list = []carried{{name: fk.Child.Name, table: protected[fk.Child.OID]}}
		}
		out = append(out, &baseHazard{rel: fk.Parent, kind: "foreign key", name: fk.Name, writeHazard: writeHazard{carried: list,
			events: ev, code: rulecode.CascadingKey, table: child,
			reason: "it cascades into the protected table " + child + " through the foreign key " + sqlident.Quote(fk.Name) +
				" (" + fkActions(fk) + "), and the cascaded write carries no epoch",
			fix: "make the foreign key NO ACTION or RESTRICT (a migration outside the driver) and delete or update the rows of " +
				child + " explicitly under an epoch before those of " + relName(fk.Parent),
		}})
	}
	for _, tr := range raw.Triggers {
		// The built-in trigger functions (suppress_redundant_updates_trigger,
		// tsvector_update_trigger) change no bigint column and redirect nothing; the
		// guard's own (schema sqlfence) only check.
		if tr.FuncSchema == "sqlfence" || tr.FuncSchema == "pg_catalog" || target[tr.Rel.OID] == nil ||
			tr.Type&(pgcatalog.TriggerBefore|pgcatalog.TriggerInstead) == 0 {
			continue
		}
		when := "BEFORE"
		if tr.Type&pgcatalog.TriggerInstead != 0 {
			when = "INSTEAD OF"
		} else if s.leavesEpochColumn(tr.Function, target[tr.Rel.OID].EpochColumn) {
			continue
		}
		fn := QualifiedName{Schema: tr.FuncSchema, Name: tr.FuncName}.String()
		out = append(out, &baseHazard{rel: tr.Rel, kind: "trigger", name: tr.Name, writeHazard: writeHazard{
			events: triggerEvents(tr.Type), code: rulecode.Trigger, table: relName(tr.Rel),
			reason: "its " + when + " trigger " + sqlident.Quote(tr.Name) + " runs the function " + fn +
				", which can change the epoch column or redirect the fenced write where sqlfence cannot verify it",
			fix: "a BEFORE trigger on a protected table may not mention the epoch column or assign NEW as a whole (an updated_at trigger that sets NEW.updated_at passes); change " + fn + " or drop the trigger (a migration outside the driver)",
		}})
	}
	for _, r := range raw.Rules {
		if target[r.Rel.OID] == nil || !r.Instead {
			continue
		}
		out = append(out, &baseHazard{rel: r.Rel, kind: "rule", name: r.Name, writeHazard: writeHazard{
			events: ruleEvents(r.Event), code: rulecode.Rule, table: relName(r.Rel),
			reason: "its INSTEAD rule " + sqlident.Quote(r.Name) + " replaces the fenced write with statements sqlfence does not fence",
			fix:    "drop the rule (a migration outside the driver) and write the tables with plain statements under an epoch",
		}})
	}
	return out
}

// leavesEpochColumn reports whether a BEFORE trigger's function provably leaves the
// epoch column alone: its definition can be read (SQL or PL/pgSQL), never names the
// column, and never assigns the whole row (NEW := …, NEW = …). Volatility says nothing
// here: assigning NEW.writer_epoch is not a database write, so a STABLE function can.
func (s *catalogSnapshot) leavesEpochColumn(oid uint32, epochColumn string) bool {
	f := s.byOID[oid]
	if f == nil || f.Definition == "" {
		return false
	}
	def := strings.ToLower(f.Definition)
	return !strings.Contains(def, strings.ToLower(epochColumn)) && !wholeRowAssignment.MatchString(def)
}

// wholeRowAssignment finds an assignment to NEW as a whole in a trigger function.
var wholeRowAssignment = regexp.MustCompile(`\bnew\s*:?=[^=]`)

// dynamicHazards judges the code of every trigger and rule with p, which consults s:
// a trigger whose function, or a rule whose actions, sqlfence refuses makes the
// writes that fire it refused (fence what can be fenced, refuse the rest: the
// trigger's write cannot carry the epoch).
func (s *catalogSnapshot) dynamicHazards(p *Policy, raw *pgcatalog.Snapshot) []*baseHazard {
	var out []*baseHazard
	for _, tr := range raw.Triggers {
		if tr.FuncSchema == "sqlfence" {
			continue
		}
		e, list := s.judgeTriggerFunction(p, tr)
		if e == nil && list != nil && p.GuardCarries {
			t := list[0].table
			out = append(out, &baseHazard{rel: tr.Rel, kind: "trigger", name: tr.Name, writeHazard: writeHazard{
				events: triggerEvents(tr.Type), code: rulecode.Trigger, table: t.QualifiedName.String(), carried: list,
				reason: "its trigger " + sqlident.Quote(tr.Name) + " runs " + QualifiedName{Schema: tr.FuncSchema, Name: tr.FuncName}.String() +
					", which writes the protected table " + t.QualifiedName.String(),
				fix: "write the protected table with plain statements under an epoch instead of from the trigger, or drop the trigger (a migration outside the driver)",
			}})
			continue
		}
		if e == nil {
			continue
		}
		e = namingTable(e)
		out = append(out, &baseHazard{rel: tr.Rel, kind: "trigger", name: tr.Name, writeHazard: writeHazard{
			events: triggerEvents(tr.Type), code: rulecode.Trigger, table: e.Table,
			reason: "its trigger " + sqlident.Quote(tr.Name) + " runs " + QualifiedName{Schema: tr.FuncSchema, Name: tr.FuncName}.String() +
				": " + e.Reason + triggerNote(e.Reason),
			fix: "write the protected table with plain statements under an epoch instead of from the trigger, or drop the trigger (a migration outside the driver)",
		}})
	}
	for _, r := range raw.Rules {
		e, list := judgeRuleDefinition(p, r)
		if e == nil && list != nil {
			t := list[0].table
			out = append(out, &baseHazard{rel: r.Rel, kind: "rule", name: r.Name, writeHazard: writeHazard{
				events: ruleEvents(r.Event), code: rulecode.Rule, table: t.QualifiedName.String(), carried: list,
				reason: "its rule " + sqlident.Quote(r.Name) + " writes the protected table " + t.QualifiedName.String(),
				fix:    "drop the rule (a migration outside the driver) and write the tables with plain statements under an epoch",
			}})
			continue
		}
		if e == nil {
			continue
		}
		e = namingTable(e)
		out = append(out, &baseHazard{rel: r.Rel, kind: "rule", name: r.Name, writeHazard: writeHazard{
			events: ruleEvents(r.Event), code: rulecode.Rule, table: e.Table,
			reason: "its rule " + sqlident.Quote(r.Name) + ": " + e.Reason,
			fix:    "drop the rule (a migration outside the driver) and write the tables with plain statements under an epoch",
		}})
	}
	return append(out, s.boundHazards(p, raw)...) // catalog_bound.go
}

// triggerNote says why a trigger's write is refused rather than fenced, once.
func triggerNote(reason string) string {
	const note = " (a trigger's write cannot carry the epoch)"
	if strings.Contains(reason, note) {
		return ""
	}
	return note
}

// namingTable returns e with its protected table named in the reason, for messages
// that carry only the reason.
func namingTable(e *Error) *Error {
	if e.Table == "" || strings.Contains(e.Reason, e.Table) {
		return e
	}
	c := *e
	c.Reason += " (the protected table " + e.Table + ")"
	return &c
}

// judgeTriggerFunction judges the function a trigger runs like a call of it: the
// policy's lists first, then its body. Built-in trigger functions write no table.
// With the guard that carries the epoch, a function that writes protected tables is
// not refused: the relations it writes are returned for the guard to fence.
func (s *catalogSnapshot) judgeTriggerFunction(p *Policy, tr pgcatalog.Trigger) (*Error, []carried) {
	switch {
	case p.MatchFunction(tr.FuncSchema, tr.FuncName):
		return refuse(rulecode.ListedFunction, nil, "the function "+QualifiedName{Schema: tr.FuncSchema, Name: tr.FuncName}.String()+", which the policy lists as writing protected tables",
			"write the tables with plain statements under an epoch"), nil
	case p.matchSafeFunction(tr.FuncSchema, tr.FuncName), tr.FuncSchema == "pg_catalog":
		return nil, nil
	}
	return s.verdict(p, tr.Function)
}

// judgeRuleDefinition judges a rule's condition and actions like statements sent
// through the driver that may write no protected table — or, with the guard that
// carries the epoch (p.GuardCarries), like a routine body whose writes to protected
// tables the guard fences: those are returned. The rule's actions are judged with a
// collector of their own, so what they reach (triggers, cascades, calls) is carried
// with them.
func judgeRuleDefinition(p *Policy, r pgcatalog.Rule) (*Error, []carried) {
	tree, e := parseBounded(r.Definition)
	if e != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetRuleStmt() == nil {
		return refuse(rulecode.Rule, nil, "sqlfence cannot read it", "drop the rule (a migration outside the driver)"), nil
	}
	q := *p
	q.judging = &bodyJudgment{}
	rs := tree.Stmts[0].Stmt.GetRuleStmt()
	if rs.WhereClause != nil {
		if e := admitCalls(&q, rs.WhereClause.ProtoReflect()); e != nil {
			return e, nil
		}
	}
	for _, a := range rs.Actions {
		if e := admitStatement(&q, a); e != nil {
			return e, nil
		}
		for _, w := range pgtree.Writes(a.ProtoReflect(), nil) {
			t := match(p, w.Relation)
			if t == nil {
				continue
			}
			if !p.GuardCarries || t.unfenceable != "" {
				return refuse(rulecode.BodyWrites, t, "it writes the protected table "+t.QualifiedName.String()+", and no epoch reaches a rule",
					"write the table with plain statements under an epoch"+p.guardNote()), nil
			}
			q.judging.carried.add(carriedOf(t)...)
		}
	}
	// Calls in the rule are judged by their verdicts, not collected: judging is
	// only a collector here.
	for _, oid := range q.judging.calls {
		err, list := p.catalog.verdict(p, oid)
		if err != nil {
			return err, nil
		}
		if !p.GuardCarries && list != nil {
			return p.carryOrRefuse(list, "a call in the rule"), nil
		}
		q.judging.carried.add(list...)
	}
	return nil, q.judging.carried.list
}
