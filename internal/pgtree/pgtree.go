// Package pgtree holds what the driver and the sqlfence command both need to know
// about pg_query's output: how much input the C parser can take without crashing the
// process, how to walk and compare its trees, and when EXPLAIN runs the statement.
package pgtree

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

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

// Depth returns the nesting depth of messages in m: 1 for a message with no message
// fields set. It walks on the Go stack, which grows as needed.
func Depth(m protoreflect.Message) int {
	d := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind || fd.IsMap():
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				d = max(d, Depth(l.Get(i).Message()))
			}
		default:
			d = max(d, Depth(v.Message()))
		}
		return true
	})
	return d + 1
}
