// The policy file's lists, entry by entry: protected tables, claim tables, functions.

package sqlfence

import "go.yaml.in/yaml/v3"

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
		t := Table{EpochColumn: pol.EpochColumn, Mode: pol.Mode, Stale: pol.Stale, Line: e.Line}
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
			if m, ok := keys.get("stale"); ok {
				if t.Stale, err = p.stale(m); err != nil {
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
		c := ClaimTable{EpochColumn: defaultClaimEpochColumn, StatusColumn: defaultClaimStatusColumn, Line: e.Line}
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

func (p *policyParser) functions(n *yaml.Node, key string) ([]QualifiedName, error) {
	n = resolveAliasNode(n)
	// An empty list (every entry commented out) means none.
	if isNullNode(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n.Line, "%s must be a list of function names, got %s", key, describeNode(n))
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
