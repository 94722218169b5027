// The policy file reader: YAML (or JSON) to a Policy, every mistake reported with its line.

package sqlfence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/sqlident"
	"go.yaml.in/yaml/v3"
)

// policyParser turns the YAML node tree into a Policy. It stops at the first
// problem: fixing one mistake in a config file often changes what the next
// one means, and a single message that names its line is easiest to act on.
type policyParser struct {
	source string
}

func (p *policyParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("sqlfence: policy %s line %d: %s", p.source, line, fmt.Sprintf(format, args...))
}

// yamlError puts a YAML syntax error in the policy's own form, "policy P line N: …".
// go.yaml.in/yaml/v3 counts the lines of its parser's errors from 0 (its scanner's
// from 1, and those are left as they are), so a parser error is moved one line on.
func (p *policyParser) yamlError(err error) error {
	msg, ok := strings.CutPrefix(err.Error(), "yaml: ")
	if !ok {
		return fmt.Errorf("sqlfence: policy %s: %w", p.source, err)
	}
	line := 0
	if n, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": "); ok && strings.HasPrefix(msg, "line ") {
		if v, err := strconv.Atoi(n); err == nil {
			line, msg = v, rest
		}
	}
	if slices.Contains(yamlParserProblems, msg) {
		line++ // yaml.v3 omits "line 0", the first line, so this is 1 then
	}
	// The parser reports where its structure broke, which is often the line before
	// the one whose indentation is off: say so, with the shape it expects.
	const hint = "; check the indentation of this line and the next (each entry under tables: is \"  - name: …\", its keys indented under name)"
	if line == 0 {
		return fmt.Errorf("sqlfence: policy %s: YAML syntax: %s%s", p.source, msg, hint)
	}
	return p.errorf(line, "YAML syntax: %s%s", msg, hint)
}

// yamlParserProblems are the messages of yaml.v3's parser errors (parserc.go).
var yamlParserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>", "did not find expected node content",
	"did not find expected '-' indicator", "did not find expected key", "did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found duplicate %YAML directive", "found incompatible YAML document", "found duplicate %TAG directive", "found undefined tag handle",
}

var (
	policyTopLevelKeys = []string{"version", "epoch_column", "mode", "stale", "tables", "unfenced", "enforce", "functions", "safe_functions", "claims", "resolve", "ddl", "catalog_refresh"}
	policyTableKeys    = []string{"name", "epoch_column", "mode", "stale"}
	policyClaimKeys    = []string{"table", "epoch_column", "status_column"}
)

func (p *policyParser) parse(data []byte) (*Policy, error) {
	root, err := p.document(data)
	if err != nil {
		return nil, err
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
	pol, err := p.settings(keys)
	if err != nil {
		return nil, err
	}
	if err := p.lists(keys, root, pol); err != nil {
		return nil, err
	}
	return pol, nil
}

// document decodes the file's one YAML document and returns its top-level mapping.
func (p *policyParser) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("sqlfence: policy %s: file is empty", p.source)
		}
		return nil, p.yamlError(err)
	}
	// A second document would be silently ignored by a plain Unmarshal; a
	// policy that is only half read is worse than one that is refused.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errorf(extra.Line, "more than one YAML document; a policy file holds exactly one")
	} else if !errors.Is(err, io.EOF) {
		return nil, p.yamlError(err)
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
	return root, nil
}

// settings reads the top-level scalar settings, each with its default.
func (p *policyParser) settings(keys policyMapping) (*Policy, error) {
	pol := &Policy{
		Source:      p.source,
		EpochColumn: defaultPolicyEpochColumn,
		Mode:        ModeStrict,
		Enforce:     EnforceOn,
	}
	// resolve: catalog is the default: a policy that names a table the database does
	// not have, or leaves its partitions, views and triggers unread, fails open.
	pol.ResolveCatalog = true
	var err error
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
	if n, ok := keys.get("stale"); ok {
		if pol.Stale, err = p.stale(n); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		key, no, yes string
		set          *bool
	}{
		{"unfenced", "deny", "allow", &pol.AllowUnfenced},
		{"enforce", "on", "shadow", nil},
		{"ddl", "deny", "allow", &pol.AllowDDL},
		{"resolve", "none", "catalog", &pol.ResolveCatalog},
	} {
		n, ok := keys.get(c.key)
		if !ok {
			continue
		}
		s, err := p.choice(n, c.key, c.no, c.yes)
		if err != nil {
			return nil, err
		}
		if c.set != nil {
			*c.set = s == c.yes
		} else if s == c.yes {
			pol.Enforce = EnforceShadow
		}
	}
	if n, ok := keys.get("catalog_refresh"); ok {
		if pol.CatalogRefresh, err = p.refresh(n); err != nil {
			return nil, err
		}
		if !pol.ResolveCatalog {
			return nil, p.errorf(n.Line, "catalog_refresh needs resolve: catalog (with resolve: none no catalog is read)")
		}
	}
	return pol, nil
}

// lists reads the tables, functions and claim tables.
func (p *policyParser) lists(keys policyMapping, root *yaml.Node, pol *Policy) error {
	n, ok := keys.get("tables")
	if !ok {
		return p.errorf(root.Line, "tables is missing; list the protected tables under tables:")
	}
	var err error
	if pol.Tables, err = p.tables(n, pol); err != nil {
		return err
	}
	if n, ok := keys.get("functions"); ok {
		if pol.Functions, err = p.functions(n, "functions"); err != nil {
			return err
		}
	}
	if n, ok := keys.get("safe_functions"); ok {
		if pol.SafeFunctions, err = p.functions(n, "safe_functions"); err != nil {
			return err
		}
		for _, f := range pol.SafeFunctions {
			if slices.Contains(pol.Functions, f) {
				return p.errorf(n.Line, "function %s is under both functions: (writes protected tables) and safe_functions: (writes none)", f)
			}
		}
	}
	if n, ok := keys.get("claims"); ok {
		if pol.Claims, err = p.claims(n, pol); err != nil {
			return err
		}
	}
	return nil
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

func (p *policyParser) stale(n *yaml.Node) (Stale, error) {
	s, err := p.choice(n, "stale", "row", "claim")
	if err != nil {
		return 0, err
	}
	if s == "claim" {
		return StaleClaim, nil
	}
	return StaleRow, nil
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

// refresh reads catalog_refresh: a Go duration from 100ms to 1h, the longest a
// catalog change made outside the driver goes unseen when the catalog version is not
// installed (fence_version.go).
func (p *policyParser) refresh(n *yaml.Node) (time.Duration, error) {
	s, err := p.scalar(n, "catalog_refresh")
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 100*time.Millisecond || d > time.Hour {
		return 0, p.errorf(n.Line, "catalog_refresh must be a duration from 100ms to 1h, such as 1s; got %q", s)
	}
	return d, nil
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
	q, err := engine.ParseQualifiedName(s)
	return QualifiedName(q), err
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
