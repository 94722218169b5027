package sqlfence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sqlfence/sqlfence/internal/sqlident"
	"go.yaml.in/yaml/v3"
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

// Policy is a parsed policy file. Treat it as read-only once loaded: Match
// and MatchFunction use indexes built by ParsePolicy.
type Policy struct {
	Source        string // path (or "<inline>") it was loaded from, for error messages
	EpochColumn   string // default epoch column, already an identifier as PostgreSQL resolves it
	Mode          Mode
	Tables        []Table
	AllowUnfenced bool // unfenced: allow
	Enforce       Enforcement
	Functions     []QualifiedName
	// Claims are the tables claims are made on (a job queue's jobs table, a claim
	// table): only sqlfence's claim helpers may write their epoch and status columns,
	// so no job can be claimed without incrementing the epoch.
	Claims []ClaimTable
	// ResolveCatalog (resolve: catalog): at the first connection, read the catalog to
	// protect partitions, inheritance children and simple views of protected tables
	// too, and check every epoch column is bigint NOT NULL.
	ResolveCatalog bool

	// Built once by ParsePolicy so that Match, which runs for every
	// statement, is a map lookup without allocation. A Policy assembled by
	// hand has none, and Match falls back to scanning Tables.
	tables *policyTableIndex
	funcs  *policyFuncIndex
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
	Line        int    // line in the policy file, for messages

	// unfenceable says why writes to this relation are refused: a view over a
	// protected table that does not show the epoch column (found by resolve: catalog).
	unfenceable string
}

const (
	defaultPolicyEpochColumn = "writer_epoch"
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
		return nil, fmt.Errorf("sqlfence: policy %s: cannot read policy file (%s): %w", path, how, err)
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
	pol.tables = newPolicyTableIndex(pol.Tables)
	pol.funcs = newPolicyFuncIndex(pol.Functions)
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
		} else if t.EpochColumn != first.EpochColumn || t.Mode != first.Mode {
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

// policyParser turns the YAML node tree into a Policy. It stops at the first
// problem: fixing one mistake in a config file often changes what the next
// one means, and a single message that names its line is easiest to act on.
type policyParser struct {
	source string
}

func (p *policyParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("sqlfence: policy %s line %d: %s", p.source, line, fmt.Sprintf(format, args...))
}

var (
	policyTopLevelKeys = []string{"version", "epoch_column", "mode", "tables", "unfenced", "enforce", "functions", "claims", "resolve"}
	policyTableKeys    = []string{"name", "epoch_column", "mode"}
	policyClaimKeys    = []string{"table", "epoch_column", "status_column"}
)

func (p *policyParser) parse(data []byte) (*Policy, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("sqlfence: policy %s: file is empty", p.source)
		}
		return nil, fmt.Errorf("sqlfence: policy %s: %w", p.source, err)
	}
	// A second document would be silently ignored by a plain Unmarshal; a
	// policy that is only half read is worse than one that is refused.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errorf(extra.Line, "more than one YAML document; a policy file holds exactly one")
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("sqlfence: policy %s: %w", p.source, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, fmt.Errorf("sqlfence: policy %s: file is empty", p.source)
		}
		root = root.Content[0]
	}
	root = resolveAliasNode(root)
	if isNullNode(root) {
		return nil, fmt.Errorf("sqlfence: policy %s: file is empty", p.source)
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errorf(root.Line, "the policy must be a mapping with version and tables, got %s", describeNode(root))
	}
	keys, err := p.mapping(root, "at top level")
	if err != nil {
		return nil, err
	}

	// version first: keys that are unknown to version 1 may be perfectly
	// good in a later version, and "unsupported version" is the useful
	// message then.
	v, ok := keys.get("version")
	if !ok {
		return nil, p.errorf(root.Line, `version is missing; start the file with "version: 1"`)
	}
	if v.ShortTag() != "!!int" || v.Value != "1" {
		return nil, p.errorf(v.Line, `unsupported version %s; this sqlfence reads "version: 1"`, describeNode(v))
	}
	if err := p.checkKeys(keys, policyTopLevelKeys, "at top level"); err != nil {
		return nil, err
	}

	pol := &Policy{
		Source:      p.source,
		EpochColumn: defaultPolicyEpochColumn,
		Mode:        ModeStrict,
		Enforce:     EnforceOn,
	}
	if n, ok := keys.get("epoch_column"); ok {
		if pol.EpochColumn, err = p.column(n); err != nil {
			return nil, err
		}
	}
	if n, ok := keys.get("mode"); ok {
		if pol.Mode, err = p.mode(n); err != nil {
			return nil, err
		}
	}
	if n, ok := keys.get("unfenced"); ok {
		s, err := p.choice(n, "unfenced", "deny", "allow")
		if err != nil {
			return nil, err
		}
		pol.AllowUnfenced = s == "allow"
	}
	if n, ok := keys.get("enforce"); ok {
		s, err := p.choice(n, "enforce", "on", "shadow")
		if err != nil {
			return nil, err
		}
		pol.Enforce = EnforceOn
		if s == "shadow" {
			pol.Enforce = EnforceShadow
		}
	}

	n, ok := keys.get("tables")
	if !ok {
		return nil, p.errorf(root.Line, "tables is missing; list the protected tables under tables:")
	}
	if pol.Tables, err = p.tables(n, pol); err != nil {
		return nil, err
	}
	if n, ok := keys.get("functions"); ok {
		if pol.Functions, err = p.functions(n); err != nil {
			return nil, err
		}
	}
	if n, ok := keys.get("claims"); ok {
		if pol.Claims, err = p.claims(n, pol); err != nil {
			return nil, err
		}
	}
	if n, ok := keys.get("resolve"); ok {
		s, err := p.choice(n, "resolve", "none", "catalog")
		if err != nil {
			return nil, err
		}
		pol.ResolveCatalog = s == "catalog"
	}
	return pol, nil
}

