// DO blocks: the PL/pgSQL body parsed and every statement in it judged.

package sqlfence

import (
	"encoding/json"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/sqlident"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// doBlock checks a DO block. The body is PL/pgSQL, which the SQL parser does not
// see into; pg_query's PL/pgSQL parser does, and every SQL statement and expression
// in it is checked like a statement of its own. A DO block has no parameters to carry
// an epoch, so a write to a protected table inside it is refused, not fenced; so is
// SQL text built from literals that name a protected table (EXECUTE 'UPDATE …'), and
// any body that cannot be parsed and mentions one.
func doBlock(p *Policy, s *pg.DoStmt) *Error {
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
	needles := needlesOf(p)
	if !mayTouchProtected(needles, body) {
		return nil
	}
	opaque := refuse(mentionedTable(p, body), "a DO block that sqlfence cannot read mentions a protected table",
		"run the writes as plain statements under sqlfence.WithEpoch")
	if lang != "plpgsql" {
		return opaque
	}
	tag := "$sqlfence_do$"
	for strings.Contains(body, tag) {
		tag = "$x" + tag[1:]
	}
	out, err := pg.ParsePlPgSqlToJSON("CREATE FUNCTION sqlfence_do() RETURNS void LANGUAGE plpgsql AS " + tag + body + tag)
	if err != nil {
		return opaque
	}
	var tree any
	if json.Unmarshal([]byte(out), &tree) != nil {
		return opaque
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
			if e, ok := v["PLpgSQL_expr"].(map[string]any); ok {
				q, _ := e["query"].(string)
				if mode, _ := e["parseMode"].(float64); mode != 0 {
					q = "SELECT " + q
				}
				result = doStatement(p, needles, q, opaque)
				return
			}
			for _, e := range v {
				visit(e)
			}
		}
	}
	visit(tree)
	return result
}

// mentionedTable returns the first protected table whose name appears in text.
func mentionedTable(p *Policy, text string) *Table {
	for i := range p.Tables {
		if containsFold(text, sqlident.Fold(p.Tables[i].Name)) {
			return &p.Tables[i]
		}
	}
	return nil
}

func doStatement(p *Policy, needles []string, q string, opaque *Error) *Error {
	if !mayTouchProtected(needles, q) {
		return nil
	}
	tree, err := pg.Parse(q)
	if err != nil {
		return opaque
	}
	writes, e := findWrites(p, tree)
	if e != nil {
		return e
	}
	if len(writes) > 0 {
		return refuse(writes[0].table, "a DO block writes the protected table, and a DO block has no parameter to carry the epoch",
			"run the write as a plain statement under sqlfence.WithEpoch")
	}
	if c := claimWrite(p, tree); c != nil {
		return refuse(nil, "a DO block writes the claim table "+c.QualifiedName.String(),
			"claim jobs with the helpers in github.com/sqlfence/sqlfence/claim")
	}
	var literal *Error
	pgtree.Walk(tree.ProtoReflect(), func(m protoreflect.Message) bool {
		if c, ok := m.Interface().(*pg.A_Const); ok && mayTouchProtected(needles, c.GetSval().GetSval()) {
			literal = refuse(mentionedTable(p, c.GetSval().GetSval()), "a DO block builds SQL text that names a protected table (dynamic EXECUTE cannot be fenced)",
				"run the write as a plain statement under sqlfence.WithEpoch")
		}
		return literal == nil
	})
	return literal
}
