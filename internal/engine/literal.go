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
// Why the literal text is as safe as the decided one. Let V be the text the engine
// decided (verify parsed it and matched the intended tree, or the shape cache derived
// it from a text that was), with the epoch as $1: the application's text has no
// parameter of its own, since Bind refuses a $1 it has no argument for. F is the text
// sent: V with each epoch token $1 replaced by D, the epoch's decimal digits (a
// positive int64: no sign, no leading zero, at most 19 digits).
//
//  1. F reads as V does, but for each $1 being one integer token: ICONST while the
//     epoch fits in 32 bits, FCONST above (the grammar's integer literal of that
//     size). Checked on F itself, the text sent (literalCheck): F is scanned, each
//     run of digits put in is exactly one such token, directly followed by "::" and
//     apart from the token before it (after a space no token holds, or right after
//     a one-character "(" or ","), and F has no parameter token at all. The scanner
//     is a longest-match lexer whose state at a token boundary does not depend on
//     the token before: a run of digits and "$1", each followed by ':', which no
//     rule continues either token with, are one token each, and nothing before them
//     can reach into them. So V's tokens are F's with those tokens as PARAM $1 and
//     no other parameter. For each kind the check runs on the first F; a later epoch
//     of the same kind changes only which digits the run holds, which by the same
//     rule is still one token of that kind.
//  2. The grammar builds F's tree as V's with an integer constant in each ParamRef's
//     place. Every $1 in V is the operand of the fence's "$1::bigint" (each ParamRef
//     1 of the decided tree is the argument of a TypeCast to pg_catalog.int8), and
//     the only rule that reads an operand token followed by "::" there is
//     a_expr TYPECAST Typename over a c_expr, which both PARAM and an integer
//     constant are (c_expr: PARAM | AexprConst; AexprConst: Iconst | FCONST). The
//     constant is inside the cast, never a bare integer (which ORDER BY or GROUP BY
//     would read as a column position). TestLiteralParsesAsVerified parses F for
//     every fenced statement of the rewrite corpus at both kinds and int64's ends.
//  3. The server computes the same value: an int4 or numeric constant cast to
//     bigint is the epoch exactly, where the parameter was the epoch as bigint.
//
// What the server runs is therefore the statement the engine decided, with the epoch
// bound at the same places. The server reads F as sqlfence's scanner does only under
// standard_conforming_strings = on and client_encoding = UTF8, which a front checks
// before every statement (the simple protocol reads text under the same settings as
// the extended one, and F is one statement as V is); a front without that check does
// not ask for the literal.
func (b *Bound) Literal() (send string, ok bool) {
	if !b.Fenced || b.Claim != nil || b.D.epochParam != 1 || b.Epoch <= 0 {
		return "", false
	}
	if b.D.fromPlan != nil {
		if s, ok := b.D.planLiteral(b.Epoch); ok {
			return s, true
		}
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

// literalCheck cuts v at its epoch tokens and checks, by scanning v with epoch's
// digits in their place, point 1 of Literal. The fence writes the epoch as
// "$1::bigint" after a space, "(" or ","; an occurrence of those bytes elsewhere (in
// a string, a comment, a quoted identifier) is cut too, and then F's scan does not
// show an integer token there, or shows a parameter token where one was not cut:
// either way the epoch stays a parameter.
func literalCheck(v string, epoch int64) ([]string, bool) {
	parts := literalCuts(v)
	if parts == nil || !literalScan(parts, epoch) {
		return nil, false
	}
	return parts, true
}

const epochToken = "$1::bigint"

// literalCuts cuts v at its epoch tokens as literalCheck describes; nil when it has
// none.
func literalCuts(v string) []string {
	var parts []string
	last := 0
	for at := 0; ; {
		i := strings.Index(v[at:], epochToken)
		if i < 0 {
			break
		}
		i += at
		at = i + len(epochToken)
		if i == 0 || v[i-1] != ' ' && v[i-1] != '(' && v[i-1] != ',' {
			continue
		}
		parts = append(parts, v[last:i])
		last = i + len("$1")
	}
	if len(parts) == 0 {
		return nil
	}
	return append(parts, v[last:])
}

// literalScan scans parts joined by epoch's digits and checks point 1 of Literal.
func literalScan(parts []string, epoch int64) bool {
	f := withEpoch(parts, epoch)
	ft, err := pgtree.ScanTokens(f, nil)
	if err != nil {
		return false
	}
	want := pg.Token_ICONST
	if literalKind(epoch) == 1 {
		want = pg.Token_FCONST
	}
	width := int32(len(strconv.FormatInt(epoch, 10)))
	// The start of each run of digits in f.
	next, cut, pos := int32(len(parts[0])), 1, int32(len(parts[0]))
	for i, t := range ft {
		switch {
		case t.Kind == pg.Token_PARAM:
			return false
		case t.Start < next:
			if t.End > next {
				return false // a token across the digits' start: a string, a comment
			}
			continue
		}
		if t.Start > next || t.End != next+width || t.Kind != want || !literalAfter(f, ft[:i], t.Start) ||
			i+1 == len(ft) || ft[i+1].Kind != pg.Token_TYPECAST || ft[i+1].Start != t.End {
			return false
		}
		if cut == len(parts)-1 { // the last run: no parameter token may follow
			for _, t := range ft[i+1:] {
				if t.Kind == pg.Token_PARAM {
					return false
				}
			}
			return true
		}
		pos += width + int32(len(parts[cut]))
		next, cut = pos, cut+1
	}
	return false
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
