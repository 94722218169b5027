package check

import (
	"errors"
	"go/ast"
	"go/token"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// queryArg says which argument of a method call is the SQL text, by method name and
// argument count. Go code is checked syntactically: the receiver's type is not known,
// so the names are those of database/sql (DB, Tx, Conn, Stmt) and pgx (Conn, Pool, Tx,
// Batch), and only constant strings are read.
func queryArg(method string, nargs int) (int, bool) {
	switch method {
	case "Exec", "Query", "QueryRow":
		// database/sql: Exec(query, args...); pgx: Exec(ctx, sql, args...). The
		// first constant string is the query.
		return -1, nargs >= 1
	case "ExecContext", "QueryContext", "QueryRowContext":
		return 1, nargs >= 2
	case "Prepare":
		if nargs == 3 {
			return 2, true // pgx: Prepare(ctx, name, sql)
		}
		return 0, nargs == 1
	case "PrepareContext":
		return 1, nargs == 2
	case "Queue":
		return 0, nargs >= 1 // pgx Batch.Queue(sql, args...)
	}
	return 0, false
}

func checkGoFile(f *goFile, consts map[string]ast.Expr, pol *sqlfence.Policy, res *result) {
	ln := newLines(f.src)
	off := func(p token.Pos) int { return f.fset.Position(p).Offset }

	// Suppressions apply to calls that start on the comment's line or the next one.
	var all []*suppression
	byLine := map[int][]*suppression{}
	for _, g := range f.file.Comments {
		for _, c := range g.List {
			code, reason, ok := ParseIgnore(c.Text)
			if !ok {
				continue
			}
			// SF805 is the Go analyzer's rule (contrib/analyzer), which reads the same
			// markers: a marker for it is not this linter's to call unused.
			s := &suppression{file: f.path, code: code, reason: reason, used: code == rulecode.DynamicWrite}
			s.line, s.col = ln.pos(off(c.Pos()))
			s.endLine, s.endCol = ln.pos(off(c.End()))
			all = append(all, s)
			byLine[s.line] = append(byLine[s.line], s)
			byLine[s.line+1] = append(byLine[s.line+1], s)
		}
	}
	suppressionFor := func(line int, rule string) *suppression {
		var s []*suppression
		for _, x := range byLine[line] {
			if x.covers(rule) {
				x.used = true
				s = append(s, x)
			}
		}
		if len(s) == 0 {
			return nil
		}
		for _, x := range s {
			if x.reason != "" {
				return x
			}
		}
		return s[0]
	}

	ast.Inspect(f.file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		callLine, _ := ln.pos(off(call.Pos()))
		if sel.Sel.Name == "CopyFrom" && len(call.Args) >= 2 {
			if fnd, bad := copyFromFinding(call.Args, consts, pol); bad {
				fnd.File = f.path
				fnd.Line, fnd.Column = ln.pos(off(call.Pos()))
				fnd.EndLine, fnd.EndColumn = ln.pos(off(call.End()))
				res.Statements++
				report(res, fnd, suppressionFor(callLine, fnd.Rule))
			}
			return true
		}
		idx, ok := queryArg(sel.Sel.Name, len(call.Args))
		if !ok {
			return true
		}
		var (
			arg   ast.Expr
			query string
		)
		if idx >= 0 {
			if s, ok := constString(call.Args[idx], consts, 0); ok {
				arg, query = call.Args[idx], s
			}
		} else {
			for _, a := range call.Args[:min(2, len(call.Args))] {
				if s, ok := constString(a, consts, 0); ok {
					arg, query = a, s
					break
				}
			}
		}
		if arg == nil {
			return true
		}
		// Strings that are not SQL at all (a method of another package that happens
		// to be called Query) are not the linter's business. The driver refuses input
		// past the parser's bounds, and Plan below says so; parsing it here could crash.
		// A statement with ? placeholders does not parse either, but it is SQL the
		// driver refuses (SF321): MySQL habits, or sqlx without the bind type.
		if scan, err := pgquery.Scan(query); err != nil || strings.TrimSpace(query) == "" {
			return true
		} else if _, err := pgtree.ParseScanned(query, scan.Tokens, pgtree.Limit); err != nil && !errors.As(err, new(*pgtree.BoundsError)) &&
			!questionMarkStatement(query, scan.Tokens) {
			return true
		}
		res.Statements++
		plan := pol.Plan(query)
		if plan.Err == nil {
			return true
		}
		table, msg := refusal(plan.Err)
		fnd := finding{File: f.path, Rule: codeOf(plan.Err, ""), Table: table,
			Message: "the sqlfence driver refuses this statement: " + msg, Statement: excerpt(query)}
		start, stop := off(arg.Pos()), off(arg.End())
		// In a single raw string literal, point at the statement itself.
		if lit, ok := arg.(*ast.BasicLit); ok && strings.HasPrefix(lit.Value, "`") && !strings.Contains(lit.Value, "\r") {
			body := lit.Value[1 : len(lit.Value)-1]
			lead := len(body) - len(strings.TrimLeft(body, " \t\n"))
			trail := len(strings.TrimRight(body, " \t\n;"))
			if trail > lead {
				start, stop = start+1+lead, start+1+trail
			}
		}
		fnd.Line, fnd.Column = ln.pos(start)
		fnd.EndLine, fnd.EndColumn = ln.pos(stop)
		report(res, fnd, suppressionFor(callLine, fnd.Rule))
		return true
	})
	settle(res, all)
}

