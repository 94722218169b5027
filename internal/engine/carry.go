// Carried epochs: with a guard that fences the writes the server makes on a fenced
// statement's behalf (Policy.GuardCarries), a statement whose triggers, foreign-key
// actions, rules or called functions write protected tables is not refused: the
// driver sends it with its epoch in the guard's marker, and the guard's row trigger
// compares each such row with it and stamps it, as the fence does the rows the
// statement writes itself (internal/guardmark, internal/cli/guard). What the judging
// of code would refuse for any other reason (dynamic SQL, unreadable code, TRUNCATE,
// a BEFORE trigger that can change the epoch column, an INSTEAD rule on a protected
// relation) stays refused.

package engine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/sqlfence/sqlfence/internal/guardmark"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// carried is a protected relation the server writes for a statement: the name the
// guard's triggers on it answer to (the relation's own, or for a view its base
// table's), and the policy entry whose mode and stale rule its rows get.
type carried struct {
	name  string
	table *Table
}

// carrySet collects the relations a statement's server-made writes reach while it
// is judged.
type carrySet struct{ list []carried }

func (c *carrySet) add(list ...carried) {
	for _, x := range list {
		if !slices.ContainsFunc(c.list, func(y carried) bool { return y.name == x.name && y.table == x.table }) {
			c.list = append(c.list, x)
		}
	}
}

// carriedOf is what a write to the protected relation t (by its name in the
// statement) makes the guard compare: the relation and, for a view, its base.
func carriedOf(t *Table) []carried {
	out := []carried{{name: t.Name, table: t}}
	if t.base != "" {
		out = append(out, carried{name: t.base, table: t})
	}
	return out
}

// collector is where a judgment under p records carried writes: the body being
// judged, or the statement being analyzed. nil when the writes cannot be carried
// (no guard that fences them, or no statement to carry them: sqlfence check, DDL),
// so that they are refused.
func (p *Policy) collector() *carrySet {
	switch {
	case !p.GuardCarries:
		return nil
	case p.judging != nil:
		return &p.judging.carried
	}
	return p.carry
}

// carryOrRefuse records the server-made writes list for the statement being judged,
// or, where they cannot be carried, refuses them: what writes them, and the guard
// that would fence them.
func (p *Policy) carryOrRefuse(list []carried, what string) *Error {
	if c := p.collector(); c != nil {
		c.add(list...)
		return nil
	}
	t := list[0].table
	return refuse(rulecode.BodyWrites, t, "it writes the protected table "+t.QualifiedName.String()+", and no epoch reaches inside it",
		"write the table with plain statements under an epoch"+p.guardNote())
}

// bodyCollector is collector for the writes of a routine body: only a routine read
// from the catalog, which a statement calls (or a trigger or rule runs), has its
// writes carried; a DO block or a CREATE FUNCTION sent through the driver does not.
func (p *Policy) bodyCollector() *carrySet {
	if p.judging == nil {
		return nil
	}
	return p.collector()
}

// bodyGuardNote is guardNote for the refusal of a routine body's write: only for a
// routine read from the catalog.
func (p *Policy) bodyGuardNote() string {
	if p.judging == nil {
		return ""
	}
	return p.guardNote()
}

// withCollector is p with a collector for one statement's analysis, when its guard
// fences server-made writes.
func (p *Policy) withCollector() (*Policy, *carrySet) {
	if !p.GuardCarries {
		return p, nil
	}
	c := *p
	c.carry = &carrySet{}
	return &c, c.carry
}

// guardNote completes the fix of a refusal the guard could turn into a fenced
// write: what to install, or why the installed guard does not.
func (p *Policy) guardNote() string {
	if p.GuardCarries {
		return ""
	}
	why := p.CarryMissing
	if why == "" {
		why = "the guard is not installed"
	}
	return "; or install the guard, which fences such writes with the statement's epoch instead (" + why + "): sqlfence guard --policy " +
		p.Source + " --apply --dsn <dsn>, and keep resolve: catalog"
}

