// The policy checked against the database before the first statement: every
// protected and claim table exists, once on the search path, with a bigint NOT NULL
// epoch column; each problem with its rule code, the policy's line and the fix.

package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// Problem is one way the policy does not match the database.
type Problem struct {
	Code    string // the rule code (internal/rulecode)
	Table   string // the policy's name for the table
	Line    int    // the policy line, 0 when unknown
	Message string // what is wrong, and the fix
}

// CatalogError is Resolve's error when the policy does not match the database, or
// the catalog cannot be read: every problem, so that one start shows them all. A
// connector that gets it runs no statement (fail closed: a misspelled table would
// otherwise be a table nobody protects).
type CatalogError struct {
	Source   string
	Problems []Problem
}

func (e *CatalogError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sqlfence: policy %s does not match the database (resolve: catalog), so no statement runs on this connector:", e.Source)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// String is the problem as one line: [code] line N: message.
func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("[%s] line %d: %s", p.Code, p.Line, p.Message)
	}
	return fmt.Sprintf("[%s] %s", p.Code, p.Message)
}

// policyCheck collects the problems Resolve finds.
type policyCheck struct {
	ctx        context.Context
	query      Querier
	source     string
	problems   []Problem
	searchPath []string // read on first need
}

func (c *policyCheck) add(code string, name QualifiedName, line int, format string, args ...any) {
	c.problems = append(c.problems, Problem{Code: code, Table: name.String(), Line: line, Message: fmt.Sprintf(format, args...)})
}

// readError is a failed catalog query: a role that may not read the catalog gets
// its own problem and fix; anything else (the database not up yet) is returned as
// is, so that the next connection tries again.
func (c *policyCheck) readError(what string, err error) error {
	var st interface{ SQLState() string }
	if errors.As(err, &st) && st.SQLState() == "42501" {
		return &CatalogError{Source: c.source, Problems: []Problem{{Code: rulecode.CatalogUnreadable, Message: fmt.Sprintf(
			"the role cannot read the catalog (%s: %v), and resolve: catalog (the default) reads it before the first statement: "+
				"give the role back read access to pg_catalog (every role has it unless it was revoked: GRANT SELECT ON ALL TABLES IN SCHEMA pg_catalog TO <role>), "+
				"or choose resolve: none in the policy and install the guard (sqlfence guard --apply), which rejects in the database the writes the driver then cannot see", what, err)}}}
	}
	return fmt.Errorf("sqlfence: resolve: catalog: %s: %w", what, err)
}

// missing records a policy table the database does not have, with the closest
// names it does have.
func (c *policyCheck) missing(kind string, name QualifiedName, line int) error {
	similar, err := pgcatalog.Similar(c.ctx, c.query, name.Schema, name.Name)
	if err != nil {
		return c.readError("looking for names like "+name.String(), err)
	}
	if name.Schema == "" {
		// An unqualified entry: suggest unqualified names, each once.
		for i, s := range similar {
			similar[i] = s[strings.IndexByte(s, '.')+1:]
		}
		similar = slices.Compact(similar)
	}
	hint := ""
	if len(similar) > 0 {
		hint = " (did you mean " + strings.Join(similar, " or ") + "?)"
	}
	where := "in any schema"
	if name.Schema != "" {
		where = "in schema " + name.Schema
	}
	c.add(rulecode.PolicyTableMissing, name, line, "the %s %s does not exist %s%s: fix its name in the policy, or create the table before the application starts",
		kind, name, where, hint)
	return nil
}

// ambiguous records an unqualified entry that names tables in two or more schemas
// of the search path: which one the application's statements write depends on the
// search path of the moment, and the policy should say which it means.
func (c *policyCheck) ambiguous(name QualifiedName, line int, rels []pgcatalog.Relation) error {
	if name.Schema != "" {
		return nil
	}
	var schemas []string
	for _, r := range rels {
		if r.Depth == 0 && r.Name == name.Name && !slices.Contains(schemas, r.Schema) {
			schemas = append(schemas, r.Schema)
		}
	}
	if len(schemas) < 2 {
		return nil
	}
	if c.searchPath == nil {
		sp, err := pgcatalog.SearchPath(c.ctx, c.query)
		if err != nil {
			return c.readError("reading the search path", err)
		}
		c.searchPath = append(sp, "") // non-nil: read
	}
	var on []string
	for _, s := range c.searchPath {
		if slices.Contains(schemas, s) {
			on = append(on, sqlident.QuoteQualified(s, name.Name))
		}
	}
	if len(on) < 2 {
		return nil
	}
	c.add(rulecode.PolicyNameAmbiguous, name, line, "the unqualified name %s matches %s, all on the search path (%s): qualify it in the policy (name: %s), one entry per table meant",
		name, strings.Join(on, " and "), strings.Join(c.searchPath[:len(c.searchPath)-1], ", "), on[0])
	return nil
}

// epochColumn records an epoch column the fence cannot work with, and reports
// whether r's is one it can.
func (c *policyCheck) epochColumn(name QualifiedName, line int, r pgcatalog.Relation, column string) bool {
	target := sqlident.QuoteQualified(r.Schema, r.Name)
	col := sqlident.Quote(column)
	switch {
	case r.EpochType == "":
		c.add(rulecode.PolicyEpochColumn, name, line, "%s has no epoch column %s: ALTER TABLE %s ADD COLUMN %s bigint NOT NULL DEFAULT 0",
			target, col, target, col)
	case r.EpochType != "bigint":
		c.add(rulecode.PolicyEpochColumn, name, line, "%s.%s is %s; the epoch column must be bigint: ALTER TABLE %s ALTER COLUMN %s TYPE bigint",
			target, col, r.EpochType, target, col)
	case !r.IsView() && !r.EpochNotNull:
		c.add(rulecode.PolicyEpochColumn, name, line, "%s.%s is nullable, and a NULL epoch fences every write to its row forever (NULL < $e is never true): "+
			"UPDATE %s SET %s = 0 WHERE %s IS NULL; ALTER TABLE %s ALTER COLUMN %s SET NOT NULL",
			target, col, target, col, col, target, col)
	default:
		return true
	}
	return false
}