// copyFromFinding judges pgx's CopyFrom(ctx, table, columns, src) as the pgx front
// decides it: as the INSERT the copy amounts to (front.CopyInsert). Into one protected
// table the front stamps the epoch on every row, so only what the INSERT would be
// refused for (the epoch column among the columns, …) and a copy into a relation over
// several protected tables are findings. Names that are not constants are not seen.
func copyFromFinding(args []ast.Expr, consts map[string]ast.Expr, pol *sqlfence.Policy) (finding, bool) {
	if len(args) < 3 {
		return finding{}, false
	}
	table, ok := constList(args[1], consts)
	if !ok || len(table) == 0 || len(table) > 2 {
		return finding{}, false
	}
	columns, ok := constList(args[2], consts)
	if !ok || len(columns) == 0 {
		return finding{}, false
	}
	insert := front.CopyInsert(table, columns)
	plan := pol.Plan(insert)
	err := plan.Err
	if err == nil && len(plan.Tables) > 1 {
		err = &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.CopyFrom, Table: plan.Tables[0], Statement: insert,
			Reason: front.CopyManyReason, Fix: front.CopyManyFix}
	}
	if err == nil {
		return finding{}, false
	}
	t, msg := refusal(err)
	return finding{Rule: codeOf(err, rulecode.CopyFrom), Table: t,
		Message:   "the sqlfence driver refuses this CopyFrom, decided as " + insert + ": " + msg,
		Statement: "CopyFrom(" + strings.Join(table, ".") + ")"}, true
}

// constList is the strings of a composite literal of constants (pgx.Identifier{…},
// []string{…}).
func constList(arg ast.Expr, consts map[string]ast.Expr) ([]string, bool) {
	lit, ok := arg.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	parts := make([]string, 0, len(lit.Elts))
	for _, e := range lit.Elts {
		s, ok := constString(e, consts, 0)
		if !ok {
			return nil, false
		}
		parts = append(parts, s)
	}
	return parts, true
}

// questionMarkStatement says whether text that does not parse is a statement with ?
// placeholders: it starts as a statement does and has a ? outside literals (?| and ?&
// are jsonb operators).
func questionMarkStatement(query string, toks []*pg.ScanToken) bool {
	if len(toks) == 0 {
		return false
	}
	switch toks[0].Token {
	case pg.Token_SELECT, pg.Token_INSERT, pg.Token_UPDATE, pg.Token_DELETE_P, pg.Token_WITH, pg.Token_MERGE, pg.Token_VALUES:
	default:
		return false
	}
	for _, t := range toks {
		if op := query[t.Start:t.End]; t.Token == pg.Token_Op && strings.Contains(op, "?") && op != "?|" && op != "?&" {
			return true
		}
	}
	return false
}