// Carries reports whether the statement is sent with its epoch in the guard's marker.
func (d *Decision) Carries() bool { return len(d.carry) > 0 }

// carryText is the text of one execution of a carrying decision: the carried marker
// (with the epoch, and the claim when cc is not nil) before the text after the
// decision's own marker.
func (d *Decision) carryText(p *Policy, query string, epoch int64, cc *ClaimCheck) (string, *Error) {
	rest := query
	var names []string
	if d.act == ActRewrite {
		rest = d.sql[d.markerLen:]
		for _, t := range d.tables {
			names = append(names, t.Name)
			if t.base != "" {
				names = append(names, t.base)
			}
		}
	}
	var claim *guardmark.Claim
	if cc != nil {
		key, ok := claimKeyText(cc.value)
		if !ok {
			return "", &Error{Kind: KindRefused, Code: rulecode.ClaimUnusable, Table: d.carriedNames(), Epoch: epoch, Statement: query,
				Reason: fmt.Sprintf("the statement's triggers, foreign-key actions, rules or functions write protected tables, and the guard checks their claim by its key, which must be a string or an integer (not a %T)", cc.value),
				Fix:    "give WithClaim the job's key as a string or an integer"}
		}
		if cc.table.Schema == "" {
			// The guard's trigger runs with its own search_path (pg_catalog): it can
			// read the claim row only by a schema-qualified name.
			return "", &Error{Kind: KindRefused, Code: rulecode.ClaimUnusable, Table: d.carriedNames(), Epoch: epoch, Statement: query,
				Reason: "the statement's triggers, foreign-key actions, rules or functions write protected tables, and the guard checks their claim on claim table " + cc.tableSQL() + ", whose schema sqlfence does not know (the table is not listed under claims: in the policy, or did not exist when the connections were opened)",
				Fix:    "list the claim table under claims: in the policy, or give WithClaim its schema-qualified name (for example public.jobs)"}
		}
		claim = &guardmark.Claim{Table: cc.tableSQL(), KeyColumn: cc.key, EpochColumn: cc.epochCo, Key: key}
	}
	list := make([]guardmark.Carried, len(d.carry))
	for i, c := range d.carry {
		checks := string(guardmark.Repeatable)
		if c.table.Mode != ModeRepeatable {
			checks = string(guardmark.Strict)
		}
		if cc != nil {
			checks += string(guardmark.ClaimCheck)
			if c.table.Stale == StaleClaim {
				checks = string(guardmark.ClaimCheck)
			}
		}
		list[i] = guardmark.Carried{Name: c.name, Checks: checks}
	}
	return guardmark.CarryComment(epoch, p.CatalogVersion, names, list, claim) + rest, nil
}

// carriedNames names the carried relations' policy tables for messages.
func (d *Decision) carriedNames() string {
	var names []string
	for _, c := range d.carry {
		if n := c.table.QualifiedName.String(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// CarriedTable returns the policy's name for the carried relation the guard named
// (schema and name as the server reports them), or "".
func (d *Decision) CarriedTable(schema, name string) string {
	for _, c := range d.carry {
		t := c.table
		if c.name == name && (t.Schema == "" || t.Schema == schema) {
			return t.QualifiedName.String()
		}
	}
	if len(d.carry) > 0 {
		return d.carriedNames()
	}
	return ""
}

// claimKeyText is the job's key as the guard compares it, cast to the key column's
// type: strings and integers only.
func claimKeyText(v any) (string, bool) {
	switch k := v.(type) {
	case string:
		return k, true
	case int64:
		return strconv.FormatInt(k, 10), true
	case int:
		return strconv.Itoa(k), true
	case int32:
		return strconv.FormatInt(int64(k), 10), true
	case int16:
		return strconv.FormatInt(int64(k), 10), true
	case int8:
		return strconv.FormatInt(int64(k), 10), true
	case uint64:
		return strconv.FormatUint(k, 10), true
	case uint32:
		return strconv.FormatUint(uint64(k), 10), true
	case uint:
		return strconv.FormatUint(uint64(k), 10), true
	}
	return "", false
}
