// Package pgtree holds what the driver and the sqlfence command both need to know
// about pg_query's output: how much input the C parser can take without crashing the
// process, how to walk and compare its trees, and when EXPLAIN runs the statement.
package pgtree

import (
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The parser recurses on nesting: tens of thousands of levels exhaust the C stack
// and kill the process, and well before that protobuf refuses the tree. These bounds
// sit far below both and far above what any hand-written statement needs.
const (
	MaxNesting       = 200  // ( [ CASE
	MaxOperatorChain = 1000 // binary operators in one list item, at one level
	MaxTokenRun      = 5000 // tokens in one list item, at one level
	MaxLinks         = 1000 // JOIN, UNION, INTERSECT, EXCEPT in a statement
)

// Bounds checks scanned input against the limits before it reaches the parser. It
// returns the byte offset of the first token past a limit and what the limit is, or
// msg "" when the input is within bounds. The counters are kept per nesting level: a
// comma ends a list item only at its own level, so f(1,1)+f(1,1)+… is still one chain.
func Bounds(tokens []*pg.ScanToken) (offset int, msg string) {
	type level struct{ chain, run int }
	levels := []level{{}}
	links := 0
	for _, t := range tokens {
		if t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT {
			continue
		}
		lv := &levels[len(levels)-1]
		// Postfix chains (x IS NULL IS NULL …, x::int::int …) nest as deep as they
		// are long without any operator; a bound on tokens per list item catches them.
		if lv.run++; lv.run > MaxTokenRun {
			return int(t.Start), fmt.Sprintf("more than %d tokens without a comma", MaxTokenRun)
		}
		switch t.Token {
		case pg.Token_ASCII_40, pg.Token_ASCII_91, pg.Token_CASE:
			if levels = append(levels, level{}); len(levels)-1 > MaxNesting {
				return int(t.Start), fmt.Sprintf("nesting deeper than %d levels", MaxNesting)
			}
		case pg.Token_ASCII_41, pg.Token_ASCII_93, pg.Token_END_P:
			if len(levels) > 1 {
				levels = levels[:len(levels)-1]
			}
		case pg.Token_Op, pg.Token_ASCII_43, pg.Token_ASCII_45, pg.Token_ASCII_42, pg.Token_ASCII_47,
			pg.Token_ASCII_37, pg.Token_ASCII_94, pg.Token_ASCII_60, pg.Token_ASCII_62, pg.Token_ASCII_61,
			pg.Token_AND, pg.Token_OR, pg.Token_NOT, pg.Token_LESS_EQUALS, pg.Token_GREATER_EQUALS,
			pg.Token_NOT_EQUALS, pg.Token_TYPECAST:
			if lv.chain++; lv.chain > MaxOperatorChain {
				return int(t.Start), fmt.Sprintf("an expression of more than %d operators", MaxOperatorChain)
			}
		case pg.Token_UNION, pg.Token_INTERSECT, pg.Token_EXCEPT, pg.Token_JOIN:
			// Set operations and joins nest left-deep however many commas sit between.
			if links++; links > MaxLinks {
				return int(t.Start), fmt.Sprintf("more than %d joins and set operations", MaxLinks)
			}
		case pg.Token_ASCII_44, pg.Token_ASCII_59:
			*lv = level{}
		}
	}
	return 0, ""
}

// Walk calls f on every message in the tree, depth first; f returns false to skip a
// message's children.
func Walk(m protoreflect.Message, f func(protoreflect.Message) bool) {
	if f(m) {
		walkChildren(m, f)
	}
}

// walkChildren is Walk for each of m's children.
func walkChildren(m protoreflect.Message, f func(protoreflect.Message) bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				Walk(l.Get(i).Message(), f)
			}
		} else {
			Walk(v.Message(), f)
		}
		return true
	})
}

// ExplainAnalyze reports whether EXPLAIN runs its statement. PostgreSQL accepts an
// option twice and the last one wins; an argument that cannot be read counts as on.
func ExplainAnalyze(e *pg.ExplainStmt) bool {
	analyze := false
	for _, o := range e.Options {
		d := o.GetDefElem()
		if d == nil || d.Defname != "analyze" {
			continue
		}
		analyze = true
		switch v := d.Arg.GetNode().(type) {
		case *pg.Node_String_:
			analyze = !slices.Contains([]string{"false", "off", "0", "no"}, strings.ToLower(v.String_.Sval))
		case *pg.Node_Integer:
			analyze = v.Integer.Ival != 0
		case *pg.Node_Boolean:
			analyze = v.Boolean.Boolval
		}
	}
	return analyze
}

// FuncName splits a function reference into schema ("" when unqualified) and name.
func FuncName(name []*pg.Node) (schema, fn string) {
	switch len(name) {
	case 0:
		return "", ""
	case 1:
		return "", name[0].GetString_().GetSval()
	}
	return name[len(name)-2].GetString_().GetSval(), name[len(name)-1].GetString_().GetSval()
}

// Equal reports whether two trees are the same apart from positions: one pass over
// both, where stripping them and comparing would walk each tree twice more.
func Equal(a, b protoreflect.Message) bool {
	if a.Descriptor() != b.Descriptor() {
		return false
	}
	na, nb := 0, 0
	equal := true
	a.Range(func(fd protoreflect.FieldDescriptor, va protoreflect.Value) bool {
		if isPosition(fd) {
			return true
		}
		na++
		if !b.Has(fd) {
			equal = false
			return false
		}
		equal = equalValue(fd, va, b.Get(fd))
		return equal
	})
	if !equal {
		return false
	}
	b.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if !isPosition(fd) {
			nb++
		}
		return true
	})
	return na == nb
}

func isPosition(fd protoreflect.FieldDescriptor) bool {
	switch fd.Name() {
	case "location", "stmt_location", "stmt_len":
		return true
	}
	return false
}

func equalValue(fd protoreflect.FieldDescriptor, a, b protoreflect.Value) bool {
	switch {
	case fd.IsList():
		la, lb := a.List(), b.List()
		if la.Len() != lb.Len() {
			return false
		}
		for i := 0; i < la.Len(); i++ {
			if fd.Kind() == protoreflect.MessageKind {
				if !Equal(la.Get(i).Message(), lb.Get(i).Message()) {
					return false
				}
			} else if !la.Get(i).Equal(lb.Get(i)) {
				return false
			}
		}
		return true
	case fd.IsMap():
		return a.Equal(b)
	case fd.Kind() == protoreflect.MessageKind:
		return Equal(a.Message(), b.Message())
	}
	return a.Equal(b)
}
