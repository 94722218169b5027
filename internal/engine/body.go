// Routine bodies: DO blocks, and the bodies of functions and procedures created
// through the driver. Every statement and expression in a body is parsed and judged
// like a statement of its own; a body that cannot be read is refused.

package engine

import (
	"encoding/json"
	"errors"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// judgeDo checks a DO block. A DO block has no parameters to carry an epoch, so a
// write to a protected table inside it is refused, not fenced.
func judgeDo(p *Policy, s *pg.DoStmt) *Error {
	body, lang := "", "plpgsql"
	for _, a := range s.Args {
		d := a.GetDefElem()
		switch {
		case d == nil:
		case d.Defname == "as":
			body = d.Arg.GetString_().GetSval()
		case d.Defname == "language":
			lang = d.Arg.GetString_().GetSval()
		}
	}
	if lang != "plpgsql" {
		return refuse(rulecode.UnreadableBody, nil, "a DO block in language "+lang+", which sqlfence cannot read",
			"run the statements as plain statements through the driver")
	}
	tag := "$sqlfence_do$"
	for strings.Contains(body, tag) {
		tag = "$x" + tag[1:]
	}
	return judgePlpgsql(p, "a DO block", body, "CREATE FUNCTION sqlfence_do() RETURNS void LANGUAGE plpgsql AS "+tag+body+tag)
}

// judgePlpgsql checks the PL/pgSQL routine body that the CREATE FUNCTION or CREATE
// PROCEDURE statement create defines, with pg_query's PL/pgSQL parser. The body's own
// text is held to the parser's bounds as PL/pgSQL (pgtree.ParsePlpgsql): in create it
// is one string token the bounds cannot see into, and its statements nest.
func judgePlpgsql(p *Policy, what, body, create string) *Error {
	unreadable := refuse(rulecode.UnreadableBody, nil, what+" that sqlfence cannot read", "run the statements as plain statements through the driver")
	for _, text := range []string{body, create} {
		if e := tooLarge(text); e != nil {
			e.Reason = what + ": " + e.Reason
			return e
		}
	}
	out, err := pgtree.ParsePlpgsql(create, body)
	var be *pgtree.BoundsError
	if errors.As(err, &be) {
		return refuse(rulecode.TooDeep, nil, what+": the body is "+be.Error(), "split it into simpler statements")
	}
	if err != nil {
		unreadable.Reason += " (" + err.Error() + ")"
		return unreadable
	}
	var tree any
	if json.Unmarshal([]byte(out), &tree) != nil {
		return unreadable
	}
	var result *Error
	var visit func(v any)
	visit = func(v any) {
		if result != nil {
			return
		}
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				visit(e)
			}
		case map[string]any:
			for k, e := range v {
				switch k {
				case "PLpgSQL_stmt_dynexecute", "PLpgSQL_stmt_dynfors":
					// Refused whatever the routine is marked: a STABLE function's EXECUTE
					// cannot write itself, but it can call a VOLATILE one that does.
					result = refuse(rulecode.DynamicSQL, nil, what+" runs dynamic SQL (EXECUTE), which sqlfence cannot read",
						"write the statements out in the body, or run them as plain statements through the driver")
					return
				case "PLpgSQL_stmt_open", "PLpgSQL_stmt_return_query":
					if m, ok := e.(map[string]any); ok && m["dynquery"] != nil {
						result = refuse(rulecode.DynamicSQL, nil, what+" runs dynamic SQL (EXECUTE), which sqlfence cannot read",
							"write the statements out in the body, or run them as plain statements through the driver")
						return
					}
				case "PLpgSQL_expr":
					m, _ := e.(map[string]any)
					q, _ := m["query"].(string)
					mode, _ := m["parseMode"].(float64)
					result = judgeBodyText(p, what, plpgsqlStatement(q, int(mode)))
					return
				}
				visit(e)
			}
		}
	}
	visit(tree)
	return result
}

