// The classification query built for a fenced write: how a 0-row result is explained
// (fenced, already written, or nothing matched). explain.go reads its answer; a front runs it.

package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// classifier explains a write that affected no rows: it selects the highest epoch
// stored on the rows the statement's own predicate matches, without the fence.
type Classifier struct {
	table *Table
	// query selects max(epoch column) over the rows the write would have touched;
	// args[i] is the index into the statement's arguments of the query's $i+1.
	query string
	args  []int
	// conflictOnly: an INSERT … ON CONFLICT DO UPDATE of literal rows whose conflicting
	// rows cannot be read back (a constraint name or an index expression as the
	// target, DEFAULT or an expression as a key value): zero rows can then only mean
	// every row conflicted and the fence kept it, but not whether a newer claim or this
	// epoch wrote it. query is "" and the stored epoch is not known.
	conflictOnly bool
	// returning: the write has a RETURNING list, so through QueryContext an empty
	// result is the 0-row case; without one, Query never tells how many rows changed.
	returning bool
	// lazy: the decision was taken by shape (shape.go) and query is built on first
	// use, by analysing the statement's own text: a write that affected no rows is
	// the rare path, and a query built from the positions of another text would be
	// that text's.
	lazy  bool
	once  sync.Once
	built *Classifier
	// raw: the query before its parameters are renumbered, which waits for the
	// first use like a lazy classifier (numbered); query is "" until then.
	raw          string
	numberOnce   sync.Once
	numberedForm *Classifier
}

// numbered returns c with its query renumbered: c itself unless it waits for that
// (raw), then the classifier renumber builds, or nil when it cannot (which the
// classifier's builder made certain it can, see classifier).
func (c *Classifier) numbered() *Classifier {
	if c == nil || c.raw == "" {
		return c
	}
	c.numberOnce.Do(func() {
		if n := renumber(c.table, c.raw); n != nil {
			n.returning = c.returning
			c.numberedForm = n
		}
	})
	return c.numberedForm
}

// forShape returns the classifier of a decision taken by shape from a text whose
// classifier is c: whether there is one, which table and whether it is conflictOnly
// or reads RETURNING do not depend on literal values, the query does.
func (c *Classifier) forShape() *Classifier {
	if c == nil || c.conflictOnly {
		return c // nothing of the text in it
	}
	return &Classifier{table: c.table, returning: c.returning, lazy: true}
}

// resolve returns the classifier with its query: c itself, or for a lazy one the
// classifier a full analysis of query (the text the decision was taken for) builds,
// provided that analysis sends the same text as the shape did (sent); nil otherwise.
func (c *Classifier) resolve(policy *Policy, query, sent string) *Classifier {
	if !c.lazy {
		return c.numbered()
	}
	c.once.Do(func() {
		d := Analyze(policy, query)
		if d.act == ActRewrite && d.sql == sent && d.zeroRows != nil && d.zeroRows.table == c.table &&
			!d.zeroRows.conflictOnly && d.zeroRows.returning == c.returning {
			c.built = d.zeroRows.numbered()
		}
	})
	return c.built
}

// classifier builds the query that explains a 0-row result from the statement's own
// pieces: its target, its FROM/USING list and its WHERE, with parameters renumbered
// so that only those the query uses are sent. A WITH clause is kept only when it is
// read-only; re-running a data-modifying CTE to explain a result would write twice.
func (r *rewriter) classifier(t *Table, qual string, deleted bool, w *pg.WithClause, lo, after int, target, from string, hasWhere bool, whereEnd int) *Classifier {
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
	q := b.String()
	if strings.Count(q, epochMarker) == 1 && plainParams(r.sql, r.toks) {
		// Renumbering scans the query again; a 0-row write is the rare path, so it
		// waits for the first use (numbered). Whether there is a classifier is part
		// of the decision and is known now: renumber refuses only a query in which
		// the marker is not exactly one identifier — here the text holds it once,
		// where the classifier wrote it, between tokens of complete token ranges, so
		// it is one IDENT — or a parameter it cannot read, and every parameter token
		// of the statement is $ and at most 9 digits, numbered from $1 (the analysis
		// refused $0).
		return &Classifier{table: t, raw: q}
	}
	return renumber(t, q)
}

