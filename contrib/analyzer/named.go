// sqlx's named queries (NamedExec, NamedQuery, PrepareNamed, sqlx.Named, BindNamed):
// the :name text rewritten into bindvars as sqlx rewrites it before the driver sees
// it, so the engine judges the text the driver receives.

package analyzer

import (
	"strconv"
	"unicode"
)

// sqlx's bindvar types (sqlx.QUESTION, sqlx.DOLLAR): what a name becomes.
const (
	bindQuestion = 1
	bindDollar   = 2
)

// sqlxNamedMethods: the methods of sqlx's DB, Tx and Conn that take a named query →
// the index of the query argument. They compile it with the bindvar of the handle's
// driver: $1, $2, … for PostgreSQL's drivers (and for sqlfence's, once
// contrib/sqlx's init has registered it).
var sqlxNamedMethods = map[string]int{
	"NamedExec": 0, "NamedQuery": 0, "PrepareNamed": 0,
	"NamedExecContext": 1, "NamedQueryContext": 1, "PrepareNamedContext": 1,
}

// sqlxNamedFuncs: sqlx's package functions that take a named query and a handle.
var sqlxNamedFuncs = map[string]int{"NamedExec": 1, "NamedQuery": 1, "NamedExecContext": 2, "NamedQueryContext": 2}

// compileNamed rewrites a named query as sqlx does, byte by byte and blind to SQL's
// quoting (a :name inside a string literal or comment is a parameter too):
//   - ':' followed by letters, digits, '_' and '.' is a parameter; it becomes the next
//     bindvar ("$n", or "?"). Letters and digits are judged per byte, each byte read
//     as a Latin-1 character, as sqlx judges them. At the very end of the text a
//     trailing '_' or '.' is not part of the name.
//   - '::' becomes a single ':' (sqlx's escape; a PostgreSQL cast is written ::::).
//   - ':=' stays ':='.
//   - ':' with no name after it still becomes a bindvar; a ':' at the very end is
//     dropped.
//   - ':' inside a name (:a:b) is an error: sqlx returns it and sends nothing.
//
// ok is false for that error.
func compileNamed(q string, bind int) (out string, ok bool) {
	b := make([]byte, 0, len(q))
	inName, nameLen, n := false, 0, 0
	last := len(q) - 1
	nameByte := func(c byte) bool { r := rune(c); return unicode.IsLetter(r) || unicode.IsDigit(r) }
	bindvar := func() {
		if bind == bindDollar {
			n++
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(n), 10)
		} else {
			b = append(b, '?')
		}
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == ':' && inName && i > 0 && q[i-1] == ':':
			b = append(b, ':')
			inName = false
		case c == ':' && inName:
			return "", false
		case c == ':':
			inName, nameLen = true, 0
		case inName && c == '=' && nameLen == 0:
			b = append(b, ':', '=')
			inName = false
		case inName && (nameByte(c) || c == '_' || c == '.') && i != last:
			nameLen++
		case inName:
			inName = false
			bindvar()
			if i != last || !nameByte(c) {
				b = append(b, c)
			}
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

// compileNamed is compileNamed over text: known text is compiled; text with holes is
// compiled part by part (a name cut by a hole is read as two), for protectedWrite's
// reading only, since it is never decided. ok is false when sqlx would refuse the
// known text.
func (t text) compileNamed(bind int) (text, bool) {
	if s, known := t.known(); known {
		c, ok := compileNamed(s, bind)
		return knownText(c), ok
	}
	var out text
	for _, p := range t.parts {
		if !p.hole {
			if c, ok := compileNamed(p.s, bind); ok {
				p.s = c
			}
		}
		out.parts = append(out.parts, p)
	}
	return out, true
}
