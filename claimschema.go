// The claim table's schema: the claim check names the claim table schema-qualified,
// resolved once in a fresh session, so that no session's search_path or temporary
// table changes which table it reads.

package sqlfence

import (
	"context"
	"fmt"
	"sync"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// claimSchemaSQL reads the schema an unqualified relation name resolves to. It runs
// on a connection the application has not used yet: a fresh session has no temporary
// schema (pg_temp is searched only once the session created a temporary object) and
// the search_path the role and the DSN give it, not one a statement set.
const claimSchemaSQL = `SELECT n.nspname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)`

// claimSchemas holds the schemas the policy's unqualified claim tables resolved to.
// Shared by a connector's enforcers (it is the connector's, through connectorConfig).
type claimSchemas struct {
	mu     sync.Mutex
	schema map[string]string // claim table name → schema
}

// resolve reads, over a connection no statement has run on yet, the schema of each
// unqualified claim table of p that is not known yet, and reports whether all are
// known now. A table that does not exist yet is tried again at the next connection.
func (s *claimSchemas) resolve(ctx context.Context, q engine.Querier, p *engine.Policy) (known bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range p.Claims {
		if c.Schema != "" || s.schema[c.Name] != "" {
			continue
		}
		rows, err := q(ctx, claimSchemaSQL, sqlident.Quote(c.Name))
		if err != nil {
			return false, fmt.Errorf("sqlfence: reading the schema of claim table %s: %w", c.QualifiedName, err)
		}
		if len(rows) == 1 {
			if ns, ok := rows[0][0].(string); ok && ns != "" {
				if s.schema == nil {
					s.schema = map[string]string{}
				}
				s.schema[c.Name] = ns
			}
		}
	}
	for _, c := range p.Claims {
		if c.Schema == "" && s.schema[c.Name] == "" {
			return false, nil // not there yet: tried again on the next connection
		}
	}
	return true, nil
}

// qualify returns the claim the check uses: a qualified claim table as it is; an
// unqualified one in the schema the policy names for it, or else the schema it
// resolved to in a fresh session. A claim table the policy does not list, or one
// that did not exist when the connections were opened, stays as written: its name
// resolves through the session's search_path (docs/concepts.md, "Claim-checked writes", says so).
func (s *claimSchemas) qualify(cc *engine.ClaimCheck, p *engine.Policy) *engine.ClaimCheck {
	if cc == nil {
		return nil
	}
	t := cc.Table()
	if t.Schema != "" || t.Name == "" {
		return cc
	}
	for _, c := range p.Claims {
		if c.Name == t.Name && c.Schema != "" {
			return cc.InSchema(c.Schema)
		}
	}
	if s == nil {
		return cc
	}
	s.mu.Lock()
	ns := s.schema[t.Name]
	s.mu.Unlock()
	if ns != "" {
		return cc.InSchema(ns)
	}
	return cc
}
