// The parser's bounds: what the C parser can take without exhausting its stack,
// proven from the text's tokens before any parse.

package pgtree

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// The bounds on what pg_query is given, and the argument that they keep its C stack
// from overflowing: an overflow kills the process, with no chance to recover.
//
// # The parser's stack
//
// pg_query's grammar is an LALR automaton with its own heap stack (bison, at most
// 10000 entries, "memory exhausted" past that), so parsing itself never exhausts the
// C stack. What recurses is the code that walks the finished tree: the protobuf
// output behind Parse (176 bytes of C stack per nested protobuf message, whatever the
// node), Deparse (944 bytes a message) and the JSON dump of a PL/pgSQL body (about
// 200 bytes per nested statement). A left-deep tree (1+1+…, x::int::int…, JOIN after
// JOIN, UNION after UNION) costs the automaton no stack at all, so its depth is
// bounded by nothing but the input. Measured in child processes (TestStackMeasure in
// stack_test.go) on an 8 MiB stack, Parse dies at 47,620 nested messages (23,800
// chained operators, for every chainable construct alike) and Deparse at 8,879;
// right-nested shapes (NOT NOT …, parentheses, subqueries, CASE, PL/pgSQL blocks) run
// into the grammar's own limit first. On 2 MiB, Parse dies at 11,870 messages; PL/pgSQL
// nesting needs a stack as small as 256 KiB to crash at all (at 1,310 nested blocks).
//
// # The measure
//
// Measure computes, in one pass over the scanner's tokens, a number M with
//
//	depth(tree) ≤ 2·M
//
// where depth is the nesting of protobuf messages in the parse tree (a node is at most
// two: the Node wrapper and the node). Bounds refuses text with M > Limit. The text is
// cut into levels: the whole text, and every ( … ), [ … ], CASE … END and BEGIN ATOMIC
// … END (in a PL/pgSQL body also BEGIN … END, IF … END IF, LOOP … END LOOP and CASE …
// END CASE). Within a level, statements end at semicolons, list items at commas (and
// at WHEN, THEN and ELSE in a CASE), segments at AND and OR. Per level:
//
//	D(level) = cost + max over statements S of
//	           setops(S) + max over items I of S of
//	               item(I) + max over segments G of I of (seg(G) + max D(sublevel in G))
//
// cost is LevelCost (TopCost for the whole text), setops counts UNION, INTERSECT and
// EXCEPT, seg counts the expression operators in the segment (isSegmentToken), and item
// counts every other token of the item except identifiers, constants, parameters and
// dots, plus one for its first AND and one for its first OR. M is D of the whole text.
// Every quantity only grows while a level is open, so the running value of the
// innermost level plus what its enclosing levels add (base) is a lower bound of M that
// reaches M at the end: the check stops at the first token past the limit.
//
// Why M bounds the depth: take any path from the root of the tree to a leaf, and the
// nodes on it that each level's own tokens made (a node belongs to the innermost level
// holding all of its tokens). Every construct that can nest without limit at one level
// is made by a token the measure counts on that path:
//
//   - Binary operators (+ - * / % ^ comparisons, any Op, ::, COLLATE, AT TIME ZONE,
//     IS …, ISNULL, NOTNULL, LIKE, ILIKE, SIMILAR TO, BETWEEN, IN, OVERLAPS) nest
//     left-deep (1+1+1) or, through the right operand, right-deep; prefix operators
//     (NOT NOT …, - - …) and postfix ones (IS NULL IS NULL, ::int::int) nest by
//     themselves. Each such node has its operator token, and all of them bind tighter
//     than AND and OR, so a node made by one never spans an AND or an OR of its level:
//     all the operator nodes on the path come from one segment, whose seg counts them.
//     BETWEEN's own AND is not a segment boundary (the first AND after BETWEEN).
//   - AND and OR: the grammar flattens a chain of the same operator into one node
//     (makeAndExpr, makeOrExpr), and precedence keeps an OR from being an operand of an
//     AND without parentheses, so a path meets at most one OR node and one AND node of
//     a boolean expression; nodes between clauses of a statement are siblings, so at
//     one level a path meets one boolean expression. item counts the first AND and OR.
//   - JOIN chains (left-deep, or right-deep as a JOIN b JOIN c ON … ON …), and
//     everything else made by a keyword or punctuation (statements, clauses, ON, USING,
//     WITH, LATERAL, ARRAY, EXISTS, ROW, …) are counted in item, which segments do not
//     reset. Set operations nest left-deep across the commas of their arms' select
//     lists, so setops is not reset by commas.
//   - A comma (or a semicolon) ends the item: nodes that span a comma of their level
//     are list owners — statements and their wrappers (RawStmt, EXPLAIN, CREATE TABLE
//     AS, PREPARE, INSERT … SELECT, ON CONFLICT, MERGE WHEN, WITH), a bounded chain
//     that cost covers — and the set operations setops counts; list items are siblings.
//     Inside a CASE, the WHEN, THEN and ELSE parts are siblings under one CaseExpr and
//     CaseWhen, which cost covers.
//   - Brackets: a level adds cost for the nodes its brackets make with no counted
//     token (a function call, SubLink, A_Indirection and A_Indices of a subscript, a
//     RangeFunction and its List, an implicit ROW, the SelectStmt and ResTarget of a
//     subquery whose SELECT sits before a comma: at most 4 nodes, 8 messages; LevelCost
//     is 6) and the depth of its content.
//   - Identifiers, constants, parameters and dots make leaves (ColumnRef and its
//     Strings, A_Const, a typed literal's TypeCast and TypeName) and flat lists (a.b.c,
//     (x).f[1].g); with RawStmt, the statement chain and the outermost leaf they fit in
//     TopCost.
//
// A PL/pgSQL body is measured with its statement levels, each LevelCost: the dump of
// its tree recurses once per nested statement, and the expressions in it are parsed on
// their own (sqlfence measures each again before its own Parse).
//
// The argument is checked, not just made: FuzzParserBounds builds deep and wide
// inputs of every shape above and fails if a tree is deeper than 2·M, and
// TestMeasureBoundsShapes does the same for each construct.
const (
	// Limit is the largest measure sqlfence parses: a tree at most 2,000 messages
	// deep, a 24th of what 8 MiB of stack holds (6th of 2 MiB, the smallest default
	// thread stack of glibc), and below protobuf's own 10,000. About 1,000 chained
	// operators, or 160 levels of parentheses.
	Limit = 1000
	// OutputLimit is the limit for the text the rewrite produces from text within
	// Limit: the fence adds a parenthesis level, an AND and a short expression to at
	// most two paths (the top statement and one data-modifying WITH), less than 64.
	OutputLimit = Limit + 64
	// TopCost and LevelCost are the measure's constants per text and per level.
	TopCost   = 16
	LevelCost = 6
)