func (p *policyParser) tables(n *yaml.Node, pol *Policy) ([]Table, error) {
	n = resolveAliasNode(n)
	if isNullNode(n) || (n.Kind == yaml.SequenceNode && len(n.Content) == 0) {
		return nil, p.errorf(n.Line, "tables is empty; list at least one protected table")
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "tables must be a list of table entries, got %s", describeNode(n))
	}
	out := make([]Table, 0, len(n.Content))
	seen := make(map[QualifiedName]int, len(n.Content))
	for _, e := range n.Content {
		e = resolveAliasNode(e)
		t := Table{EpochColumn: pol.EpochColumn, Mode: pol.Mode, Line: e.Line}
		var nameNode *yaml.Node
		switch e.Kind {
		case yaml.ScalarNode:
			// "- inventory" is accepted as shorthand for "- name: inventory",
			// the same form functions: uses.
			nameNode = e
		case yaml.MappingNode:
			keys, err := p.mapping(e, "in table entry")
			if err != nil {
				return nil, err
			}
			if err := p.checkKeys(keys, policyTableKeys, "in table entry"); err != nil {
				return nil, err
			}
			var ok bool
			if nameNode, ok = keys.get("name"); !ok {
				return nil, p.errorf(e.Line, "table entry has no name")
			}
			if c, ok := keys.get("epoch_column"); ok {
				if t.EpochColumn, err = p.column(c); err != nil {
					return nil, err
				}
			}
			if m, ok := keys.get("mode"); ok {
				if t.Mode, err = p.mode(m); err != nil {
					return nil, err
				}
			}
		default:
			return nil, p.errorf(e.Line, "table entry must be a mapping with a name, got %s", describeNode(e))
		}
		q, err := p.qualifiedName(nameNode, "table name")
		if err != nil {
			return nil, err
		}
		t.QualifiedName = q
		if prev, dup := seen[q]; dup {
			return nil, p.errorf(t.Line, "table %s is listed twice (lines %d and %d)", q, prev, t.Line)
		}
		seen[q] = t.Line
		out = append(out, t)
	}
	return out, nil
}

