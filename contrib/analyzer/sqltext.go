// Reading SQL text the engine cannot be given whole: libraries' ? placeholders, and
// text with holes that may still show a write to a protected table.

package analyzer

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// numberQuestionMarks numbers ? placeholders $1, $2, … as GORM, bun and sqlx's
// Rebind do before the text reaches the driver. Only ? outside string literals,
// quoted identifiers and comments is a placeholder; ?| and ?& are jsonb operators.
// bun's ?0 is argument 0 ($1); its named placeholders (?TableName, ?ids) stand for
// text only the program knows, so they are holes.
func (t text) numberQuestionMarks() text {
	n := 0
	var out text
	for _, p := range t.parts {
		if p.hole || !strings.Contains(p.s, "?") {
			out.parts = append(out.parts, p)
			continue
		}
		toks, err := pgtree.ScanTokens(p.s, nil)
		if err != nil {
			out.parts = append(out.parts, p)
			continue
		}
		var b strings.Builder
		flush := func() { out.parts = append(out.parts, part{s: b.String()}); b.Reset() }
		last := 0
		for i, tok := range toks {
			op := p.s[tok.Start:tok.End]
			if tok.Kind != pg.Token_Op || !strings.Contains(op, "?") || op == "?|" || op == "?&" || int(tok.Start) < last {
				continue
			}
			b.WriteString(p.s[last:tok.Start])
			last = int(tok.End)
			var next *pgtree.Token
			if i+1 < len(toks) && toks[i+1].Start == tok.End && strings.HasSuffix(op, "?") {
				next = &toks[i+1]
			}
			for j, c := range op {
				switch {
				case c != '?':
					b.WriteRune(c)
				case j == len(op)-1 && next != nil && next.Kind == pg.Token_ICONST:
					k, err := strconv.Atoi(p.s[next.Start:next.End])
					if err != nil {
						k = 0
					}
					b.WriteString("$" + strconv.Itoa(k+1))
					last = int(next.End)
				case j == len(op)-1 && next != nil && next.Kind == pg.Token_IDENT:
					flush()
					out.parts = append(out.parts, part{hole: true})
					last = int(next.End)
				default:
					n++
					b.WriteString("$" + strconv.Itoa(n))
				}
			}
		}
		b.WriteString(p.s[last:])
		flush()
	}
	return out
}

// holeName stands for a hole when text with holes is scanned.
const holeName = " sqlfence_unknown "

// writeKeywords are the tokens that start a write (or a COPY) and name its table.
var writeKeywords = map[pg.Token]bool{pg.Token_UPDATE: true, pg.Token_INSERT: true, pg.Token_DELETE_P: true,
	pg.Token_MERGE: true, pg.Token_TRUNCATE: true, pg.Token_COPY: true}

// protectedWrite reads text with holes: when its known parts write a protected table
// — UPDATE [ONLY] t, INSERT INTO t, DELETE FROM t, MERGE INTO t, TRUNCATE [TABLE] t,
// COPY t — it returns the table, as the policy names it. Text whose table is a hole,
// or that is all hole, returns "": nothing shows it writes a protected table.
func (t text) protectedWrite(pol *sqlfence.Policy) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.hole {
			b.WriteString(holeName)
		} else {
			b.WriteString(p.s)
		}
	}
	s := b.String()
	toks, err := pgtree.ScanTokens(s, nil)
	if err != nil {
		return ""
	}
	for i, tok := range toks {
		if !writeKeywords[tok.Kind] {
			continue
		}
		j := i + 1
		for j < len(toks) && skipBeforeTable[toks[j].Kind] {
			j++
		}
		if j >= len(toks) || toks[j].Kind != pg.Token_IDENT {
			continue
		}
		name := s[toks[j].Start:toks[j].End]
		if j+2 < len(toks) && toks[j+1].Kind == pg.Token_ASCII_46 && toks[j+2].Kind == pg.Token_IDENT {
			name += "." + s[toks[j+2].Start:toks[j+2].End]
		}
		parts, err := sqlident.Split(name)
		if err != nil {
			continue
		}
		schema, rel := "", parts[len(parts)-1]
		if len(parts) == 2 {
			schema = parts[0]
		}
		if tbl, _ := pol.Match(schema, rel); tbl != nil {
			return tbl.QualifiedName.String()
		}
	}
	return ""
}

// skipBeforeTable are the words between a write keyword and its table.
var skipBeforeTable = map[pg.Token]bool{pg.Token_INTO: true, pg.Token_FROM: true, pg.Token_ONLY: true, pg.Token_TABLE: true}
