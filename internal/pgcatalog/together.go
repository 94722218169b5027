// The catalog read as one statement: every query of a read sent together, so that
// they cost one round trip and see one snapshot of the catalog.

package pgcatalog

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Read is one query of a catalog read: its own text (with $1…$n for Args) and how
// many columns it returns. Reads run it beside the others.
type Read struct {
	What    string // names it in errors
	SQL     string
	Args    []any
	Columns int
	// Order, when not "", is the order its rows come in, over the columns named
	// c1…cn ("c5, c2, c3"): a query's own ORDER BY does not survive being one of
	// many.
	Order string
}

// Reads are queries run as one statement. Why one statement: PostgreSQL takes one
// snapshot per statement, whatever the isolation level, so the queries see one
// state of the catalog — DDL another session commits while they run is in all of
// their answers or in none — and the read costs one round trip, on any QueryFunc
// (database/sql, pgx, the command's connection), with no transaction of its own to
// begin or end. (Two things in the catalog's answers are not of that snapshot but
// of the moment each is computed: what pg_get_functiondef, pg_get_viewdef,
// pg_get_ruledef, pg_get_indexdef and format_type read through the server's caches.
// Those can only be newer, and a change that makes them newer moved the catalog
// version or the fingerprint after the snapshot, so the next check reads the
// catalog again.)
type Reads struct{ list []Read }

// Add adds r and returns its index, for Ref and for Run's answer.
func (rs *Reads) Add(r Read) int {
	rs.list = append(rs.list, r)
	return len(rs.list) - 1
}

// Ref is how a later read's SQL names read i's rows: a relation with columns c1…cn.
func (rs *Reads) Ref(i int) string { return "sqlfence_read_" + strconv.Itoa(i) }

// At is read i.
func (rs *Reads) At(i int) Read { return rs.list[i] }

// Len is the number of reads added.
func (rs *Reads) Len() int { return len(rs.list) }

// placeholder finds the $n of a read's text: the catalog's queries hold no other $.
var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// SQL is the one statement and its arguments: each read a CTE named Ref(i), its
// rows aggregated into one JSON array of arrays per read.
func (rs *Reads) SQL() (string, []any) {
	var b strings.Builder
	var args []any
	b.WriteString("WITH ")
	for i, r := range rs.list {
		if i > 0 {
			b.WriteString(",\n")
		}
		base := len(args)
		text := placeholder.ReplaceAllStringFunc(r.SQL, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			return "$" + strconv.Itoa(base+n)
		})
		args = append(args, r.Args...)
		fmt.Fprintf(&b, "%s (%s) AS (%s)", rs.Ref(i), columns(r.Columns, ""), text)
	}
	b.WriteString("\nSELECT ")
	for i, r := range rs.list {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		order := ""
		if r.Order != "" {
			order = " ORDER BY " + r.Order
		}
		fmt.Fprintf(&b, "(SELECT pg_catalog.json_agg(pg_catalog.json_build_array(%s)%s)::pg_catalog.text FROM %s x)",
			columns(r.Columns, "x."), order, rs.Ref(i))
	}
	return b.String(), args
}

func columns(n int, prefix string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = prefix + "c" + strconv.Itoa(i+1)
	}
	return strings.Join(parts, ", ")
}

// Run sends the reads as one statement and returns each read's rows as the query
// alone returns them: int8 as int64, text as string, bool as bool, NULL as nil. A
// database whose text is not UTF-8 (SQL_ASCII holding other bytes), which JSON
// cannot carry unchanged, is read query by query instead: each query then sees a
// snapshot of its own, as on a server that took them one by one.
func (rs *Reads) Run(ctx context.Context, query QueryFunc) ([][][]any, error) {
	if len(rs.list) == 0 {
		return nil, nil
	}
	sql, args := rs.SQL()
	rows, err := query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 || len(rows[0]) != len(rs.list) {
		return nil, fmt.Errorf("pgcatalog: the catalog read returned %d rows, want one of %d columns", len(rows), len(rs.list))
	}
	out := make([][][]any, len(rs.list))
	for i, v := range rows[0] {
		r := rs.list[i]
		var text string
		switch x := v.(type) {
		case nil:
			continue // no rows
		case string:
			text = x
		case []byte:
			text = string(x)
		default:
			return nil, fmt.Errorf("pgcatalog: reading %s: the catalog read returned a %T", r.What, v)
		}
		if !utf8.ValidString(text) {
			return rs.oneByOne(ctx, query)
		}
		if out[i], err = decodeRows(text, r.Columns); err != nil {
			return nil, fmt.Errorf("pgcatalog: reading %s: %w", r.What, err)
		}
	}
	return out, nil
}

// oneByOne runs each read alone; a read that names another's rows (Ref) cannot be.
func (rs *Reads) oneByOne(ctx context.Context, query QueryFunc) ([][][]any, error) {
	out := make([][][]any, len(rs.list))
	for i, r := range rs.list {
		if strings.Contains(r.SQL, "sqlfence_read_") {
			return nil, fmt.Errorf("pgcatalog: reading %s: the database's text is not UTF-8", r.What)
		}
		rows, err := query(ctx, r.SQL, r.Args...)
		if err != nil {
			return nil, fmt.Errorf("pgcatalog: reading %s: %w", r.What, err)
		}
		out[i] = rows
	}
	return out, nil
}

// decodeRows reads a JSON array of rows of n values each.
func decodeRows(text string, n int) ([][]any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var raw [][]any
	if err := d.Decode(&raw); err != nil {
		return nil, err
	}
	for _, row := range raw {
		if len(row) != n {
			return nil, fmt.Errorf("a row of %d columns, want %d", len(row), n)
		}
		for j, v := range row {
			switch x := v.(type) {
			case json.Number:
				i, err := strconv.ParseInt(string(x), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("column %d: %w", j+1, err)
				}
				row[j] = i
			case string, bool, nil:
			default:
				return nil, fmt.Errorf("column %d is a %T", j+1, v)
			}
		}
	}
	return raw, nil
}