// plainParams reports whether every parameter token of the statement is $ and 1 to
// 9 digits, as strconv.Atoi reads it.
func plainParams(sql string, toks []token) bool {
	for _, t := range toks {
		if t.tok != pg.Token_PARAM {
			continue
		}
		digits := sql[t.start+1 : t.end]
		if len(digits) == 0 || len(digits) > 9 {
			return false
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return false
			}
		}
	}
	return true
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
	return col + " " + CatalogOperator(">") + " " + epochMarker
}

// renumber rewrites the parameters of query to $1..$n in order of first use and
// records which argument each one takes.
func renumber(t *Table, query string) *Classifier {
	toks, err := pgtree.ScanTokens(query, nil)
	if err != nil {
		return nil
	}
	c := &Classifier{table: t}
	seen := map[int]int{}
	markers := 0
	for _, tk := range toks {
		if tk.Kind == pg.Token_IDENT && query[tk.Start:tk.End] == epochMarker {
			markers++
		}
		if tk.Kind != pg.Token_PARAM {
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
	if markers != 1 {
		// The classifier writes the marker once; more means the statement's own text
		// names a column sqlfence_epoch_marker, which would become the epoch too.
		return nil
	}
	var b strings.Builder
	at := 0
	for _, tk := range toks {
		var repl string
		switch {
		case tk.Kind == pg.Token_PARAM:
			n, _ := strconv.Atoi(query[tk.Start+1 : tk.End])
			repl = "$" + strconv.Itoa(seen[n])
		case tk.Kind == pg.Token_IDENT && query[tk.Start:tk.End] == epochMarker:
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

func (c *Classifier) setReturning(list []*pg.Node) {
	if c != nil {
		c.returning = len(list) > 0
	}
}

// conflictClassifier explains an INSERT … ON CONFLICT (cols) DO UPDATE of VALUES rows:
// the rows it matches are the existing rows whose conflict columns hold the values
// the statement inserts for them, so the query selects those (and the DO UPDATE's own
// WHERE, when it reads only the table). A 0-row result is then explained like an
// UPDATE's: a newer epoch is a fence, this epoch in strict mode "already written",
// no match an ordinary result; with exact accounting, the matched rows still holding
// a newer epoch after the write are the ones it fenced. When the key values cannot be
// read back without running anything, the classifier is conflictOnly, or nil when
// the statement has a DO UPDATE … WHERE of its own.
func (r *rewriter) conflictClassifier(t *Table, s *pg.InsertStmt, cols []string, into, open, body, hi, base int, hasWhere bool, whereEnd int) *Classifier {
	fallback := &Classifier{table: t, conflictOnly: true, returning: len(s.ReturningList) > 0}
	if hasWhere {
		// With a DO UPDATE … WHERE of its own, 0 rows may be that condition's doing:
		// without the conflicting rows, nothing can be said.
		fallback = nil
	}
	inf := s.OnConflictClause.GetInfer()
	if inf == nil || inf.Conname != "" || inf.WhereClause != nil || len(inf.IndexElems) == 0 || open < 0 {
		return fallback
	}
	var keys []int // index into cols of each conflict column
	var names []string
	qual := sqlident.Quote(qualifier(s.Relation)) + "."
	for _, n := range inf.IndexElems {
		ie := n.GetIndexElem()
		if ie == nil || ie.Name == "" || ie.Expr != nil {
			return fallback
		}
		k := slices.Index(cols, ie.Name)
		if k < 0 {
			return fallback // the key comes from a column default
		}
		keys = append(keys, k)
		names = append(names, qual+sqlident.Quote(ie.Name))
	}
	i := body
	for i < hi && r.toks[i].tok == pg.Token_ASCII_40 && r.pair[i] > 0 {
		i++
	}
	if i >= hi || r.toks[i].tok != pg.Token_VALUES {
		return fallback
	}
	i++
	var rows []string
	for _, row := range s.SelectStmt.GetSelectStmt().GetValuesLists() {
		items := row.GetList().GetItems()
		if i >= hi || r.toks[i].tok != pg.Token_ASCII_40 || r.pair[i] < 0 {
			return fallback
		}
		var pieces [][2]int // token ranges of the row's values
		from, depth := i+1, r.depth[i]+1
		for j := i + 1; j <= r.pair[i]; j++ {
			if j == r.pair[i] || r.depth[j] == depth && r.toks[j].tok == pg.Token_ASCII_44 {
				pieces = append(pieces, [2]int{from, j})
				from = j + 1
			}
		}
		if len(pieces) != len(cols) || len(items) < len(cols) {
			return fallback
		}
		vals := make([]string, len(keys))
		for x, k := range keys {
			if !literalValue(items[k]) || pieces[k][0] >= pieces[k][1] {
				return fallback
			}
			vals[x] = r.text(pieces[k][0], pieces[k][1])
		}
		if len(keys) == 1 {
			rows = append(rows, vals[0])
		} else {
			rows = append(rows, "("+strings.Join(vals, ", ")+")")
		}
		i = r.pair[i] + 1
		if i < hi && r.toks[i].tok == pg.Token_ASCII_44 {
			i++
		}
	}
	lhs := names[0]
	if len(names) > 1 {
		lhs = "(" + strings.Join(names, ", ") + ")"
	}
	col := qual + sqlident.Quote(t.EpochColumn)
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s WHERE %s IN (%s)", classifierColumns(col, t, false), r.text(into+1, open), lhs, strings.Join(rows, ", "))
	if hasWhere {
		b.WriteString(" AND (")
		b.WriteString(r.whereText(whereEnd))
		b.WriteString(")")
	}
	c := renumber(t, b.String())
	if c == nil {
		return fallback
	}
	c.returning = len(s.ReturningList) > 0
	return c
}

// literalValue reports a value that means the same in the classification query as in
// the INSERT: a constant or a parameter, possibly cast. Anything else could be
// volatile (nextval, random) or read something the query does not have.
func literalValue(n *pg.Node) bool {
	switch v := n.GetNode().(type) {
	case *pg.Node_AConst, *pg.Node_ParamRef:
		return true
	case *pg.Node_TypeCast:
		return v.TypeCast.Arg != nil && literalValue(v.TypeCast.Arg)
	}
	return false
}

// insertColumns returns an INSERT's column names, or nil when one assigns a field or
// an element (col.f, col[1]) rather than a column.
func insertColumns(cols []*pg.Node) []string {
	names := make([]string, 0, len(cols))
	for _, n := range cols {
		rt := n.GetResTarget()
		if rt == nil || len(rt.Indirection) > 0 {
			return nil
		}
		names = append(names, rt.Name)
	}
	return names
}

// refersTo reports whether an expression names a column of the relation rel
// (rel.col or rel.*).
func refersTo(n *pg.Node, rel string) bool {
	found := false
	pgtree.Walk(n.ProtoReflect(), func(m protoreflect.Message) bool {
		if c, ok := m.Interface().(*pg.ColumnRef); ok && len(c.Fields) > 1 && c.Fields[0].GetString_().GetSval() == rel {
			found = true
		}
		return !found
	})
	return found
}

// Query returns the classification query and, for each of its parameters but the
// last (the epoch), the index of the statement's argument it takes; "" when the
// statement has none that can be built ahead (conflictOnly, or decided by shape).
func (c *Classifier) Query() (string, []int) {
	if c = c.numbered(); c == nil || c.query == "" {
		return "", nil
	}
	return c.query, slices.Clone(c.args)
}
