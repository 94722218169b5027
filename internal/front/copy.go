// CopyFrom as the INSERT it amounts to: the one text the pgx front decides a copy by,
// and the Go analyzer and sqlfence check judge CopyFrom calls by.

package front

import (
	"strconv"
	"strings"
)

// CopyInsert is the statement a COPY FROM of columns into table amounts to:
// INSERT INTO table (columns) VALUES ($1, …). Every name is quoted, as pgx writes
// COPY's own text (pgx.Identifier.Sanitize), so that the INSERT names exactly the
// relation and columns the COPY writes; a NUL byte, which pgx would drop from the
// table's name, is kept, and the engine refuses the text.
func CopyInsert(table, columns []string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	for i, p := range table {
		if i > 0 {
			b.WriteByte('.')
		}
		quoted(&b, p)
	}
	b.WriteString(" (")
	for i, c := range columns {
		if i > 0 {
			b.WriteString(", ")
		}
		quoted(&b, c)
	}
	b.WriteString(") VALUES (")
	for i := range columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1))
	}
	b.WriteString(")")
	return b.String()
}

func quoted(b *strings.Builder, name string) {
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(name, `"`, `""`))
	b.WriteByte('"')
}

// A copy into more than one protected table (a view or a parent over several) has no
// one epoch column to stamp: the front refuses it with this reason and fix.
const (
	CopyManyReason = "CopyFrom into a relation that is not one protected table cannot be fenced"
	CopyManyFix    = "insert the rows with INSERT … SELECT FROM unnest($1::…[]) under an epoch"
)
