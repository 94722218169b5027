// The catalog snapshot of resolve: catalog: what the catalog shows about how a
// statement can write a protected table without naming it — the bodies of user
// functions, triggers, rules, foreign-key actions, parents and views over protected
// tables — turned into what the analysis consults. resolve.go reads it from the
// database (internal/pgcatalog); everything here is analysis and talks to no database.

package engine

import (
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgfunc"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// catalogSnapshot is attached to the private policy of a connector with resolve:
// catalog. It is read-only once built; the memos only cache answers that depend on
// nothing but the snapshot and the policy it belongs to.
type catalogSnapshot struct {
	funcs     map[string][]*pgcatalog.Function // user routines by name, every schema
	byOID     map[uint32]*pgcatalog.Function
	builtins  map[string]pgfunc.Volatility       // the server's pg_catalog functions
	operators map[string][]*pgcatalog.Operator   // user operators by name, every schema
	attribute map[uint32]pgcatalog.AttributeCall // what attribute notation reaches, by function

	hazards map[QualifiedName][]*writeHazard // by the relation's schema and name
	byName  map[string][]*writeHazard        // by name only, for unqualified references

	// findings are the hazards as the catalog has them, before they are carried to
	// the parents and views that reach them: what `sqlfence guard` reports.
	findings []CatalogFinding

	matviews []pgcatalog.MatView // what REFRESH MATERIALIZED VIEW runs (refresh.go)
	bound    *boundIndex         // the routines the server runs unnamed (catalog_bound.go)

	judged   sync.Map // function oid → *funcJudgment: its own body
	verdicts sync.Map // function oid → verdict: its body and everything it calls
}

// CatalogFinding is something the catalog holds that makes sqlfence refuse writes the
// statement's text does not show: a foreign key that cascades into a protected table,
// a trigger or rule whose code writes one, a trigger or rule on a protected table that
// can change or redirect its rows.
type CatalogFinding struct {
	Relation string // the relation whose writes are refused, schema-qualified
	Kind     string // "foreign key", "trigger" or "rule"
	Name     string // the constraint, trigger or rule
	Events   string // the writes refused: "INSERT, UPDATE", …
	Code     string // the rule code of the refusal (SF501 foreign key, SF502 trigger, SF503 rule)
	Message  string // why, and what to do
}

// events is a set of kinds of write.
type events uint8

const (
	evInsert events = 1 << iota
	evUpdate
	evDelete
	evTruncate
)

func (e events) String() string {
	var parts []string
	for _, x := range []struct {
		e    events
		name string
	}{{evInsert, "INSERT"}, {evUpdate, "UPDATE"}, {evDelete, "DELETE"}, {evTruncate, "TRUNCATE"}} {
		if e&x.e != 0 {
			parts = append(parts, x.name)
		}
	}
	return strings.Join(parts, ", ")
}

// writeHazard makes writes of some kinds to a relation refused: they would reach a
// protected table where no epoch goes, or run code sqlfence cannot verify.
type writeHazard struct {
	events events
	code   string // the rule code of the refusal
	table  string // the protected table concerned, for Error.Table; may be ""
	reason string // completes "<KIND> of <relation>: "
	fix    string
	// carried: the hazard is a write the server makes into these protected
	// relations, which a guard that carries the statement's epoch fences (carry.go);
	// nil: refused whatever the guard.
	carried []carried
}

// withSnapshot returns p extended from the catalog: the parents of protected
// partitions and children and the views over views over protected tables are
// protected like the table (or refused, without the epoch column), and the snapshot
// is attached for the analysis. protected maps the relations resolveCatalog found
// (the tables, their partitions and children, the views directly over them) to the
// policy entry they belong to.
func (p *Policy) withSnapshot(raw *pgcatalog.Snapshot, protected map[uint32]*Table) *Policy {
	s := &catalogSnapshot{
		funcs:     map[string][]*pgcatalog.Function{},
		byOID:     map[uint32]*pgcatalog.Function{},
		builtins:  map[string]pgfunc.Volatility{},
		operators: map[string][]*pgcatalog.Operator{},
		attribute: map[uint32]pgcatalog.AttributeCall{},
		matviews:  raw.MatViews,
		bound:     newBoundIndex(raw),
	}
	for _, a := range raw.AttributeCalls {
		s.attribute[a.OID] = a
	}
	for i := range raw.Operators {
		o := &raw.Operators[i]
		s.operators[o.Name] = append(s.operators[o.Name], o)
	}
	for i := range raw.Functions {
		f := &raw.Functions[i]
		s.funcs[f.Name] = append(s.funcs[f.Name], f)
		s.byOID[f.OID] = f
	}
	for name, v := range raw.Builtins {
		s.builtins[name] = pgfunc.Volatility(v)
	}

	// Relations whose writes reach a protected one: parents (a write to a parent
	// reaches its partitions and children) and updatable views, at any depth.
	cols := map[uint32]map[string]string{}
	for _, c := range raw.Columns {
		if cols[c.Rel] == nil {
			cols[c.Rel] = map[string]string{}
		}
		cols[c.Rel][c.Name] = c.Type
	}
	reaching := map[uint32][]pgcatalog.Edge{} // by the relation reached
	for _, e := range raw.Edges {
		reaching[e.To] = append(reaching[e.To], e)
	}
	target := map[uint32]*Table{}
	var queue []uint32
	for oid, t := range protected {
		target[oid] = t
		queue = append(queue, oid)
	}
	seen := map[QualifiedName]int{}
	for i, t := range p.Tables {
		seen[t.QualifiedName] = i
	}
	var extra []Table
	for len(queue) > 0 {
		oid := queue[0]
		queue = queue[1:]
		for _, e := range reaching[oid] {
			if _, done := target[e.From.OID]; done {
				continue
			}
			t := target[oid]
			target[e.From.OID] = t
			queue = append(queue, e.From.OID)
			rel := QualifiedName{Schema: e.From.Schema, Name: e.From.Name}
			nt := Table{QualifiedName: rel, EpochColumn: t.EpochColumn, Mode: t.Mode, Line: t.Line}
			if e.From.Kind == "v" {
				nt.base = t.Name
			}
			name, col := sqlident.QuoteQualified(rel.Schema, rel.Name), sqlident.Quote(t.EpochColumn)
			switch typ := cols[e.From.OID][t.EpochColumn]; {
			case typ == "bigint":
			case e.From.Kind == "v":
				nt.unfenceable = "the view " + name + " writes the protected table " + t.QualifiedName.String() + " through other views but has no bigint " + col + " column"
			default:
				nt.unfenceable = "a write to " + name + " reaches the protected table " + t.QualifiedName.String() + " (a partition or inheritance child of it), but " + name + " has no bigint " + col + " column to carry the fence"
				nt.unfenceableFix = "write the protected partition or child itself under an epoch, or add the epoch column to " + name + " (ALTER TABLE " + name + " ADD COLUMN " + col + " bigint NOT NULL DEFAULT 0)"
			}
			if i, dup := seen[rel]; dup {
				// Already a policy entry or reached before: only a disagreement matters.
				if i >= 0 && i < len(p.Tables) {
					continue
				}
				if x := &extra[i-len(p.Tables)]; x.unfenceable == "" && (x.EpochColumn != nt.EpochColumn || x.Mode != nt.Mode) {
					x.unfenceable = "a write to " + name + " reaches protected tables with different epoch columns or modes"
				}
				continue
			}
			if nt.unfenceable == "" && t.Schema == "" && rel.Name == t.Name {
				continue // the unqualified policy entry covers it
			}
			seen[rel] = len(p.Tables) + len(extra)
			extra = append(extra, nt)
		}
	}
	base := p.withTables(extra)
	markViewEpochs(base.Tables, raw) // the index points into base.Tables

	// The hazards that do not depend on judging code, then the fixpoint of those
	// that do: a trigger's function can write a table whose own trigger writes a
	// protected one, so judging code consults the hazards found so far until no more
	// are found (each round can only add some).
	static := s.staticHazards(raw, protected, target, p.GuardCarries)
	var dynamic []*baseHazard
	for round := 0; ; round++ {
		cur := s.withHazards(raw, append(append([]*baseHazard(nil), static...), dynamic...))
		next := cur.dynamicHazards(base.withCatalog(cur), raw)
		if len(next) == len(dynamic) || round > len(raw.Triggers)+len(raw.Rules)+len(raw.Bound) {
			return base.withCatalog(cur)
		}
		dynamic = next
	}
}

// withCatalog returns a copy of p that consults s.
func (p *Policy) withCatalog(s *catalogSnapshot) *Policy {
	c := *p
	c.catalog = s
	return &c
}

// withHazards returns a snapshot with s's functions and the hazards list carried to
// every relation whose writes reach them, with fresh memos.
func (s *catalogSnapshot) withHazards(raw *pgcatalog.Snapshot, list []*baseHazard) *catalogSnapshot {
	n := &catalogSnapshot{funcs: s.funcs, byOID: s.byOID, builtins: s.builtins, operators: s.operators, attribute: s.attribute, matviews: s.matviews, bound: s.bound,
		hazards: map[QualifiedName][]*writeHazard{}, byName: map[string][]*writeHazard{}}
	reaching := map[uint32][]pgcatalog.Edge{}
	for _, e := range raw.Edges {
		reaching[e.To] = append(reaching[e.To], e)
	}
	byChild := map[uint32][]pgcatalog.ForeignKey{}
	for _, fk := range raw.ForeignKeys {
		byChild[fk.Child.OID] = append(byChild[fk.Child.OID], fk)
	}
	type key struct {
		rel    uint32
		origin *baseHazard
	}
	at := map[key]*writeHazard{}
	type item struct {
		rel    pgcatalog.Rel
		origin *baseHazard
		h      *writeHazard
	}
	var queue []item
	add := func(rel pgcatalog.Rel, origin *baseHazard, ev events, reason string) {
		if ev == 0 {
			return
		}
		k := key{rel.OID, origin}
		if h := at[k]; h != nil {
			if h.events|ev == h.events {
				return
			}
			h.events |= ev
			queue = append(queue, item{rel, origin, h})
			return
		}
		h := &writeHazard{events: ev, code: origin.code, table: origin.table, reason: reason, fix: origin.fix, carried: origin.carried}
		at[k] = h
		q := QualifiedName{Schema: rel.Schema, Name: rel.Name}
		n.hazards[q] = append(n.hazards[q], h)
		n.byName[rel.Name] = append(n.byName[rel.Name], h)
		queue = append(queue, item{rel, origin, h})
	}
	for _, b := range list {
		add(b.rel, b, b.events, b.reason)
		n.findings = append(n.findings, CatalogFinding{Relation: relName(b.rel), Kind: b.kind, Name: b.name, Code: b.code,
			Events: b.events.String(), Message: b.events.String() + " of " + relName(b.rel) + " is refused: " + b.reason + "; " + b.fix})
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		ev, name := it.h.events, relName(it.rel)
		for _, e := range reaching[it.rel.OID] {
			var via string
			mapped := ev
			switch e.Kind {
			case 'p':
				via = "its partition"
				if ev&(evInsert|evDelete) != 0 {
					mapped |= evUpdate // an UPDATE that moves a row to another partition deletes and inserts
				}
			case 'i':
				via = "its inheritance child"
				mapped &^= evInsert // an INSERT into the parent stays in the parent
			default:
				via = "the relation under the view"
				mapped &^= evTruncate
			}
			add(e.From, it.origin, mapped, "it reaches "+name+" ("+via+"), and "+it.h.reason)
		}
		for _, fk := range byChild[it.rel.OID] {
			var mapped events
			if fk.OnDelete == 'c' && ev&evDelete != 0 || (fk.OnDelete == 'n' || fk.OnDelete == 'd') && ev&evUpdate != 0 {
				mapped |= evDelete
			}
			if writesChild(fk.OnUpdate) && ev&evUpdate != 0 {
				mapped |= evUpdate
			}
			add(fk.Parent, it.origin, mapped, "it reaches "+name+" through the foreign key "+sqlident.Quote(fk.Name)+" ("+fkActions(fk)+"), and "+it.h.reason)
		}
	}
	return n
}

// judgeWrite refuses a write the catalog shows reaches a protected table unfenced.
// s may be nil (no resolve: catalog).
// p is the policy judging, whose collector takes the writes the guard fences (nil:
// none is carried).
func (s *catalogSnapshot) judgeWrite(w pgtree.Write, p *Policy) *Error {
	if s == nil || w.Relation == nil {
		return nil
	}
	var ev events
	switch n := w.Node.(type) {
	case *pg.InsertStmt:
		ev = evInsert
		if n.OnConflictClause.GetAction() == pg.OnConflictAction_ONCONFLICT_UPDATE {
			ev |= evUpdate
		}
	case *pg.UpdateStmt:
		ev = evUpdate
	case *pg.DeleteStmt:
		ev = evDelete
	case *pg.MergeStmt:
		for _, c := range n.MergeWhenClauses {
			switch c.GetMergeWhenClause().GetCommandType() {
			case pg.CmdType_CMD_INSERT:
				ev |= evInsert
			case pg.CmdType_CMD_UPDATE:
				ev |= evUpdate
			case pg.CmdType_CMD_DELETE:
				ev |= evDelete
			}
		}
	}
	return s.judgeRelationWrite(w.Relation, ev, w.Kind, p)
}

// judgeRelationWrite refuses writes of the kinds ev to rv when a hazard covers them.
// An unqualified name may resolve to the relation of that name in any schema.
func (s *catalogSnapshot) judgeRelationWrite(rv *pg.RangeVar, ev events, kind string, p *Policy) *Error {
	if s == nil || rv == nil {
		return nil
	}
	list := s.byName[rv.Relname]
	if rv.Schemaname != "" {
		list = s.hazards[QualifiedName{Schema: rv.Schemaname, Name: rv.Relname}]
	}
	var carry *carrySet
	if p != nil {
		carry = p.collector()
	}
	// Refusals first: a write the guard could fence does not hide one it cannot.
	for _, h := range list {
		if h.events&ev != 0 && (h.carried == nil || carry == nil) {
			fix := h.fix
			if h.carried != nil && p != nil {
				fix += p.guardNote()
			}
			e := refuse(h.code, nil, kind+" of "+nameOfRangeVar(rv)+": "+h.reason, fix)
			e.Table = h.table
			return e
		}
	}
	for _, h := range list {
		if h.events&ev != 0 {
			carry.add(h.carried...)
		}
	}
	return nil
}