func (p *policyParser) claims(n *yaml.Node, pol *Policy) ([]ClaimTable, error) {
	n = resolveAliasNode(n)
	if isNullNode(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "claims must be a list of claim table entries, got %s", describeNode(n))
	}
	var out []ClaimTable
	for _, e := range n.Content {
		e = resolveAliasNode(e)
		c := ClaimTable{EpochColumn: "lease_epoch", StatusColumn: "status", Line: e.Line}
		if e.Kind != yaml.MappingNode {
			return nil, p.errorf(e.Line, "claim entry must be a mapping with a table, got %s", describeNode(e))
		}
		keys, err := p.mapping(e, "in claim entry")
		if err != nil {
			return nil, err
		}
		if err := p.checkKeys(keys, policyClaimKeys, "in claim entry"); err != nil {
			return nil, err
		}
		t, ok := keys.get("table")
		if !ok {
			return nil, p.errorf(e.Line, "claim entry has no table")
		}
		if c.QualifiedName, err = p.qualifiedName(t, "claim table"); err != nil {
			return nil, err
		}
		if v, ok := keys.get("epoch_column"); ok {
			if c.EpochColumn, err = p.column(v); err != nil {
				return nil, err
			}
		}
		if v, ok := keys.get("status_column"); ok {
			if c.StatusColumn, err = p.column(v); err != nil {
				return nil, err
			}
		}
		if t, _ := pol.Match(c.Schema, c.Name); t != nil && t.QualifiedName == c.QualifiedName {
			return nil, p.errorf(e.Line, "%s is both a protected table (line %d) and a claim table; a claim table holds the epochs, it is not fenced by them", c.QualifiedName, t.Line)
		}
		for _, prev := range out {
			if prev.QualifiedName == c.QualifiedName {
				return nil, p.errorf(e.Line, "claim table %s is listed twice (lines %d and %d)", c.QualifiedName, prev.Line, e.Line)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func (p *policyParser) functions(n *yaml.Node) ([]QualifiedName, error) {
	n = resolveAliasNode(n)
	// An empty "functions:" (every entry commented out) means none.
	if isNullNode(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "functions must be a list of function names, got %s", describeNode(n))
	}
	out := make([]QualifiedName, 0, len(n.Content))
	seen := make(map[QualifiedName]int, len(n.Content))
	for _, e := range n.Content {
		q, err := p.qualifiedName(e, "function name")
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[q]; dup {
			return nil, p.errorf(e.Line, "function %s is listed twice (lines %d and %d)", q, prev, e.Line)
		}
		seen[q] = e.Line
		out = append(out, q)
	}
	return out, nil
}

func (p *policyParser) mode(n *yaml.Node) (Mode, error) {
	s, err := p.choice(n, "mode", "strict", "repeatable")
	if err != nil {
		return 0, err
	}
	if s == "repeatable" {
		return ModeRepeatable, nil
	}
	return ModeStrict, nil
}

// choice reads a scalar that must be one of allowed, spelled exactly: a
// setting that decides how much a stale writer may do is not the place to
// guess what "Shadow" or "off" was meant to say.
func (p *policyParser) choice(n *yaml.Node, key string, allowed ...string) (string, error) {
	n = resolveAliasNode(n)
	if n.Kind == yaml.ScalarNode && !isNullNode(n) {
		for _, a := range allowed {
			if n.Value == a {
				return a, nil
			}
		}
	}
	return "", p.errorf(n.Line, "%s must be one of %s; got %s", key, strings.Join(allowed, ", "), describeNode(n))
}

func (p *policyParser) column(n *yaml.Node) (string, error) {
	s, err := p.scalar(n, "epoch_column")
	if err != nil {
		return "", err
	}
	parts, err := sqlident.Split(s)
	if err == nil && len(parts) != 1 {
		err = errors.New(`a column name is a single identifier (quote it, '"a.b"', if the dot is part of the name)`)
	}
	if err != nil {
		return "", p.errorf(n.Line, "bad epoch_column %q: %v", s, err)
	}
	return parts[0], nil
}

func (p *policyParser) qualifiedName(n *yaml.Node, what string) (QualifiedName, error) {
	s, err := p.scalar(n, what)
	if err != nil {
		return QualifiedName{}, err
	}
	q, err := ParseQualifiedName(s)
	if err != nil {
		return QualifiedName{}, p.errorf(n.Line, "bad %s %q: %v", what, s, err)
	}
	return q, nil
}

// ParseQualifiedName reads a relation or function name written as in SQL and in the
// policy file: unquoted parts fold to lower case, "Quoted" parts are exact with ""
// for a quote, each part is cut to PostgreSQL's 63 bytes, and there are at most two
// parts (schema.name).
func ParseQualifiedName(s string) (QualifiedName, error) {
	parts, err := sqlident.Split(s)
	if err == nil && len(parts) > 2 {
		err = fmt.Errorf("%d dot-separated parts; use name or schema.name", len(parts))
	}
	switch {
	case err != nil:
		return QualifiedName{}, err
	case len(parts) == 1:
		return QualifiedName{Name: parts[0]}, nil
	}
	return QualifiedName{Schema: parts[0], Name: parts[1]}, nil
}

// scalar returns a scalar's text. Non-string scalars are taken as written
// (a table may well be called "true"); only null is refused, because it is
// what an accidentally empty value looks like.
func (p *policyParser) scalar(n *yaml.Node, what string) (string, error) {
	n = resolveAliasNode(n)
	if n.Kind != yaml.ScalarNode || isNullNode(n) {
		return "", p.errorf(n.Line, "%s must be a string, got %s", what, describeNode(n))
	}
	return n.Value, nil
}

// policyMapping keeps a mapping's entries in file order.
type policyMapping []struct{ key, value *yaml.Node }

func (m policyMapping) get(key string) (*yaml.Node, bool) {
	for _, kv := range m {
		if kv.key.Value == key {
			return kv.value, true
		}
	}
	return nil, false
}

// mapping checks a mapping's keys are distinct strings. yaml.v3 only rejects
// duplicate keys when decoding into Go maps, not into a Node, and a repeated
// key would otherwise let one line silently override another.
func (p *policyParser) mapping(n *yaml.Node, where string) (policyMapping, error) {
	out := make(policyMapping, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolveAliasNode(n.Content[i])
		if k.Kind != yaml.ScalarNode || isNullNode(k) {
			return nil, p.errorf(k.Line, "keys %s must be strings, got %s", where, describeNode(k))
		}
		for _, kv := range out {
			if kv.key.Value == k.Value {
				return nil, p.errorf(k.Line, "key %q given twice %s (lines %d and %d)", k.Value, where, kv.key.Line, k.Line)
			}
		}
		out = append(out, struct{ key, value *yaml.Node }{k, n.Content[i+1]})
	}
	return out, nil
}

func (p *policyParser) checkKeys(m policyMapping, known []string, where string) error {
next:
	for _, kv := range m {
		for _, k := range known {
			if kv.key.Value == k {
				continue next
			}
		}
		return p.errorf(kv.key.Line, "unknown key %q %s (known: %s)", kv.key.Value, where, strings.Join(known, ", "))
	}
	return nil
}

func resolveAliasNode(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names a node for an error message: the value itself for a
// scalar, so the user sees what was read, or its shape otherwise.
func describeNode(n *yaml.Node) string {
	n = resolveAliasNode(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "no value"
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "an unexpected YAML node"
}
