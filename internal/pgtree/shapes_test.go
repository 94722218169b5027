package pgtree

import (
	"strings"
)

// A shape is a family of statements whose tree deepens with n: every construct the
// measure's argument names, alone and in the combinations that make the most nodes
// per counted token. The bounds tests, the fuzzer's seeds and the stack measurement
// (stack_test.go) share them.
type shape struct {
	name    string
	plpgsql bool // body of a PL/pgSQL function: gen returns the body
	gen     func(n int) string
}

func rep(s string, n int) string { return strings.Repeat(s, n) }

// nest wraps inner in n copies of open … close.
func nest(open, inner, close string, n int) string { return rep(open, n) + inner + rep(close, n) }

var shapes = []shape{
	// Left-deep and postfix chains: the shapes that crash (the grammar's own stack
	// does not grow with them).
	{"plus", false, func(n int) string { return "SELECT " + rep("1+", n) + "1" }},
	{"concat", false, func(n int) string { return "SELECT " + rep("a || ", n) + "a" }},
	{"compare", false, func(n int) string { return "SELECT " + rep("a = a AND ", n) + "true" }},
	{"cast", false, func(n int) string { return "SELECT x" + rep("::int", n) }},
	{"isnull", false, func(n int) string { return "SELECT x" + rep(" IS NULL", n) }},
	{"isnotnull", false, func(n int) string { return "SELECT x" + rep(" IS NOT NULL", n) }},
	{"collate", false, func(n int) string { return "SELECT x" + rep(` COLLATE "C"`, n) }},
	{"attz", false, func(n int) string { return "SELECT x" + rep(` AT TIME ZONE 'UTC'`, n) }},
	{"isjson", false, func(n int) string { return "SELECT x" + rep(" IS JSON", n) }},
	{"union", false, func(n int) string { return "SELECT 1, 2" + rep(" UNION SELECT 1, 2", n) }},
	{"unionall", false, func(n int) string { return "SELECT 1" + rep(" UNION ALL SELECT 1", n) }},
	{"join", false, func(n int) string { return "SELECT * FROM a" + rep(" JOIN a ON true", n) }},
	{"crossjoin", false, func(n int) string { return "SELECT * FROM a" + rep(" CROSS JOIN a", n) }},
	{"naturaljoin", false, func(n int) string { return "SELECT * FROM a" + rep(" NATURAL JOIN a", n) }},
	{"joinand", false, func(n int) string { return "SELECT * FROM a" + rep(" JOIN a ON x = y AND y = z OR w", n) }},
	{"update", false, func(n int) string { return "UPDATE t SET a = " + rep("a+", n) + "1 WHERE b = 1" }},
	// Prefix chains, right-nested through the grammar's stack.
	{"not", false, func(n int) string { return "SELECT " + rep("NOT ", n) + "x" }},
	{"neg", false, func(n int) string { return "SELECT " + rep("- ", n) + "x" }},
	{"rjoin", false, func(n int) string { return "SELECT * FROM " + nest("a JOIN ", "a", " ON true", n) }},
	{"rassoc", false, func(n int) string { return "SELECT " + nest("x = (", "1", ")", n) }},
	// Brackets.
	{"parens", false, func(n int) string { return "SELECT " + nest("(", "1", ")", n) }},
	{"subquery", false, func(n int) string { return "SELECT " + nest("(SELECT ", "1", ")", n) }},
	{"subquerycomma", false, func(n int) string { return "SELECT " + nest("(SELECT 1, ", "1", ")", n) }},
	{"subqueryboolsub", false, func(n int) string { return "SELECT " + nest("(SELECT 1, x OR y AND ", "1", ")[1]", n) }},
	{"subscriptbool", false, func(n int) string { return "SELECT " + nest("a[x OR y AND ", "1", "]", n) }},
	{"subscript", false, func(n int) string { return "SELECT " + nest("a[", "1", "]", n) }},
	{"func", false, func(n int) string { return "SELECT " + nest("f(", "1", ")", n) }},
	{"funccomma", false, func(n int) string { return "SELECT " + nest("f(1, x OR y AND ", "1", ")", n) }},
	{"namedarg", false, func(n int) string { return "SELECT " + nest("f(a => ", "1", ")", n) }},
	{"row", false, func(n int) string { return "SELECT " + nest("(1, ", "1", ")", n) }},
	{"rowkw", false, func(n int) string { return "SELECT " + nest("ROW(", "1", ")", n) }},
	{"array", false, func(n int) string { return "SELECT " + nest("ARRAY[1, ", "1", "]", n) }},
	{"indirection", false, func(n int) string { return "SELECT " + nest("(", "x", ").a", n) }},
	{"exists", false, func(n int) string { return "SELECT " + nest("EXISTS (SELECT ", "1", ")", n) }},
	{"in", false, func(n int) string { return "SELECT " + nest("x IN (1, ", "1", ")", n) }},
	{"notin", false, func(n int) string { return "SELECT " + nest("x NOT IN (SELECT ", "1", ")", n) }},
	{"any", false, func(n int) string { return "SELECT " + nest("x = ANY (", "a", ")", n) }},
	{"between", false, func(n int) string { return "SELECT " + nest("x BETWEEN 1 AND (", "1", ")", n) }},
	{"like", false, func(n int) string { return "SELECT " + nest("x LIKE (", "1", ") ESCAPE 'a'", n) }},
	{"coalesce", false, func(n int) string { return "SELECT " + nest("COALESCE(1, ", "1", ")", n) }},
	{"castkw", false, func(n int) string { return "SELECT " + nest("CAST(", "1", " AS int)", n) }},
	{"case", false, func(n int) string { return "SELECT " + nest("CASE WHEN x THEN ", "1", " END", n) }},
	{"caseelse", false, func(n int) string { return "SELECT " + nest("CASE WHEN x THEN 1 ELSE ", "1", " END", n) }},
	{"casewhen", false, func(n int) string { return "SELECT " + nest("CASE WHEN ", "x", " THEN 1 END", n) }},
	{"casearg", false, func(n int) string { return "SELECT " + nest("CASE ", "x", " WHEN 1 THEN 1 END", n) }},
	{"casewide", false, func(n int) string { return "SELECT CASE x" + rep(" WHEN 1 THEN 2", n) + " END" }},
	{"fromsub", false, func(n int) string { return "SELECT * FROM " + nest("(SELECT * FROM ", "t", ") s", n) }},
	{"lateral", false, func(n int) string { return "SELECT * FROM " + nest("a, LATERAL (SELECT * FROM ", "t", ") s", n) }},
	{"fromfunc", false, func(n int) string { return "SELECT * FROM " + nest("a, f((SELECT * FROM ", "t", "))", n) }},
	{"pjoin", false, func(n int) string { return "SELECT * FROM " + nest("a JOIN (", "a CROSS JOIN a", ") ON true", n) }},
	{"cte", false, func(n int) string { return nest("WITH a AS (", "SELECT 1", ") SELECT 1", n) }},
	{"ctecomma", false, func(n int) string { return nest("WITH b AS (SELECT 1), a AS (", "SELECT 1", ") SELECT 1", n) }},
	{"psetop", false, func(n int) string { return nest("(", "SELECT 1", ") UNION SELECT 1", n) }},
	{"rsetop", false, func(n int) string { return nest("SELECT 1 UNION (", "SELECT 1", ")", n) }},
	{"values", false, func(n int) string { return nest("VALUES (1, (", "1", "))", n) }},
	{"valuessub", false, func(n int) string { return "SELECT " + nest("(VALUES (1, ", "1", "))", n) }},
	{"jsonobject", false, func(n int) string { return "SELECT " + nest("JSON_OBJECT('a': ", "1", ")", n) }},
	{"andor", false, func(n int) string { return "SELECT " + nest("x AND (y OR ", "z", ")", n) }},
	{"notparens", false, func(n int) string { return "SELECT " + nest("NOT (x AND ", "y", ")", n) }},
	{"insertvalues", false, func(n int) string { return "INSERT INTO t VALUES " + nest("((SELECT ", "1", "))", n) }},
	{"onconflict", false, func(n int) string {
		return "INSERT INTO t VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 1, b = " + nest("(", "1", ")", n)
	}},
	{"merge", false, func(n int) string {
		return "MERGE INTO t USING s ON true WHEN MATCHED AND x THEN UPDATE SET a = 1, b = " + nest("(SELECT 1, ", "1", ")", n)
	}},
	{"explain", false, func(n int) string {
		return "EXPLAIN ANALYZE CREATE TABLE t AS WITH c AS (SELECT 1) SELECT 1, " + nest("(SELECT 1, ", "1", ")", n) + " FOR UPDATE OF a, b"
	}},
	{"atomic", false, func(n int) string {
		return "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 1, " + nest("(SELECT 1, ", "1", ")", n) + "; END"
	}},
	// The problem statement: nesting whose every level holds a long chain.
	{"parenchain", false, func(n int) string { return "SELECT " + nest("(1"+rep("+1", 900)+"+", "1", ")", n) }},
	{"parenchain10", false, func(n int) string { return "SELECT " + nest("(1"+rep("+1", 10)+"+", "1", ")", n) }},
	// PL/pgSQL bodies.
	{"ifs", true, func(n int) string { return "BEGIN " + nest("IF x THEN ", "NULL;", " END IF;", n) + " END" }},
	{"elses", true, func(n int) string { return "BEGIN " + nest("IF x THEN NULL; ELSE ", "NULL;", " END IF;", n) + " END" }},
	{"loops", true, func(n int) string { return "BEGIN " + nest("LOOP ", "EXIT;", " END LOOP;", n) + " END" }},
	{"whiles", true, func(n int) string { return "BEGIN " + nest("WHILE x LOOP ", "EXIT;", " END LOOP;", n) + " END" }},
	{"fors", true, func(n int) string { return "BEGIN " + nest("FOR i IN 1..2 LOOP ", "NULL;", " END LOOP;", n) + " END" }},
	{"blocks", true, func(n int) string { return nest("BEGIN ", "NULL;", " END;", n) }},
	{"handlers", true, func(n int) string {
		return nest("BEGIN NULL; EXCEPTION WHEN others THEN ", "NULL;", " END;", n)
	}},
	{"casestmts", true, func(n int) string { return "BEGIN " + nest("CASE WHEN x THEN ", "NULL;", " END CASE;", n) + " END" }},
	{"ifexists", true, func(n int) string {
		return "BEGIN " + rep("DROP TABLE IF EXISTS t; IF EXISTS (SELECT 1) THEN NULL; END IF; ", n) + "END"
	}},
	{"expr", true, func(n int) string { return "DECLARE x int; BEGIN x := " + rep("1+", n) + "1; END" }},
}

// plpgsqlFunction wraps a PL/pgSQL body into the statement pg_query's PL/pgSQL
// parser reads.
func plpgsqlFunction(body string) string {
	tag := "$b$"
	for strings.Contains(body, tag) {
		tag = "$x" + tag[1:]
	}
	return "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS " + tag + body + tag
}
