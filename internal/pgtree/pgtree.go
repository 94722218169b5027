// Package pgtree holds what the driver and the sqlfence command both need to know
// about pg_query's output: how much input the C parser can take without crashing the
// process, how to walk and compare its trees, and when EXPLAIN runs the statement.
package pgtree

import (
	"slices"
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

//go:generate go run ./walkgen

// Walk calls f on every message in the tree, depth first; f returns false to skip a
// message's children.
func Walk(m protoreflect.Message, f func(protoreflect.Message) bool) {
	WalkNodes(m.Interface(), func(n proto.Message) bool { return f(n.ProtoReflect()) })
}

// WalkNodes is Walk for callers that switch on the Go type of each message, which is
// all the judges do: it hands them the message without its reflection view. The
// children come from children_gen.go, a type switch generated from pg_query's
// descriptors (walkgen), in the order the fields are declared, oneofs last: asking
// for them by protobuf reflection (a descriptor lookup, Has, Get and a boxed value
// per field) cost more than the parse for every statement, which each of the
// judges walks.
func WalkNodes(m proto.Message, f func(proto.Message) bool) {
	var walk func(proto.Message) bool
	walk = func(n proto.Message) bool {
		if f(n) {
			eachChild(n, walk)
		}
		return true
	}
	walk(m)
}

// messageFields is, per message type, where Walk finds its children (its message
// fields outside oneofs), what Equal compares (its fields outside oneofs, positions
// left out) and its oneofs (Node's hundreds of members are one): read from the
// descriptor once, not ranged over at every node.
type messageFields struct {
	children []protoreflect.FieldDescriptor
	compared []protoreflect.FieldDescriptor
	oneofs   []protoreflect.OneofDescriptor
}

var messageFieldsOf sync.Map // protoreflect.MessageDescriptor → *messageFields

func fieldsOf(desc protoreflect.MessageDescriptor) *messageFields {
	if v, ok := messageFieldsOf.Load(desc); ok {
		return v.(*messageFields)
	}
	fields := desc.Fields()
	mf := &messageFields{}
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil {
			continue
		}
		if fd.Kind() == protoreflect.MessageKind && !fd.IsMap() {
			mf.children = append(mf.children, fd)
		}
		if !isPosition(fd) {
			mf.compared = append(mf.compared, fd)
		}
	}
	oneofs := desc.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		mf.oneofs = append(mf.oneofs, oneofs.Get(i))
	}
	messageFieldsOf.Store(desc, mf)
	return mf
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

// Equal reports whether two trees are the same apart from positions. It asks each
// declared field (and each oneof) of both messages directly, where ranging over the
// fields either one has set costs a closure call and an allocation per field: the
// verification of every rewrite runs it over two whole trees.
func Equal(a, b protoreflect.Message) bool {
	desc := a.Descriptor()
	if desc != b.Descriptor() {
		return false
	}
	mf := fieldsOf(desc)
	for _, fd := range mf.compared {
		has := a.Has(fd)
		if has != b.Has(fd) || has && !equalValue(fd, a.Get(fd), b.Get(fd)) {
			return false
		}
	}
	for _, o := range mf.oneofs {
		fd := a.WhichOneof(o)
		if fd != b.WhichOneof(o) {
			return false
		}
		if fd != nil && !isPosition(fd) && !equalValue(fd, a.Get(fd), b.Get(fd)) {
			return false
		}
	}
	return true
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
