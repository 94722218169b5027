// The compiled policy: what the engine decides with. The root package's Policy is
// what a program reads and writes; a connector compiles it into this one, once,
// checked and indexed, and the engine reads nothing else.

package engine

import (
	"slices"
	"time"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Mode is how a write's epoch compares with the epoch stored on the row. The values
// are the root package's Mode values, so the two convert directly.
type Mode uint8

const (
	ModeStrict     Mode = iota + 1 // stored < epoch
	ModeRepeatable                 // stored <= epoch
)

// Operator returns the comparison a fenced write puts between the stored epoch and
// its own. Anything other than ModeRepeatable gets the strict "<": an uninitialised
// mode must never widen what a stale writer may do.
func (m Mode) Operator() string {
	if m == ModeRepeatable {
		return "<="
	}
	return "<"
}

// qualifiedOperator is Operator as sqlfence writes it into SQL.
func (m Mode) qualifiedOperator() string { return CatalogOperator(m.Operator()) }

// CatalogOperator spells a built-in operator schema-qualified, OPERATOR(pg_catalog.op).
// Every operator sqlfence writes into SQL goes through it: an unqualified one resolves
// through search_path, and a session that creates public.< on bigint and puts public
// first would change what the fence means.
func CatalogOperator(op string) string { return "OPERATOR(pg_catalog." + op + ")" }

// Stale is what a claim-checked write compares (the root package's Stale values).
type Stale uint8

const (
	StaleRow   Stale = iota // checked against the claim and the row
	StaleClaim              // checked against the claim only; the row's epoch is stamped
)

// Enforcement says whether the policy is enforced or only reported (the root
// package's Enforcement values).
type Enforcement uint8

const (
	EnforceOn Enforcement = iota + 1
	EnforceShadow
)

// Policy is a compiled policy. Only Compile's caller (the root package) builds one;
// the catalog snapshot extends it (WithTables, withSnapshot) into new values, never
// in place, so a decision made under one Policy depends on nothing that changes.
type Policy struct {
	Source         string
	EpochColumn    string
	Mode           Mode
	Stale          Stale
	Tables         []Table
	AllowUnfenced  bool
	Enforce        Enforcement
	Functions      []QualifiedName
	Claims         []ClaimTable
	SafeFunctions  []QualifiedName
	AllowDDL       bool
	ResolveCatalog bool
	// CatalogRefresh: how often the catalog is read again where the database has
	// no catalog version (0: such a connector refuses writes; the root package's fence.go).
	CatalogRefresh time.Duration
	// CatalogVersion is the database's catalog version (sqlfence install) read
	// before the snapshot, 0 without one; fenced texts carry it in the guard's
	// marker, and the guard refuses them once DDL has moved it on.
	CatalogVersion int64
	// CatalogRead is the version as Resolve read it, with the event triggers' state:
	// a connector compares it with a later read to tell whether DDL may have escaped
	// the version (pgcatalog.CatalogVersion.Same).
	CatalogRead pgcatalog.CatalogVersion
	// CatalogMissing says, when CatalogVersion is 0 under resolve: catalog, what
	// keeps other sessions' DDL from reaching the fence (catalogMissing).
	CatalogMissing string
	// CatalogFingerprint is the catalog's fingerprint, read before the snapshot where
	// catalog_refresh will read it again ("" otherwise; pgcatalog.Fingerprint).
	CatalogFingerprint string

	// The indexes that make Match, which runs for every statement, a map lookup
	// without allocation.
	tables *policyTableIndex
	funcs  *policyFuncIndex
	// catalog is what resolve: catalog read (catalog.go); judging is set only on the
	// copy that judges a routine body read from it.
	catalog *catalogSnapshot
	judging *bodyJudgment
	// digest is what Resolve read (catalog_digest.go).
	digest catalogDigest
}

// Index builds the indexes Match and MatchFunction use; the root package calls it
// once on the Policy it compiled.
func (p *Policy) Index() *Policy {
	p.tables = newPolicyTableIndex(p.Tables)
	p.funcs = newPolicyFuncIndex(p.Functions)
	return p
}

// QualifiedName is a possibly schema-qualified relation or function name, both parts
// as PostgreSQL resolves identifiers; Schema "" = unqualified.
type QualifiedName struct{ Schema, Name string }

// String returns the name as SQL text, quoting a part only where PostgreSQL would not
// read it back unchanged without quotes.
func (q QualifiedName) String() string {
	if q.Schema == "" {
		return sqlident.Quote(q.Name)
	}
	return sqlident.Quote(q.Schema) + "." + sqlident.Quote(q.Name)
}

// ClaimTable is a table claims are made on.
type ClaimTable struct {
	QualifiedName
	EpochColumn  string
	StatusColumn string
	Line         int
}

// Table is a protected relation with its settings resolved against the policy's
// defaults: one of the policy's tables, or one resolve: catalog found.
type Table struct {
	QualifiedName
	EpochColumn string
	Mode        Mode
	Stale       Stale
	Line        int

	// unfenceable says why writes to this relation are refused: a view over a
	// protected table that does not show the epoch column, or a parent of a protected
	// partition without it (found by resolve: catalog); unfenceableFix what to do
	// instead, when the view's fix does not fit.
	unfenceable    string
	unfenceableFix string
	// base is, for a view found by resolve: catalog, the name of the protected
	// table it writes through to: a write to the view fires that table's statement
	// triggers, the guard's among them.
	base string
}

// MatchClaim returns the claim table a relation reference resolves to, with Match's
// rules for qualified and unqualified names.
func (p *Policy) MatchClaim(schema, name string) *ClaimTable {
	if p == nil {
		return nil
	}
	for i := range p.Claims {
		c := &p.Claims[i]
		if c.Name == name && (schema == "" || c.Schema == "" || c.Schema == schema) {
			return c
		}
	}
	return nil
}

// withTables returns a copy of p that also protects extra, for relations found in the
// catalog.
func (p *Policy) withTables(extra []Table) *Policy {
	c := *p
	c.Tables = append(slices.Clone(p.Tables), extra...)
	c.tables = newPolicyTableIndex(c.Tables)
	return &c
}

// Match returns the protected table a relation reference resolves to. schema and name
// are identifiers as PostgreSQL resolved them; schema "" means the statement did not
// qualify the name. An unqualified reference matches any entry with that name (fail
// closed: search_path may resolve it to any schema); a qualified reference matches an
// entry with that schema, or an unqualified entry. ambiguous reports an unqualified
// reference matching several entries that disagree on EpochColumn, Mode or Stale;
// t is then still one of them, never nil.
func (p *Policy) Match(schema, name string) (t *Table, ambiguous bool) {
	if p == nil {
		return nil, false
	}
	if ix := p.tables; ix != nil {
		if schema != "" {
			if t := ix.exact[QualifiedName{schema, name}]; t != nil {
				return t, false
			}
			return ix.exact[QualifiedName{"", name}], false
		}
		m := ix.byName[name]
		return m.table, m.ambiguous
	}
	i, amb := ScanTables(p.Tables, schema, name)
	if i < 0 {
		return nil, false
	}
	return &p.Tables[i], amb
}

// MatchFunction reports whether a function or procedure reference is listed in
// Functions, with the same rules as Match.
func (p *Policy) MatchFunction(schema, name string) bool {
	if p == nil {
		return false
	}
	if ix := p.funcs; ix != nil {
		if schema == "" {
			_, ok := ix.byName[name]
			return ok
		}
		if _, ok := ix.exact[QualifiedName{schema, name}]; ok {
			return true
		}
		_, ok := ix.exact[QualifiedName{"", name}]
		return ok
	}
	for _, f := range p.Functions {
		if f.Name == name && (schema == "" || f.Schema == "" || f.Schema == schema) {
			return true
		}
	}
	return false
}

type policyTableIndex struct {
	exact  map[QualifiedName]*Table   // every entry under its own schema+name
	byName map[string]policyNameMatch // the answer for an unqualified reference
}

type policyNameMatch struct {
	table     *Table
	ambiguous bool
}

type policyFuncIndex struct {
	exact  map[QualifiedName]struct{}
	byName map[string]struct{}
}

// newPolicyTableIndex precomputes ScanTables' answers, so the index and the scan
// cannot disagree on semantics.
func newPolicyTableIndex(tables []Table) *policyTableIndex {
	ix := &policyTableIndex{
		exact:  make(map[QualifiedName]*Table, len(tables)),
		byName: make(map[string]policyNameMatch, len(tables)),
	}
	for i := range tables {
		t := &tables[i]
		ix.exact[t.QualifiedName] = t
		if _, done := ix.byName[t.Name]; !done {
			j, amb := ScanTables(tables, "", t.Name)
			ix.byName[t.Name] = policyNameMatch{&tables[j], amb}
		}
	}
	return ix
}

func newPolicyFuncIndex(funcs []QualifiedName) *policyFuncIndex {
	ix := &policyFuncIndex{
		exact:  make(map[QualifiedName]struct{}, len(funcs)),
		byName: make(map[string]struct{}, len(funcs)),
	}
	for _, f := range funcs {
		ix.exact[f] = struct{}{}
		ix.byName[f.Name] = struct{}{}
	}
	return ix
}

// ScanTables is Match without an index, over any list of tables: the index of the
// entry a reference resolves to (-1: none) and whether it is ambiguous. The root
// package's Policy.Match answers with it too, so both read names one way.
func ScanTables(tables []Table, schema, name string) (int, bool) {
	return ScanEntries(len(tables), func(i int) Table { return tables[i] }, schema, name)
}

// ScanEntries is ScanTables over n entries that at(i) returns, for lists kept in
// another type (the root package's Policy.Tables): the same rules, without a copy.
func ScanEntries(n int, at func(int) Table, schema, name string) (int, bool) {
	exact, unqualified, first := -1, -1, -1
	var firstT Table
	ambiguous := false
	for i := range n {
		t := at(i)
		if t.Name != name {
			continue
		}
		switch {
		case t.Schema == "":
			if unqualified < 0 {
				unqualified = i
			}
		case t.Schema == schema:
			if exact < 0 {
				exact = i
			}
		}
		if schema != "" {
			continue
		}
		if first < 0 {
			first, firstT = i, t
		} else if t.EpochColumn != firstT.EpochColumn || t.Mode != firstT.Mode || t.Stale != firstT.Stale {
			ambiguous = true
		}
	}
	if schema != "" {
		if exact >= 0 {
			return exact, false
		}
		return unqualified, false
	}
	// For an unqualified reference the unqualified entry is the one the user
	// wrote the same way; otherwise the first in file order.
	if unqualified >= 0 {
		return unqualified, ambiguous
	}
	return first, ambiguous
}
