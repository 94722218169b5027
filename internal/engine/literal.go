// The epoch written into a fenced text as a literal, for a statement the application
// sent without arguments: the text sent is the verified one with each epoch
// parameter token replaced by the epoch's digits, checked token by token.

package engine

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree"
)

// literalForm is a decision's fenced text cut at its epoch tokens: parts[0] $1
// parts[1] … $1 parts[n]. verified[k] is set once a text of the form with an epoch
// of kind k (literalKind) was scanned and matched the verified text token for token.
type literalForm struct {
	parts    []string // substrings of the decision's text; nil: the text cannot carry the epoch as a literal
	verified [2]atomic.Bool
}

// Literal returns what to send for b when the application sent no arguments: b.Send
// with the epoch written in as a decimal literal, so that the statement needs no
// parameter and goes out the way the application's own text would (pgx sends a text
// without arguments in one simple-protocol round trip and prepares nothing). ok is
// false when the epoch must stay a parameter: under a claim (the claim's key is a
// string), or when the text does not pass the checks below.
//
// Why the literal text is as safe as the verified one. Let V be the text verify
// parsed and compared with the intended tree (the epoch as $1: the application's
// text has no parameter of its own, since Bind refuses a $1 it has no argument for),
// and F the text sent: V with each $1 token replaced by D, the epoch's decimal
// digits (a positive int64: no sign, no leading zero, at most 19 digits).
//
//  1. The scanner reads F as it reads V, except that each $1 is one integer token:
//     ICONST while the epoch fits in 32 bits, FCONST above (the grammar's integer
//     literal of that size). This is checked, not argued: for each kind, the first
//     F is scanned and compared with V's scan token for token (same kinds, same
//     ranges shifted by the replacements, only those tokens changed). A later epoch
//     of the same kind differs from the checked F only inside that run of digits,
//     and the scanner reads a run of decimal digits followed by "::" as one integer
//     token whatever the digits (the token before the run is a "(" or "," or is separated from
//     it by a space, the run ends at ':': both required here, so no neighbour can
//     take a digit into itself or change where a token ends).
//  2. The grammar builds the same tree with an integer constant in each ParamRef's
//     place. Every $1 in V is the operand of the fence's "$1::bigint" (verify matched
//     the tree: each ParamRef 1 is the argument of a TypeCast to pg_catalog.int8), and
//     the only rule that reads an operand token followed by "::" there is
//     a_expr TYPECAST Typename over a c_expr, which both PARAM and an integer
//     constant are (c_expr: PARAM | AexprConst; AexprConst: Iconst | FCONST). The
//     constant is inside the cast, never a bare integer (which ORDER BY or GROUP BY
//     would read as a column position).
//  3. The server computes the same value: an int4 or numeric constant cast to
//     bigint is the epoch exactly, where the parameter was the epoch as bigint.
//
// What the server runs is therefore the statement verify accepted, with the epoch
// bound at the same places. The server reads F as sqlfence's scanner did only under
// standard_conforming_strings = on and client_encoding = UTF8, which a front checks
// before every statement (the simple protocol is read under the same settings as the
// extended one); a front without that check does not ask for the literal.
func (b *Bound) Literal() (send string, ok bool) {
	if !b.Fenced || b.Claim != nil || b.D.epochParam != 1 || b.Epoch <= 0 {
		return "", false
	}
	f := b.D.literal.Load()
	if f == nil {
		f = &literalForm{}
		if parts, ok := literalCheck(b.D.sql, b.Epoch); ok {
			f.parts = parts
			f.verified[literalKind(b.Epoch)].Store(true)
		}
		b.D.literal.Store(f)
	}
	if f.parts == nil {
		return "", false
	}
	if k := literalKind(b.Epoch); !f.verified[k].Load() {
		if _, ok := literalCheck(b.D.sql, b.Epoch); !ok {
			return "", false
		}
		f.verified[k].Store(true)
	}
	return withEpoch(f.parts, b.Epoch), true
}

// literalKind is the scanner's token for the epoch's digits: 0 for ICONST (it fits
// in 32 bits), 1 for FCONST.
func literalKind(epoch int64) int {
	if epoch <= math.MaxInt32 {
		return 0
	}
	return 1
}

func withEpoch(parts []string, epoch int64) string {
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], epoch, 10)
	n := len(digits) * (len(parts) - 1)
	for _, p := range parts {
		n += len(p)
	}
	var s strings.Builder
	s.Grow(n)
	s.WriteString(parts[0])
	for _, p := range parts[1:] {
		s.Write(digits)
		s.WriteString(p)
	}
	return s.String()
}

// literalCheck cuts v at its $1 tokens and checks, by scanning both, that v with
// epoch's digits in their place reads as v does but for those tokens (point 1 of
// Literal). It refuses a text with any other parameter token, or a $1 not written
// exactly so, not apart from the token before it (literalAfter) or not followed
// directly by "::".
func literalCheck(v string, epoch int64) ([]string, bool) {
	vt, err := pgtree.ScanTokens(v, nil)
	if err != nil {
		return nil, false
	}
	var parts []string
	var cuts []int // indexes in vt of the $1 tokens
	last := 0
	for i, t := range vt {
		if t.Kind != pg.Token_PARAM {
			continue
		}
		if v[t.Start:t.End] != "$1" || !literalAfter(v, vt[:i], t.Start) ||
			i+1 == len(vt) || vt[i+1].Kind != pg.Token_TYPECAST || vt[i+1].Start != t.End {
			return nil, false
		}
		parts = append(parts, v[last:t.Start])
		last = int(t.End)
		cuts = append(cuts, i)
	}
	if len(cuts) == 0 {
		return nil, false
	}
	parts = append(parts, v[last:])
	f := withEpoch(parts, epoch)
	ft, err := pgtree.ScanTokens(f, make([]pgtree.Token, 0, len(vt)))
	if err != nil || len(ft) != len(vt) {
		return nil, false
	}
	want := pg.Token_ICONST
	if literalKind(epoch) == 1 {
		want = pg.Token_FCONST
	}
	width := int32(len(strconv.FormatInt(epoch, 10)))
	shift, c := int32(0), 0
	for i, t := range vt {
		g := ft[i]
		if c < len(cuts) && cuts[c] == i {
			if g.Kind != want || g.Start != t.Start+shift || g.End != g.Start+width {
				return nil, false
			}
			shift += width - (t.End - t.Start)
			c++
			continue
		}
		if g.Kind != t.Kind || g.Start != t.Start+shift || g.End != t.End+shift {
			return nil, false
		}
	}
	return parts, true
}

// literalAfter reports whether a run of digits at start stands apart from the tokens
// before it (before): after a space that no token holds, or right after a "(" or ","
// token, which the scanner never reads as more than that one character.
func literalAfter(v string, before []pgtree.Token, start int32) bool {
	if start == 0 {
		return false
	}
	var prev pgtree.Token
	if len(before) > 0 {
		prev = before[len(before)-1]
	}
	switch v[start-1] {
	case ' ':
		return len(before) == 0 || prev.End < start
	case '(', ',':
		return len(before) > 0 && prev.Start == start-1 && prev.End == start
	}
	return false
}
