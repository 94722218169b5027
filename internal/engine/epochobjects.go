// The epoch counters: the claim package's sequence (sqlfence_epoch) and counter
// table (sqlfence_epoch_counter) are part of the claim protocol. Moved back, dropped
// or replaced, they hand out epochs already used, and a stale execution writes again.

package engine

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// epochObjectPrefix starts the names of the claim package's epoch sequence and counter
// table, and of the per-table ones an application names after them. A relation of such
// a name in any schema counts: the claim's SQL may read it through search_path.
const epochObjectPrefix = "sqlfence_epoch"

// isEpochObject reports whether name (a relation's name as the catalog folds it, or
// the text of a regclass literal) may name an epoch counter.
func isEpochObject(name string) bool {
	return strings.Contains(strings.ToLower(strings.ReplaceAll(name, `"`, "")), epochObjectPrefix)
}

// counterClaim is the claim table stand-in for a write to an epoch counter table: the
// statement is a claim helper's (which draws an epoch from it) or refused (SF601).
func counterClaim(rv *pg.RangeVar) *ClaimTable {
	return &ClaimTable{QualifiedName: QualifiedName{Schema: rv.Schemaname, Name: rv.Relname}, EpochColumn: "value"}
}

// admitSetval judges setval: nextval only raises a sequence, setval can move it
// back. It passes when its first argument names, as a literal (or through
// pg_get_serial_sequence of literals), a sequence that is not an epoch counter.
func admitSetval(args []*pg.Node) *Error {
	refusal := func(why string) *Error {
		return refuse(rulecode.ClaimWrite, nil, "setval "+why+": moved back, the claim package's epoch sequence hands out epochs already used, and a stale execution writes again",
			"name the sequence as a string literal; move an epoch sequence only outside the driver, upwards (sqlfence audit --fix)")
	}
	if len(args) == 0 {
		return refusal("without arguments")
	}
	if fc := args[0].GetFuncCall(); fc != nil {
		if schema, fn := pgtree.FuncName(fc.Funcname); fn == "pg_get_serial_sequence" && (schema == "" || schema == "pg_catalog") {
			for _, a := range fc.Args {
				if s, ok := literalText(a); !ok || isEpochObject(s) {
					return refusal("of a sequence sqlfence cannot name")
				}
			}
			return nil
		}
	}
	s, ok := literalText(args[0])
	switch {
	case !ok:
		return refusal("of a sequence that is not named by a literal: sqlfence cannot tell it is not an epoch sequence")
	case isEpochObject(s):
		return refusal("of " + s + ", an epoch sequence")
	}
	return nil
}

// literalText is the text of a string literal, bare or cast ('s'::regclass).
func literalText(n *pg.Node) (string, bool) {
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	if c := n.GetAConst(); c != nil && c.GetSval() != nil {
		return c.GetSval().GetSval(), true
	}
	return "", false
}

// admitEpochObjectDDL refuses, under ddl: allow, DDL that names an epoch counter
// anywhere: ALTER SEQUENCE … RESTART, renaming, dropping, replacing it in another
// schema, disabling the counter's trigger.
func admitEpochObjectDDL(n *pg.Node) *Error {
	var named string
	pgtree.Walk(n.ProtoReflect(), func(m protoreflect.Message) bool {
		switch s := m.Interface().(type) {
		case *pg.RangeVar:
			if isEpochObject(s.Relname) {
				named = s.Relname
			}
		case *pg.DropStmt:
			for _, o := range s.Objects {
				for _, part := range o.GetList().GetItems() {
					if v := part.GetString_().GetSval(); isEpochObject(v) {
						named = v
					}
				}
			}
		}
		return named == ""
	})
	if named == "" {
		return nil
	}
	return refuse(rulecode.ClaimWrite, nil, statementKind(n)+" names "+named+", an epoch counter of the claim protocol: changed, it hands out epochs already used, and a stale execution writes again",
		"change the claim schema outside the driver, with the claim package's migrations")
}