type levelKind uint8

const (
	levelTop levelKind = iota
	levelParen
	levelBracket
	levelCase  // CASE … END, and CASE … END CASE in PL/pgSQL
	levelBegin // BEGIN ATOMIC … END, and a PL/pgSQL block
	levelIf    // PL/pgSQL IF … END IF
	levelLoop  // PL/pgSQL [WHILE …|FOR …] LOOP … END LOOP
)

type level struct {
	kind   levelKind
	base   int // what the enclosing levels add to this one's depth
	stmts  int // largest value of a finished statement
	setops int
	best   int // largest value of a finished item of this statement
	item   int
	segs   int // largest seg+inner of a finished segment of this item
	seg    int
	inner  int  // deepest finished sublevel of this segment
	and    bool // this item has had a boolean AND (counted once)
	or     bool
	// between: the next AND belongs to BETWEEN.
	between bool
}

func (l *level) cost() int {
	if l.kind == levelTop {
		return TopCost
	}
	return LevelCost
}

// value is the level's D without its cost, as far as the text has gone.
func (l *level) value() int {
	return max(l.stmts, l.setops+max(l.best, l.item+max(l.segs, l.seg+l.inner)))
}

func (l *level) endSegment() {
	l.segs = max(l.segs, l.seg+l.inner)
	l.seg, l.inner, l.between = 0, 0, false
}

func (l *level) endItem() {
	l.endSegment()
	l.best = max(l.best, l.item+l.segs)
	l.item, l.segs, l.and, l.or = 0, 0, false, false
}

