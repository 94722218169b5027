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

// The carried form: a statement that fires writes the server makes on its behalf —
// a trigger's, a foreign-key action's, a rule's or a called function's — into
// protected tables carries its epoch in the marker, so that the guard's row trigger
// compares those rows with it and stamps them, as the driver's fence does the rows
// the statement writes itself. Its first word is CarryMark and the epoch, so that the
// row trigger's WHEN clause finds it with one prefix test (CarryPrefix); then the
// catalog version, the names the statement fenced itself, and, for each protected
// relation the server writes, CarriedMark, its name, ':' and its checks (Strict,
// Repeatable, ClaimCheck); and with a claim check the claim (ClaimMark).
const (
	CarryMark   = "="
	CarryPrefix = Prefix + CarryMark
	CarriedMark = "+"
	ClaimMark   = "!"
	// The checks of a carried relation's rows: compared with the epoch strictly
	// (a row at the epoch is already written) or repeatably, and/or the claim checked.
	Strict     = 's'
	Repeatable = 'r'
	ClaimCheck = 'k'
)

// Carried is one protected relation the server writes for a statement, and the checks
// its rows get.
type Carried struct {
	Name   string // unquoted, as the catalog stores it
	Checks string // Strict or Repeatable, and/or ClaimCheck
}

// Claim is a claim check carried to the guard: the claim table as SQL text
// (schema-qualified, quoted as needed), its key and epoch columns (unquoted), and the
// job's key as text.
type Claim struct {
	Table, KeyColumn, EpochColumn, Key string
}

// CarryComment is the carried marker: epoch, catalog version, the names the statement
// fenced itself, the carried relations and, when claim is not nil, the claim, each
// part of the claim hex-encoded so that nothing in it can end the comment or read as
// another word.
func CarryComment(epoch, version int64, names []string, carried []Carried, claim *Claim) string {
	var b strings.Builder
	b.WriteString(CarryPrefix)
	b.WriteString(strconv.FormatInt(epoch, 10))
	if version > 0 {
		b.WriteString(" " + VersionMark)
		b.WriteString(strconv.FormatInt(version, 10))
	}
	seen := make([]string, 0, len(names))
	for _, n := range names {
		if n = Name(n); !slices.Contains(seen, n) {
			seen = append(seen, n)
			b.WriteString(" " + n)
		}
	}
	seen = seen[:0]
	for _, c := range carried {
		if n := Name(c.Name); !slices.Contains(seen, n) {
			seen = append(seen, n)
			b.WriteString(" " + CarriedMark + n + ":" + c.Checks)
		}
	}
	if claim != nil {
		b.WriteString(" " + ClaimMark)
		for i, part := range []string{claim.Table, claim.KeyColumn, claim.EpochColumn, claim.Key} {
			if i > 0 {
				b.WriteString(ClaimMark)
			}
			b.WriteString(hex.EncodeToString([]byte(part)))
		}
	}
	b.WriteString("*/ ")
	return b.String()
}
