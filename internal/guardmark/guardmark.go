// Package guardmark is the comment the driver puts before every statement it fenced,
// and that the guard's statement trigger reads back (current_query()) to let that
// statement's own writes through: the one place where both sides agree on its form.
//
// The comment names the protected relations the statement fenced, by name without
// schema (the statement trigger fires on the relation the statement names, or on a
// view's base table), so that a rule of the statement that writes another protected
// table is still rejected.
package guardmark

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// Prefix starts every marked statement, at its first byte.
const Prefix = "/*sqlfence fenced: "

// Forged is what an application's own text may not contain: with it, a statement
// the driver did not fence could pass the guard as one it did.
const Forged = "/*sqlfence fenced"

// VersionMark starts the marker's first word when it carries a catalog version.
const VersionMark = "@"

// Name encodes a relation's name (unquoted, as the catalog stores it) for the marker:
// a name of ASCII letters, digits and _ stays as it is, any other becomes % and the
// hex of its UTF-8 bytes, so that no name can end the comment or read as two names.
func Name(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return "%" + hex.EncodeToString([]byte(name))
		}
	}
	return name
}

// NameSQL is Name as an SQL expression over expr (of type text or name): the guard's
// install function computes each guarded relation's name with it.
func NameSQL(expr string) string {
	return "CASE WHEN " + expr + " ~ '^[A-Za-z0-9_]+$' THEN " + expr +
		"::text ELSE '%' || encode(convert_to(" + expr + "::text, 'UTF8'), 'hex') END"
}

// Comment is the marker for a statement that fenced the relations named (unquoted),
// followed by a space: Prefix, each name once, encoded, separated by spaces, then */.
func Comment(names []string) string { return CommentAt(names, 0) }

// CommentAt is Comment with the catalog version the statement was decided on,
// written as the first word "@N" (a name with "@" is written in hex, so the two
// never meet; first, so that the guard compares it with one starts_with): the guard
// refuses the statement once DDL has moved the version on. version 0 (resolve:
// none, or no catalog version installed) writes none.
func CommentAt(names []string, version int64) string {
	var b strings.Builder
	b.WriteString(Prefix)
	if version > 0 {
		b.WriteString(VersionMark)
		b.WriteString(strconv.FormatInt(version, 10))
		b.WriteByte(' ')
	}
	seen := make([]string, 0, len(names))
	for _, n := range names {
		if n = Name(n); !slices.Contains(seen, n) {
			if len(seen) > 0 {
				b.WriteByte(' ')
			}
			seen = append(seen, n)
			b.WriteString(n)
		}
	}
	b.WriteString("*/ ")
	return b.String()
}
