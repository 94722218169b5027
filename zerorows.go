// The classification query built for a fenced write: how a 0-row result is explained
// (fenced, already written, or nothing matched). fence.go runs it.

package sqlfence

import (
	"fmt"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// classifier explains a write that affected no rows: it selects the highest epoch
// stored on the rows the statement's own predicate matches, without the fence.
type classifier struct {
	table *Table
	// query selects max(epoch column) over the rows the write would have touched;
	// args[i] is the index into the statement's arguments of the query's $i+1.
	query string
	args  []int
	// conflictOnly: an INSERT … ON CONFLICT DO UPDATE of literal rows with no WHERE of
	// its own. Zero rows can then only mean every row conflicted and was fenced; the
	// stored epoch is not known.
	conflictOnly bool
	// returning: the write has a RETURNING list, so through QueryContext an empty
	// result is the 0-row case; without one, Query never tells how many rows changed.
	returning bool
}

// classifier builds the query that explains a 0-row result from the statement's own
// pieces: its target, its FROM/USING list and its WHERE, with parameters renumbered
// so that only those the query uses are sent. A WITH clause is kept only when it is
// read-only; re-running a data-modifying CTE to explain a result would write twice.
func (r *rewriter) classifier(t *Table, qual string, deleted bool, w *pg.WithClause, lo, after int, target, from string, hasWhere bool, whereEnd int) *classifier {
	var b strings.Builder
	if w != nil {
		if !readOnlyWith(w) {
			return nil
		}
		b.WriteString(r.text(lo, after))
		b.WriteByte(' ')
	}
	col := sqlident.Quote(qual) + "." + sqlident.Quote(t.EpochColumn)
	fmt.Fprintf(&b, "SELECT %s FROM %s", classifierColumns(col, t, deleted), target)
	if from != "" {
		b.WriteString(", ")
		b.WriteString(from)
	}
	if hasWhere {
		b.WriteString(" WHERE (")
		b.WriteString(r.whereText(whereEnd))
		b.WriteString(")")
	}
	return renumber(t, b.String())
}

// whereText returns the condition that ends before token end: the text after the
// nearest WHERE at the same depth.
func (r *rewriter) whereText(end int) string {
	base := r.depth[end-1]
	for i := end - 1; i >= 0; i-- {
		if r.depth[i] < base {
			break
		}
		if r.depth[i] == base && r.toks[i].tok == pg.Token_WHERE {
			return r.text(i+1, end)
		}
	}
	return "false"
}

// epochMarker stands for the epoch parameter in a classifier query until renumber
// knows its number.
const epochMarker = "sqlfence_epoch_marker"

// classifierColumns is the select list of a classification query: the highest stored
// epoch and the number of matching rows the fence kept. Like the fence, it names the
// built-in aggregates and operators by schema, so that nothing the session created
// or put first in search_path changes how a 0-row result is explained.
func classifierColumns(col string, t *Table, deleted bool) string {
	return "pg_catalog.max(" + col + ")::bigint, pg_catalog.count(*) FILTER (WHERE " + fencedCondition(col, t, deleted) + ")"
}

// fencedCondition is the condition that, after a write ran, picks out the rows it matched
// but the fence kept: rows an UPDATE wrote now hold the epoch itself, so a newer one
// means fenced; rows a DELETE removed are gone, so every remaining match was fenced.
func fencedCondition(col string, t *Table, deleted bool) string {
	if deleted {
		return "NOT (" + col + " " + t.Mode.qualifiedOperator() + " " + epochMarker + ")"
	}
	return col + " " + catalogOperator(">") + " " + epochMarker
}

// renumber rewrites the parameters of query to $1..$n in order of first use and
// records which argument each one takes.
func renumber(t *Table, query string) *classifier {
	scan, err := pg.Scan(query)
	if err != nil {
		return nil
	}
	c := &classifier{table: t}
	seen := map[int]int{}
	for _, tk := range scan.Tokens {
		if tk.Token != pg.Token_PARAM {
			continue
		}
		n, err := strconv.Atoi(query[tk.Start+1 : tk.End])
		if err != nil || n < 1 {
			return nil
		}
		if _, ok := seen[n]; !ok {
			c.args = append(c.args, n-1)
			seen[n] = len(c.args)
		}
	}
	var b strings.Builder
	at := 0
	for _, tk := range scan.Tokens {
		var repl string
		switch {
		case tk.Token == pg.Token_PARAM:
			n, _ := strconv.Atoi(query[tk.Start+1 : tk.End])
			repl = "$" + strconv.Itoa(seen[n])
		case tk.Token == pg.Token_IDENT && query[tk.Start:tk.End] == epochMarker:
			// Only the marker the classifier wrote: a literal or a quoted name in the
			// application's text that happens to spell it is not an IDENT token.
			repl = "$" + strconv.Itoa(len(c.args)+1) + "::bigint"
		default:
			continue
		}
		b.WriteString(query[at:tk.Start])
		b.WriteString(repl)
		at = int(tk.End)
	}
	b.WriteString(query[at:])
	c.query = b.String()
	return c
}

func (c *classifier) setReturning(list []*pg.Node) {
	if c != nil {
		c.returning = len(list) > 0
	}
}
