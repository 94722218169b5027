// The policy as a program reads it: its types, matching, and the compiled copy a
// connector takes for the engine (compile).

package sqlfence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sqlfence/sqlfence/internal/engine"
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
func (m Mode) Operator() string { return engine.Mode(m).Operator() }

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
	// It is the default; resolve: none turns it off (unit tests over fakes, roles
	// that cannot read the catalog), and each connector then logs what it does not see.
	ResolveCatalog bool
	// CatalogRefresh (catalog_refresh:) is how often the catalog is read again when
	// the database has no catalog version (sqlfence install): the window in which DDL
	// made outside the driver is not seen. 0: such a connector refuses writes.
	CatalogRefresh time.Duration

	// parsed: the policy came from ParsePolicy (or LoadPolicy), whose checks a
	// struct literal skips; only such a policy can fence a connector.
	parsed bool
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

// compile returns the engine's policy a connector fences with: p checked again as
// ParsePolicy checks a file (the caller may have changed its fields since), with
// defaults filled in for entries appended by hand, and indexed for matching. Every
// slice is copied, so later changes to p cannot reach the copy.
func (p *Policy) compile() (*engine.Policy, error) {
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
	if p.EpochColumn == "" {
		return nil, bad("EpochColumn is empty")
	}
	if p.Mode != ModeStrict && p.Mode != ModeRepeatable {
		return nil, bad("Mode is %v; use ModeStrict or ModeRepeatable", p.Mode)
	}
	if p.Stale != StaleRow && p.Stale != StaleClaim {
		return nil, bad("Stale is %v; use StaleRow or StaleClaim", p.Stale)
	}
	if p.Enforce != EnforceOn && p.Enforce != EnforceShadow {
		return nil, bad("Enforce is %v; use EnforceOn or EnforceShadow", p.Enforce)
	}
	if len(p.Tables) == 0 {
		return nil, bad("no protected tables")
	}
	c := &engine.Policy{Source: p.Source, EpochColumn: p.EpochColumn, Mode: engine.Mode(p.Mode), Stale: engine.Stale(p.Stale),
		AllowUnfenced: p.AllowUnfenced, Enforce: engine.Enforcement(p.Enforce), AllowDDL: p.AllowDDL, ResolveCatalog: p.ResolveCatalog, CatalogRefresh: p.CatalogRefresh,
		Tables: engineTables(p.Tables), Functions: engineNames(p.Functions), SafeFunctions: engineNames(p.SafeFunctions)}
	seen := make(map[engine.QualifiedName]bool, len(c.Tables))
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
		case t.Mode != engine.ModeStrict && t.Mode != engine.ModeRepeatable:
			return nil, bad("table %s has Mode %v; use ModeStrict or ModeRepeatable", t.QualifiedName, Mode(t.Mode))
		case t.Stale != engine.StaleRow && t.Stale != engine.StaleClaim:
			return nil, bad("table %s has Stale %v; use StaleRow or StaleClaim", t.QualifiedName, Stale(t.Stale))
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
	for i, cl := range p.Claims {
		if cl.EpochColumn == "" {
			cl.EpochColumn = defaultClaimEpochColumn
		}
		if cl.StatusColumn == "" {
			cl.StatusColumn = defaultClaimStatusColumn
		}
		if cl.Name == "" {
			return nil, bad("claim entry %d has no table", i+1)
		}
		name := engine.QualifiedName(cl.QualifiedName)
		if j, _ := engine.ScanTables(c.Tables, name.Schema, name.Name); j >= 0 {
			return nil, bad("%s is both a protected table and a claim table", cl.QualifiedName)
		}
		c.Claims = append(c.Claims, engine.ClaimTable{QualifiedName: name, EpochColumn: cl.EpochColumn, StatusColumn: cl.StatusColumn, Line: cl.Line})
	}
	return c.Index(), nil
}

// engineTables and engineNames copy the policy's entries into the engine's types.
func engineTables(ts []Table) []engine.Table {
	out := make([]engine.Table, len(ts))
	for i, t := range ts {
		out[i] = engineTable(t)
	}
	return out
}

func engineTable(t Table) engine.Table {
	return engine.Table{QualifiedName: engine.QualifiedName(t.QualifiedName), EpochColumn: t.EpochColumn,
		Mode: engine.Mode(t.Mode), Stale: engine.Stale(t.Stale), Line: t.Line}
}

func engineNames(ns []QualifiedName) []engine.QualifiedName {
	out := make([]engine.QualifiedName, len(ns))
	for i, n := range ns {
		out[i] = engine.QualifiedName(n)
	}
	return out
}

// Table is a protected table with its settings resolved against the policy
// defaults.
type Table struct {
	QualifiedName
	EpochColumn string // resolved: the table's own or the policy default
	Mode        Mode   // resolved: the table's own or the policy default
	Stale       Stale  // resolved by the parser: the table's own or the policy default (a Table appended by hand: StaleRow)
	Line        int    // line in the policy file, for messages

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
	i, amb := engine.ScanEntries(len(p.Tables), func(i int) engine.Table { return engineTable(p.Tables[i]) }, schema, name)
	if i < 0 {
		return nil, false
	}
	return &p.Tables[i], amb
}

// MatchFunction reports whether a function or procedure reference is listed
// in Functions, with the same rules as Match: an unqualified reference
// matches an entry in any schema, a qualified one matches that schema or an
// unqualified entry.
func (p *Policy) MatchFunction(schema, name string) bool {
	if p == nil {
		return false
	}
	for _, f := range p.Functions {
		if f.Name == name && (schema == "" || f.Schema == "" || f.Schema == schema) {
			return true
		}
	}
	return false
}
