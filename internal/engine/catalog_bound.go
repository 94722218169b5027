// The routines the server runs for a statement without its text naming them
// (pgcatalog.Bound): a column default or a CHECK constraint on the relation written,
// the query of a view read, a domain's check on a value converted to it, a cast's
// function. Each is judged as a call the statement makes — refused, or carried for
// the guard to fence, exactly as the call written out would be — so that what
// sqlfence lets through does not depend on the guard's triggers firing.

package engine

import (
	"regexp"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// boundRef is one bound routine and what binds it, for messages.
type boundRef struct {
	what string // "the view public.zv", "the domain public.zd", …
	fn   uint32
}

// boundIndex is the bound routines by what a statement names: relations read, types
// converted to, and those any statement may run.
type boundIndex struct {
	reads       map[QualifiedName][]boundRef
	readsByName map[string][]boundRef
	types       map[QualifiedName][]boundRef
	typesByName map[string][]boundRef
	always      []boundRef
	ddl         []boundRef          // event triggers: any DDL statement may fire them
	writes      []boundRef          // what rebuilding or re-checking a table's rows runs (rebuild)
	calls       map[uint32][]uint32 // routine → the domain routines its signature or body runs
}

// describeBound names the object that binds b.
func describeBound(b pgcatalog.Bound) string {
	rel := relName(b.Rel)
	switch {
	case b.What == "view":
		return "the view " + rel
	case b.What == "partition key" && b.Holder == pgcatalog.BoundRead:
		return "the partition key of " + rel + ", which the planner folds (its IMMUTABLE calls with constant arguments)"
	case b.Holder == pgcatalog.BoundRead && b.What != "policy":
		return "the " + b.What + " " + sqlident.Quote(b.Name) + " of " + rel + ", which the planner folds (its IMMUTABLE calls with constant arguments)"
	case b.What == "domain" && b.Holder == pgcatalog.BoundType && b.Name != "":
		return "the domain " + b.Name + " within " + rel
	case b.What == "domain" && b.Holder == pgcatalog.BoundType:
		return "the domain " + rel
	case b.What == "type":
		return "a support routine of the type " + rel
	case b.What == "operator family":
		return "the operator family " + sqlident.Quote(b.Name) + " of " + rel
	case b.What == "domain" && b.Holder == pgcatalog.BoundCall:
		return "the domain " + b.Name
	case b.What == "cast" && b.Holder == pgcatalog.BoundAny:
		return "the implicit cast " + b.Name
	case b.What == "cast" && b.Holder == pgcatalog.BoundType:
		return "the cast " + b.Name
	case b.What == "cast":
		return "the assignment cast " + b.Name + " to a column of " + rel
	case b.What == "domain":
		return "the domain " + b.Name + " of a column of " + rel
	case b.What == "event trigger":
		return "the event trigger " + sqlident.Quote(b.Rel.Name)
	case b.What == "statistics":
		return "the statistics object " + sqlident.Quote(b.Name) + " on " + rel
	case b.What == "partition key":
		return "the partition key of " + rel
	}
	return "the " + b.What + " " + sqlident.Quote(b.Name) + " of " + rel
}

// newBoundIndex indexes raw's bound routines. A view reads what its query reads, so
// the routines bound to those relations are the view's too, at any depth. A routine
// whose body names a domain (a PL/pgSQL variable of that type) runs its checks.
func newBoundIndex(raw *pgcatalog.Snapshot) *boundIndex {
	x := &boundIndex{reads: map[QualifiedName][]boundRef{}, readsByName: map[string][]boundRef{},
		types: map[QualifiedName][]boundRef{}, typesByName: map[string][]boundRef{}, calls: map[uint32][]uint32{}}
	readOf := map[uint32][]boundRef{}
	viewReads := map[uint32][]uint32{}
	rels := map[uint32]pgcatalog.Rel{}
	domains := map[string][]uint32{} // domain type name → its routines
	alwaysFn := map[uint32]bool{}
	for _, b := range raw.Bound {
		ref := boundRef{what: describeBound(b), fn: b.Function}
		switch b.Holder {
		case pgcatalog.BoundRead:
			readOf[b.Rel.OID] = append(readOf[b.Rel.OID], ref)
			rels[b.Rel.OID] = b.Rel
		case pgcatalog.BoundView:
			viewReads[b.Rel.OID] = append(viewReads[b.Rel.OID], b.Function)
			rels[b.Rel.OID] = b.Rel
		case pgcatalog.BoundType:
			q := QualifiedName{Schema: b.Rel.Schema, Name: b.Rel.Name}
			x.types[q] = append(x.types[q], ref)
			x.typesByName[b.Rel.Name] = append(x.typesByName[b.Rel.Name], ref)
			if b.What == "domain" {
				domains[b.Rel.Name] = append(domains[b.Rel.Name], b.Function)
			}
		case pgcatalog.BoundAny:
			if !alwaysFn[b.Function] { // every statement judges these: each routine once
				alwaysFn[b.Function] = true
				x.always = append(x.always, ref)
			}
		case pgcatalog.BoundCall:
			x.calls[b.Rel.OID] = append(x.calls[b.Rel.OID], b.Function)
		case pgcatalog.BoundDDL:
			x.ddl = append(x.ddl, ref)
		case pgcatalog.BoundWrite:
			if b.What != "trigger condition" {
				x.writes = append(x.writes, ref)
			}
		}
	}
	for oid, rel := range rels {
		seen := map[uint32]bool{oid: true}
		queue := []uint32{oid}
		var refs []boundRef
		for len(queue) > 0 {
			o := queue[0]
			queue = queue[1:]
			refs = append(refs, readOf[o]...)
			for _, r := range viewReads[o] {
				if !seen[r] {
					seen[r] = true
					queue = append(queue, r)
				}
			}
		}
		if len(refs) == 0 {
			continue
		}
		q := QualifiedName{Schema: rel.Schema, Name: rel.Name}
		x.reads[q] = append(x.reads[q], refs...)
		x.readsByName[rel.Name] = append(x.readsByName[rel.Name], refs...)
	}
	for name, fns := range domains {
		word := regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(name) + `\b`)
		for _, f := range raw.Functions {
			if f.Definition != "" && word.MatchString(f.Definition) {
				x.calls[f.OID] = append(x.calls[f.OID], fns...)
			}
		}
	}
	return x
}

