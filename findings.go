// What the catalog holds that makes sqlfence refuse writes whose text does not show
// why (CheckCatalog, CatalogFinding), for `sqlfence guard`.

package sqlfence

import (
	"context"

	"github.com/sqlfence/sqlfence/internal/engine"
)

// CheckCatalog reads the catalog as resolve: catalog does and returns what in it
// makes the driver refuse writes whose text does not show why: foreign keys whose
// actions cascade into protected tables, triggers and rules whose code writes
// protected tables (or cannot be read), and triggers and rules on protected tables
// that can change or redirect their rows. query runs one query with positional
// arguments and returns every row (int8 as int64, text as string, bool as bool).
// `sqlfence guard` reports these after installing.
func (p *Policy) CheckCatalog(ctx context.Context, query func(ctx context.Context, sql string, args ...any) ([][]any, error)) ([]CatalogFinding, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	r, err := engine.Resolve(ctx, query, c)
	if err != nil {
		return nil, err
	}
	fs := r.Findings()
	out := make([]CatalogFinding, len(fs))
	for i, f := range fs {
		out[i] = CatalogFinding(f)
	}
	return out, nil
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