func (l *level) endStatement() {
	l.endItem()
	l.stmts = max(l.stmts, l.setops+l.best)
	l.setops, l.best = 0, 0
}

// isSegmentToken reports the expression operators: each binds tighter than AND and OR.
func isSegmentToken(t pg.Token) bool {
	switch t {
	case pg.Token_Op, pg.Token_ASCII_43, pg.Token_ASCII_45, pg.Token_ASCII_42, pg.Token_ASCII_47,
		pg.Token_ASCII_37, pg.Token_ASCII_94, pg.Token_ASCII_60, pg.Token_ASCII_62, pg.Token_ASCII_61,
		pg.Token_LESS_EQUALS, pg.Token_GREATER_EQUALS, pg.Token_NOT_EQUALS, pg.Token_TYPECAST,
		pg.Token_NOT, pg.Token_NOT_LA, pg.Token_IS, pg.Token_ISNULL, pg.Token_NOTNULL,
		pg.Token_LIKE, pg.Token_ILIKE, pg.Token_SIMILAR, pg.Token_IN_P, pg.Token_COLLATE,
		pg.Token_AT, pg.Token_OVERLAPS:
		return true
	}
	return false
}

// isLeafToken reports the tokens that make leaves and flat lists only.
func isLeafToken(t pg.Token) bool {
	switch t {
	case pg.Token_IDENT, pg.Token_UIDENT, pg.Token_FCONST, pg.Token_SCONST, pg.Token_USCONST,
		pg.Token_BCONST, pg.Token_XCONST, pg.Token_ICONST, pg.Token_PARAM, pg.Token_ASCII_46:
		return true
	}
	return false
}

// BoundsError is text past the parser's bounds.
type BoundsError struct {
	Offset  int // byte offset of the first token past the limit
	Measure int // the measure there (the whole text's is at least this)
	Limit   int
}

func (e *BoundsError) Error() string {
	return fmt.Sprintf("nested or chained too deeply for the parser (a depth measure over %d)", e.Limit)
}

// Measure returns the measure M of scanned SQL text (see the comment at the top of
// this file), or, when it exceeds limit, a BoundsError for the first token past it.
// text is the scanned text; only PL/pgSQL needs it (LOOP is not an SQL keyword).
func Measure(text string, tokens []*pg.ScanToken, plpgsql bool, limit int) (int, *BoundsError) {
	toks := make([]Token, 0, len(tokens))
	for _, t := range tokens {
		toks = append(toks, Token{Start: t.Start, End: t.End, Kind: t.Token})
	}
	return MeasureTokens(text, toks, plpgsql, limit)
}

