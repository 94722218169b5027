// Identifiers in the claim helpers' SQL: quoted and checked once, when a Jobs or Ledger
// is made.

package claim

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// name is a table, sequence or column name as PostgreSQL resolves it, kept
// both as parts (for messages) and as SQL text with every part quoted.
//
// Names in a config are written the way they are written in SQL and in the
// sqlfence policy file: unquoted parts fold to lower case, "Quoted" parts are
// exact. The SQL text quotes every part, so a name can never change the
// statement it is spliced into, whatever it contains.
type name struct {
	parts []string
	sql   string
}

func (n name) String() string { return strings.Join(n.parts, ".") }

// last is the unqualified name, for deriving index names.
func (n name) last() string { return n.parts[len(n.parts)-1] }

// parseName reads a possibly qualified name; maxParts is 1 for a column and
// 2 for a relation (schema.name).
func parseName(what, s string, maxParts int) (name, error) {
	q, err := sqlfence.ParseQualifiedName(s)
	if err == nil && maxParts == 1 && q.Schema != "" {
		err = errors.New(`a column name is a single identifier (quote it, '"a.b"', if the dot is part of the name)`)
	}
	if err != nil {
		return name{}, fmt.Errorf("claim [SF617]: bad %s %q: %v", what, s, err)
	}
	parts := []string{q.Name}
	if q.Schema != "" {
		parts = []string{q.Schema, q.Name}
	}
	return name{parts: parts, sql: pgx.Identifier(parts).Sanitize()}, nil
}

// indexName derives an index name from a table name and a suffix, short
// enough that PostgreSQL does not truncate it (two tables whose truncated
// index names collided would share an IF NOT EXISTS index).
func indexName(table name, suffix string) string {
	base := sqlident.Truncate(table.last())
	for len(base)+len(suffix) > sqlident.MaxBytes {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	return pgx.Identifier{base + suffix}.Sanitize()
}
