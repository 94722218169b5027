package sqlfence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Mode is how a write's epoch compares with the epoch stored on the row.
type Mode uint8

const (
	ModeStrict     Mode = iota + 1 // stored < epoch: one write per row per epoch
	ModeRepeatable                 // stored <= epoch
)

// String returns the mode as it is spelled in a policy file.
func (m Mode) String() string {
	switch m {
	case ModeStrict:
		return "strict"
	case ModeRepeatable:
		return "repeatable"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Operator returns the comparison a fenced write puts between the stored
// epoch and its own: stored <op> epoch. Anything other than ModeRepeatable,
// including the zero Mode of a hand-built Table, gets the strict "<": an
// uninitialised mode must never widen what a stale writer may do.
func (m Mode) Operator() string {
	if m == ModeRepeatable {
		return "<="
	}
	return "<"
}

// Stale is what a claim-checked write compares: whether a write made under a claim
// (WithClaim, the claim helpers) is also fenced by the epochs stored on the rows.
type Stale uint8

const (
	// StaleRow (stale: row, the default): writes under a claim are checked against
	// the claim and against the row (stored < epoch), as writes under a bare epoch
	// are. With global epochs a newer claim of another job fences a valid older one.
	StaleRow Stale = iota
	// StaleClaim (stale: claim): writes under a claim are checked against the claim
	// only; the row's epoch is stamped but not compared, so a valid older claim of
	// another job is not fenced by a newer one. Writes under a bare epoch are still
	// compared with the row.
	StaleClaim
)

// String returns the setting as it is spelled in a policy file.
func (s Stale) String() string {
	switch s {
	case StaleRow:
		return "row"
	case StaleClaim:
		return "claim"
	}
	return "Stale(" + strconv.Itoa(int(s)) + ")"
}

// qualifiedOperator is Operator as sqlfence writes it into SQL: OPERATOR(pg_catalog.<)
// names the built-in comparison, which no operator the session creates and no
// search_path it sets can replace.
func (m Mode) qualifiedOperator() string { return catalogOperator(m.Operator()) }

// catalogOperator spells a built-in operator schema-qualified, OPERATOR(pg_catalog.op).
// Every operator sqlfence writes into SQL goes through it: an unqualified one resolves
// through search_path, and a session that creates public.< on bigint and puts public
// first would change what the fence means.
func catalogOperator(op string) string { return "OPERATOR(pg_catalog." + op + ")" }

// Enforcement says whether sqlfence enforces the policy or only reports what
// it would have done.
type Enforcement uint8

const (
	EnforceOn Enforcement = iota + 1
	EnforceShadow
)

// String returns the enforcement as it is spelled in a policy file.
func (e Enforcement) String() string {
	switch e {
	case EnforceOn:
		return "on"
	case EnforceShadow:
		return "shadow"
	}
	return "Enforcement(" + strconv.Itoa(int(e)) + ")"
}

// Policy is a parsed policy file, from [LoadPolicy] or [ParsePolicy].
//
// A connector never reads the caller's Policy after [NewConnector] returns: it fences
// with a private copy, checked again as ParsePolicy would check it. Changing a Policy
// later (appending a table, say) changes nothing for connectors made before; make a
// new connector for it. A Policy built as a struct literal has skipped the parser's
// checks and cannot fence a connector.
type Policy struct {
	Source        string // path (or "<inline>") it was loaded from, for error messages
	EpochColumn   string // default epoch column, already an identifier as PostgreSQL resolves it
	Mode          Mode
	Stale         Stale // stale: row | claim — the default for every table
	Tables        []Table
	AllowUnfenced bool // unfenced: allow
	Enforce       Enforcement
	Functions     []QualifiedName
	// Claims are the tables claims are made on (a job queue's jobs table, a claim
	// table): only sqlfence's claim helpers may write their epoch and status columns,
	// so no job can be claimed without incrementing the epoch.
	Claims []ClaimTable
	// SafeFunctions (safe_functions:) are functions and procedures the application
	// declares write no protected table: calls of them pass. An unqualified entry
	// matches the name in every schema; a qualified one only calls qualified the same.
	SafeFunctions []QualifiedName
	// AllowDDL (ddl: allow) lets DDL run on fenced connections, for programs that
	// migrate through the same handle. DDL that could change which rows are protected
	// or how the fence reads is refused even then.
	AllowDDL bool
	// ResolveCatalog (resolve: catalog): at the first connection, and again after DDL
	// through the driver, read the catalog to protect partitions, inheritance
	// children, parents and views of protected tables too, check every epoch column
	// is bigint NOT NULL, and judge what the text does not show: user functions by
	// their bodies, triggers, rules and foreign-key actions.
	ResolveCatalog bool

	// parsed: the policy came from ParsePolicy (or LoadPolicy), whose checks a
	// struct literal skips; only such a policy can fence a connector.
	parsed bool
	// Set only on the private copy a connector (or Plan) takes with compile: the
	// indexes that make Match, which runs for every statement, a map lookup without
	// allocation. The caller's Policy has none and Match scans Tables, so a table
	// appended after parsing is matched as soon as it is there.
	tables *policyTableIndex
	funcs  *policyFuncIndex
	// catalog is what resolve: catalog read (snapshot.go), set only on a connector's
	// copy; judging is set only on the copy that judges a routine body read from it.
	catalog *catalogSnapshot
	judging *bodyJudgment
}

// QualifiedName is a possibly schema-qualified relation or function name.
// Schema "" = unqualified; both as PostgreSQL resolves identifiers.
type QualifiedName struct{ Schema, Name string }

// String returns the name as SQL text, quoting a part only where PostgreSQL
// would not read it back unchanged without quotes.
func (q QualifiedName) String() string {
	if q.Schema == "" {
		return sqlident.Quote(q.Name)
	}
	return sqlident.Quote(q.Schema) + "." + sqlident.Quote(q.Name)
}

// ClaimTable is a table claims are made on.
type ClaimTable struct {
	QualifiedName
	EpochColumn  string // default lease_epoch
	StatusColumn string // default status
	Line         int
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

// compile returns the private copy a connector fences with: p checked again as
// ParsePolicy checks a file (the caller may have changed its fields since), with
// defaults filled in for entries appended by hand, and indexed for Match. Slices are
// copied, so later changes to p cannot reach the copy.
func (p *Policy) compile() (*Policy, error) {
	if p == nil {
		return nil, errors.New("sqlfence: nil policy; load one with sqlfence.LoadPolicy or sqlfence.ParsePolicy")
	}
	if !p.parsed {
		return nil, errors.New("sqlfence: the policy was not built by sqlfence.LoadPolicy or sqlfence.ParsePolicy; " +
			"a struct literal skips the checks that keep writes fenced, so parse the policy (ParsePolicy takes YAML from memory)")
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("sqlfence: policy %s, changed after parsing: %s", p.Source, fmt.Sprintf(format, args...))
	}
	c := *p
	c.Tables = slices.Clone(p.Tables)
	c.Functions = slices.Clone(p.Functions)
	c.SafeFunctions = slices.Clone(p.SafeFunctions)
	c.Claims = slices.Clone(p.Claims)
	if c.EpochColumn == "" {
		return nil, bad("EpochColumn is empty")
	}
	if c.Mode != ModeStrict && c.Mode != ModeRepeatable {
		return nil, bad("Mode is %v; use ModeStrict or ModeRepeatable", c.Mode)
	}
	if c.Stale != StaleRow && c.Stale != StaleClaim {
		return nil, bad("Stale is %v; use StaleRow or StaleClaim", c.Stale)
	}
	if c.Enforce != EnforceOn && c.Enforce != EnforceShadow {
		return nil, bad("Enforce is %v; use EnforceOn or EnforceShadow", c.Enforce)
	}
	if len(c.Tables) == 0 {
		return nil, bad("no protected tables")
	}
	seen := make(map[QualifiedName]bool, len(c.Tables))
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.EpochColumn == "" {
			t.EpochColumn = c.EpochColumn
		}
		if t.Mode == 0 {
			t.Mode = c.Mode
		}
		switch {
		case t.Name == "":
			return nil, bad("table entry %d has no name", i+1)
		case t.Mode != ModeStrict && t.Mode != ModeRepeatable:
			return nil, bad("table %s has Mode %v; use ModeStrict or ModeRepeatable", t.QualifiedName, t.Mode)
		case t.Stale != StaleRow && t.Stale != StaleClaim:
			return nil, bad("table %s has Stale %v; use StaleRow or StaleClaim", t.QualifiedName, t.Stale)
		case seen[t.QualifiedName]:
			return nil, bad("table %s is listed twice", t.QualifiedName)
		}
		seen[t.QualifiedName] = true
	}
	for i, f := range append(slices.Clone(c.Functions), c.SafeFunctions...) {
		if f.Name == "" {
			return nil, bad("function entry %d has no name", i+1)
		}
	}
	for i := range c.Claims {
		cl := &c.Claims[i]
		if cl.EpochColumn == "" {
			cl.EpochColumn = defaultClaimEpochColumn
		}
		if cl.StatusColumn == "" {
			cl.StatusColumn = defaultClaimStatusColumn
		}
		if cl.Name == "" {
			return nil, bad("claim entry %d has no table", i+1)
		}
		if t, _ := scanPolicyTables(c.Tables, cl.Schema, cl.Name); t != nil {
			return nil, bad("%s is both a protected table and a claim table", cl.QualifiedName)
		}
	}
	c.tables = newPolicyTableIndex(c.Tables)
	c.funcs = newPolicyFuncIndex(c.Functions)
	return &c, nil
}

// withTables returns a copy of p that also protects extra, for tables found in the
// catalog at connect time.
func (p *Policy) withTables(extra []Table) *Policy {
	c := *p
	c.Tables = append(slices.Clone(p.Tables), extra...)
	c.tables = newPolicyTableIndex(c.Tables)
	return &c
}

// Table is a protected table with its settings resolved against the policy
// defaults.
type Table struct {
	QualifiedName
	EpochColumn string // resolved: the table's own or the policy default
	Mode        Mode   // resolved: the table's own or the policy default
	Stale       Stale  // resolved by the parser: the table's own or the policy default (a Table appended by hand: StaleRow)
	Line        int    // line in the policy file, for messages

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

const (
	defaultPolicyEpochColumn = "writer_epoch"
	defaultClaimEpochColumn  = "lease_epoch"
	defaultClaimStatusColumn = "status"
	inlinePolicySource       = "<inline>"
)

// LoadPolicy reads and parses the policy file at path.
func LoadPolicy(path string) (*Policy, error) {
	const how = "give the policy file with the sqlfence_policy=PATH DSN parameter or the SQLFENCE_POLICY environment variable"
	if path == "" {
		return nil, fmt.Errorf("sqlfence: policy: no policy file given; %s", how)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		where := "" // a relative path is read from wherever the process was started
		if wd, werr := os.Getwd(); werr == nil && !filepath.IsAbs(path) && errors.Is(err, fs.ErrNotExist) {
			where = " relative to the working directory " + wd
		}
		return nil, fmt.Errorf("sqlfence: policy %s: cannot read policy file%s (%s): %w", path, where, how, err)
	}
	return ParsePolicy(data, path)
}

// ParsePolicy parses a policy file's contents (YAML, or JSON, which is YAML).
// source names the file in error messages and becomes Policy.Source; ""
// means "<inline>".
func ParsePolicy(data []byte, source string) (*Policy, error) {
	if source == "" {
		source = inlinePolicySource
	}
	p := &policyParser{source: source}
	pol, err := p.parse(data)
	if err != nil {
		return nil, err
	}
	pol.parsed = true
	return pol, nil
}

// Match returns the protected table a relation reference resolves to. schema and name are
// identifiers as PostgreSQL resolved them (already case-folded / unquoted); schema "" means the
// statement did not qualify the name. An unqualified reference matches any entry with that name
// (fail closed: search_path may resolve it to any schema); a qualified reference matches an
// entry with that schema, or an unqualified entry. Prefer the most specific entry.
// ambiguous reports an unqualified reference matching several entries that disagree on
// EpochColumn or Mode — the caller refuses those statements and asks the user to qualify.
//
// When ambiguous is true t is still one of the matching entries, never nil,
// so a caller that only tests t != nil treats the relation as protected.
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
	return scanPolicyTables(p.Tables, schema, name)
}

// MatchFunction reports whether a function or procedure reference is listed
// in Functions, with the same rules as Match: an unqualified reference
// matches an entry in any schema, a qualified one matches that schema or an
// unqualified entry.
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

// newPolicyTableIndex precomputes scanPolicyTables' answers, so the index and the
// fallback cannot disagree on semantics.
func newPolicyTableIndex(tables []Table) *policyTableIndex {
	ix := &policyTableIndex{
		exact:  make(map[QualifiedName]*Table, len(tables)),
		byName: make(map[string]policyNameMatch, len(tables)),
	}
	for i := range tables {
		t := &tables[i]
		ix.exact[t.QualifiedName] = t
		if _, done := ix.byName[t.Name]; !done {
			m, amb := scanPolicyTables(tables, "", t.Name)
			ix.byName[t.Name] = policyNameMatch{m, amb}
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

// scanPolicyTables is Match without an index.
func scanPolicyTables(tables []Table, schema, name string) (*Table, bool) {
	var exact, unqualified, first *Table
	ambiguous := false
	for i := range tables {
		t := &tables[i]
		if t.Name != name {
			continue
		}
		switch {
		case t.Schema == "":
			if unqualified == nil {
				unqualified = t
			}
		case t.Schema == schema:
			if exact == nil {
				exact = t
			}
		}
		if schema != "" {
			continue
		}
		if first == nil {
			first = t
		} else if t.EpochColumn != first.EpochColumn || t.Mode != first.Mode || t.Stale != first.Stale {
			ambiguous = true
		}
	}
	if schema != "" {
		if exact != nil {
			return exact, false
		}
		return unqualified, false
	}
	// For an unqualified reference the unqualified entry is the one the user
	// wrote the same way; otherwise the first in file order.
	if unqualified != nil {
		return unqualified, ambiguous
	}
	return first, ambiguous
}
