// Settings that change how the server reads text.

package sqlfence

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// standardStrings is the one setting that changes how the server reads the text
// sqlfence parsed: with it off, a backslash escapes a quote inside '…', and a string
// literal to pg_query can be a statement boundary to the server. The registered driver
// sets it on in the startup message; changing it on a connection is refused.
const standardStrings = "standard_conforming_strings"

func refuseSetting() *Error {
	return refuse(nil, "changing "+standardStrings+" would let the server read statements differently from sqlfence",
		"leave it on (the default since PostgreSQL 9.1); write backslash escapes as E'…' strings")
}

// isSafeSetting reports whether set_config's first argument names a setting other than
// standard_conforming_strings. A name that is not a literal cannot be checked.
func isSafeSetting(name string) bool {
	return name != "" && !strings.EqualFold(name, standardStrings)
}

func setsOn(s *pg.VariableSetStmt) bool {
	switch s.Kind {
	case pg.VariableSetKind_VAR_RESET, pg.VariableSetKind_VAR_SET_DEFAULT:
		return true // back to the session's startup value
	case pg.VariableSetKind_VAR_SET_VALUE:
		if len(s.Args) != 1 {
			return false
		}
		c := s.Args[0].GetAConst()
		v := strings.ToLower(c.GetSval().GetSval())
		return v == "on" || v == "true" || v == "yes" || c.GetIval().GetIval() == 1 || c.GetBoolval().GetBoolval()
	}
	return false
}