// plpgsqlStatement turns a PL/pgSQL expression into SQL the parser reads: a whole
// statement (mode 0) as it is, a type name (mode 1) as a cast to it, an expression
// (mode 2) as a SELECT of it, an assignment (modes 3 to 5, "target := expr") as a
// SELECT of its target and its right-hand side: the target's subscripts and slices
// (a[i], a[i:j], r.f[i][j]) are expressions the server evaluates too. The := or = is
// the first one outside brackets and parentheses, so a subscript's own = stays in the
// target. "" means it cannot be read.
func plpgsqlStatement(q string, mode int) string {
	switch mode {
	case 0:
		return q
	case 1:
		return "SELECT NULL::" + q // a type name
	case 2:
		return "SELECT " + q
	case 3, 4, 5:
		scan, err := pgquery.Scan(q)
		if err != nil {
			return ""
		}
		depth := 0
		for _, t := range scan.Tokens {
			switch t.Token {
			case pg.Token_ASCII_40, pg.Token_ASCII_91: // ( [
				depth++
			case pg.Token_ASCII_41, pg.Token_ASCII_93: // ) ]
				depth--
			case pg.Token_COLON_EQUALS, pg.Token_ASCII_61:
				if depth == 0 {
					return "SELECT " + q[:t.Start] + ", " + q[t.End:]
				}
			}
		}
	}
	return ""
}

// judgeBodyText judges one statement of a routine body: admitted like a statement
// sent through the driver, and writing neither a protected table (no epoch reaches a
// body) nor a claim table.
func judgeBodyText(p *Policy, what, q string) *Error {
	if q == "" {
		return refuse(rulecode.UnreadableBody, nil, what+" holds an expression sqlfence cannot read", "run the statements as plain statements through the driver")
	}
	tree, e := parseBounded(q)
	if e != nil {
		e.Reason = what + ": " + e.Reason
		return e
	}
	for _, raw := range tree.Stmts {
		if e := admitStatement(p, raw.Stmt); e != nil {
			e.Reason = what + ": " + e.Reason
			return e
		}
	}
	if e := refuseBodyReset(what, tree); e != nil {
		return e
	}
	writes, e := findWrites(p, tree)
	if e != nil {
		return e
	}
	if len(writes) > 0 {
		return refuse(rulecode.BodyWrites, writes[0].table, what+" writes the protected table, and no epoch reaches inside it",
			"run the write as a plain statement under sqlfence.WithEpoch")
	}
	if c := claimWrite(p, tree); c != nil {
		return refuse(rulecode.ClaimWrite, nil, what+" writes the claim table "+c.QualifiedName.String(),
			"claim jobs with the helpers in github.com/sqlfence/sqlfence/claim")
	}
	return nil
}

// judgeSQLBody judges the body of a LANGUAGE sql routine given as a string.
func judgeSQLBody(p *Policy, what, body string) *Error {
	return judgeBodyText(p, what, body)
}

// tooLarge refuses text larger than the 1 MiB sqlfence parses.
func tooLarge(text string) *Error {
	if len(text) > MaxStatementBytes {
		return refuse(rulecode.TooLarge, nil, "a statement or body of more than the 1 MiB sqlfence parses", "split it")
	}
	return nil
}

// parseBounded parses SQL text of a body, within the parser's bounds (pgtree.Parse).
func parseBounded(text string) (*pg.ParseResult, *Error) {
	if e := tooLarge(text); e != nil {
		return nil, e
	}
	tree, err := pgtree.Parse(text, pgtree.Limit)
	var be *pgtree.BoundsError
	if errors.As(err, &be) {
		return nil, refuse(rulecode.TooDeep, nil, "the text is "+be.Error(), "split it into simpler statements")
	}
	if err != nil {
		return nil, refuse(rulecode.ParseError, nil, "cannot parse: "+err.Error(), "fix the SQL syntax; sqlfence never sends what it cannot read")
	}
	return tree, nil
}