// boundVerdict judges a bound routine as a call of it: the policy's lists and the
// reviewed extension functions first, then its body and what it calls.
func (s *catalogSnapshot) boundVerdict(p *Policy, oid uint32) (*Error, []carried) {
	if f := s.byOID[oid]; f != nil {
		switch {
		case p.MatchFunction(f.Schema, f.Name):
			return refuse(rulecode.ListedFunction, nil, funcWhat(f)+", which the policy lists as writing protected tables",
				"write the tables with plain statements under an epoch"), nil
		case p.matchSafeFunction(f.Schema, f.Name), reviewedExtensionFunction(f):
			return nil, nil
		}
	}
	return s.verdict(p, oid)
}

// judgeBound judges the routines refs as calls the statement makes (in a routine
// body being judged, lists them for verdict to follow).
func (p *Policy) judgeBound(refs []boundRef) *Error {
	s := p.catalog
	for _, b := range refs {
		if p.judging != nil {
			if f := s.byOID[b.fn]; f != nil && p.matchSafeFunction(f.Schema, f.Name) {
				continue
			}
			if f := s.byOID[b.fn]; f != nil && p.MatchFunction(f.Schema, f.Name) {
				err, _ := s.boundVerdict(p, b.fn)
				return boundError(err, b, s)
			}
			p.judging.calls = append(p.judging.calls, b.fn)
			continue
		}
		err, list := s.boundVerdict(p, b.fn)
		if err == nil && list != nil {
			err = p.carryOrRefuse(list, b.what+", which runs "+s.funcName(b.fn))
		}
		if err != nil {
			return boundError(err, b, s)
		}
	}
	return nil
}

func boundError(err *Error, b boundRef, s *catalogSnapshot) *Error {
	e := *err
	e.Reason = b.what + " runs " + s.funcName(b.fn) + ": " + err.Reason
	return &e
}

// judgeBoundRead judges the routines the server runs when a statement names rv:
// a view's query, a row-level security policy. An unqualified name may be the
// relation of that name in any schema.
func (p *Policy) judgeBoundRead(rv *pg.RangeVar) *Error {
	if p.catalog == nil || p.catalog.bound == nil {
		return nil
	}
	b := p.catalog.bound
	refs := b.readsByName[rv.Relname]
	if rv.Schemaname != "" {
		refs = b.reads[QualifiedName{Schema: rv.Schemaname, Name: rv.Relname}]
	}
	return p.judgeBound(refs)
}