// MeasureTokens is Measure for tokens from ScanTokens.
func MeasureTokens(text string, tokens []Token, plpgsql bool, limit int) (int, *BoundsError) {
	toks := make([]Token, 0, len(tokens))
	for _, t := range tokens {
		if t.Kind != pg.Token_SQL_COMMENT && t.Kind != pg.Token_C_COMMENT {
			toks = append(toks, t)
		}
	}
	word := func(i int, w string) bool {
		if i < 0 || i >= len(toks) || toks[i].Kind != pg.Token_IDENT {
			return false
		}
		s, e := int(toks[i].Start), int(toks[i].End)
		return 0 <= s && s <= e && e <= len(text) && strings.EqualFold(text[s:e], w)
	}
	tokenAt := func(i int) pg.Token {
		if i < 0 || i >= len(toks) {
			return pg.Token_NUL
		}
		return toks[i].Kind
	}
	levels := make([]level, 1, 16)
	push := func(kind levelKind) {
		l := &levels[len(levels)-1]
		levels = append(levels, level{kind: kind, base: l.base + l.cost() + l.setops + l.item + l.seg})
	}
	pop := func() {
		l := levels[len(levels)-1]
		levels = levels[:len(levels)-1]
		p := &levels[len(levels)-1]
		p.inner = max(p.inner, l.cost()+l.value())
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		l := &levels[len(levels)-1]
		switch tok := t.Kind; {
		case tok == pg.Token_ASCII_40:
			push(levelParen)
		case tok == pg.Token_ASCII_91:
			push(levelBracket)
		case tok == pg.Token_ASCII_41 || tok == pg.Token_ASCII_93:
			// A closer pops up to its opener; a stray one (a syntax error) pops nothing.
			want := levelParen
			if tok == pg.Token_ASCII_93 {
				want = levelBracket
			}
			for j := len(levels) - 1; j > 0; j-- {
				if levels[j].kind == want {
					for len(levels) > j {
						pop()
					}
					break
				}
			}
		case tok == pg.Token_CASE:
			push(levelCase)
		case tok == pg.Token_BEGIN_P && (plpgsql || tokenAt(i+1) == pg.Token_ATOMIC):
			push(levelBegin)
		case tok == pg.Token_IF_P && plpgsql && plpgsqlStatementStart(tokenAt(i-1), word(i-1, "loop")):
			// IF opens a level where a PL/pgSQL statement starts; IF EXISTS in SQL does not.
			push(levelIf)
		case plpgsql && word(i, "loop"):
			push(levelLoop)
		case tok == pg.Token_END_P:
			// END closes only the kind of level it ends; anything else stays open, which
			// can only make the measure larger.
			a, b := levelBegin, levelCase
			if plpgsql {
				switch n := tokenAt(i + 1); {
				case n == pg.Token_IF_P:
					a, b = levelIf, levelIf
					i++
				case n == pg.Token_CASE:
					a, b = levelCase, levelCase
					i++
				case word(i+1, "loop"):
					a, b = levelLoop, levelLoop
					i++
				}
			}
			if len(levels) > 1 && (l.kind == a || l.kind == b) {
				pop()
			}
		case tok == pg.Token_ASCII_44:
			l.endItem()
		case tok == pg.Token_ASCII_59:
			l.endStatement()
		case l.kind == levelCase && (tok == pg.Token_WHEN || tok == pg.Token_THEN || tok == pg.Token_ELSE),
			l.kind == levelIf && (tok == pg.Token_THEN || tok == pg.Token_ELSE || word(i, "elsif") || word(i, "elseif")):
			l.endItem()
		case tok == pg.Token_AND && l.between:
			l.between = false
			l.seg++
		case tok == pg.Token_AND:
			if !l.and {
				l.and = true
				l.item++
			}
			l.endSegment()
		case tok == pg.Token_OR:
			if !l.or {
				l.or = true
				l.item++
			}
			l.endSegment()
		case tok == pg.Token_UNION || tok == pg.Token_INTERSECT || tok == pg.Token_EXCEPT:
			l.setops++
		case tok == pg.Token_BETWEEN:
			l.between = true
			l.seg++
		case isSegmentToken(tok):
			l.seg++
		case isLeafToken(tok):
		default:
			l.item++
		}
		top := &levels[len(levels)-1]
		if m := top.base + top.cost() + top.value(); m > limit {
			return m, &BoundsError{Offset: int(t.Start), Measure: m, Limit: limit}
		}
	}
	for len(levels) > 1 {
		pop()
	}
	return levels[0].cost() + levels[0].value(), nil
}

// plpgsqlStatementStart reports whether a token after prev starts a PL/pgSQL statement.
func plpgsqlStatementStart(prev pg.Token, prevLoop bool) bool {
	switch prev {
	case pg.Token_NUL, pg.Token_ASCII_59, pg.Token_THEN, pg.Token_ELSE, pg.Token_BEGIN_P:
		return true
	}
	return prevLoop
}

// Bounds checks scanned SQL against Limit before it reaches the parser. It returns
// the byte offset of the first token past the limit and what the limit is, or msg ""
// when the input is within bounds.
func Bounds(tokens []*pg.ScanToken) (offset int, msg string) {
	if _, err := Measure("", tokens, false, Limit); err != nil {
		return err.Offset, err.Error()
	}
	return 0, ""
}

// BoundsTokens is Bounds for tokens from ScanTokens.
func BoundsTokens(tokens []Token) (offset int, msg string) {
	if _, err := MeasureTokens("", tokens, false, Limit); err != nil {
		return err.Offset, err.Error()
	}
	return 0, ""
}