// judgeBoundType judges the routines a conversion to the type t runs: a domain's
// checks and default, a cast's function.
func (p *Policy) judgeBoundType(t *pg.TypeName) *Error {
	if p.catalog == nil || p.catalog.bound == nil || len(t.Names) == 0 {
		return nil
	}
	b := p.catalog.bound
	schema, name := pgtree.FuncName(t.Names)
	refs := b.typesByName[name]
	if schema != "" {
		refs = b.types[QualifiedName{Schema: schema, Name: name}]
	}
	return p.judgeBound(refs)
}

// judgeBoundAlways judges the routines any statement may run: implicit casts.
func (p *Policy) judgeBoundAlways() *Error {
	if p.catalog == nil || p.catalog.bound == nil {
		return nil
	}
	return p.judgeBound(p.catalog.bound.always)
}

// judgeBoundDDL judges what a DDL statement runs unnamed: the event triggers any
// DDL may fire and, for a statement that rebuilds or re-checks stored rows (ALTER
// TABLE's rewrites and validations, VACUUM FULL, ANALYZE, CLUSTER, REINDEX, ALTER
// DOMAIN … VALIDATE), the routines bound to the rows of every table: index and
// partition-key expressions, constraints, defaults, generated columns, domains. Every
// table's, not the named one's: the statement reaches its partitions and children
// too, a bare VACUUM or REINDEX DATABASE every table, and a refusal is the price only
// where such a routine writes a protected table or cannot be read.
func (p *Policy) judgeBoundDDL(n *pg.Node) *Error {
	if p.catalog == nil || p.catalog.bound == nil {
		return nil
	}
	b := p.catalog.bound
	if err := p.judgeBound(b.ddl); err != nil {
		return err
	}
	switch n.Node.(type) {
	case *pg.Node_AlterTableStmt, *pg.Node_VacuumStmt, *pg.Node_ClusterStmt, *pg.Node_ReindexStmt, *pg.Node_AlterDomainStmt:
		return p.judgeBound(b.writes)
	}
	return nil
}

// callsOf is the domain routines a call of the routine oid runs; x may be nil.
func (x *boundIndex) callsOf(oid uint32) []uint32 {
	if x == nil {
		return nil
	}
	return x.calls[oid]
}

// typeBound reports whether a conversion to a type named name runs a bound routine.
func (s *catalogSnapshot) typeBound(name string) bool {
	return s != nil && s.bound != nil && len(s.bound.typesByName[name]) > 0
}

// boundHazards are the write hazards of the routines bound to a relation's
// INSERT and UPDATE (defaults, generated columns, constraints, indexes, partition
// keys, domains, assignment casts) and to its trigger conditions: refused as the
// call would be, or carried for the guard to fence.
func (s *catalogSnapshot) boundHazards(p *Policy, raw *pgcatalog.Snapshot) []*baseHazard {
	var out []*baseHazard
	for _, b := range raw.Bound {
		if b.Holder != pgcatalog.BoundWrite || b.What == "statistics" { // ANALYZE's alone (judgeBoundDDL)
			continue
		}
		ev := evInsert | evUpdate
		if b.What == "trigger condition" {
			ev |= evDelete | evTruncate
		}
		what := describeBound(b)
		fix := "change " + s.funcName(b.Function) + " so that it writes no protected table, or drop " + what + " (a migration outside the driver)"
		err, list := s.boundVerdict(p, b.Function)
		switch {
		case err != nil:
			err = namingTable(err)
			out = append(out, &baseHazard{rel: b.Rel, kind: b.What, name: b.Name, writeHazard: writeHazard{
				events: ev, code: err.Code, table: err.Table, reason: what + " runs " + s.funcName(b.Function) + ": " + err.Reason, fix: err.Fix + "; or " + fix,
			}})
		case list != nil && p.GuardCarries:
			t := list[0].table
			out = append(out, &baseHazard{rel: b.Rel, kind: b.What, name: b.Name, writeHazard: writeHazard{
				events: ev, code: rulecode.BodyWrites, table: t.QualifiedName.String(), carried: list,
				reason: what + " runs " + s.funcName(b.Function) + ", which writes the protected table " + t.QualifiedName.String(), fix: fix,
			}})
		}
	}
	return out
}
