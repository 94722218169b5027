package check

import (
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
	"github.com/sqlfence/sqlfence/internal/rulecode"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// A trigger on another table whose function writes a protected table moves that write
// inside the database, where no epoch reaches: every write that fires it — through
// the driver too — writes the protected table unfenced (and the guard rejects it). The
// function's CREATE is a finding of its own; the trigger is reported too, because it
// is what puts the write on another table's path. Functions are matched by name
// across every file checked, so a trigger in one migration finds a function created in
// an earlier one.

// writerFuncs maps a function's name (without schema) to the protected table its
// body writes, for the functions created in the files checked.
type writerFuncs map[string]string

// collectWriters reads the CREATE FUNCTION statements of every file. Files that do
// not parse are skipped here; linting reports them.
func collectWriters(pol *sqlfence.Policy, srcs [][]byte) writerFuncs {
	w := writerFuncs{}
	for _, src := range srcs {
		text := string(src)
		if len(src) > maxSQLFileBytes || !utf8.ValidString(text) {
			continue
		}
		scan, err := pgquery.Scan(text)
		if err != nil {
			continue
		}
		if _, msg := pgtree.Bounds(scan.Tokens); msg != "" {
			continue
		}
		tree, err := pgtree.ParseScanned(text, scan.Tokens, pgtree.Limit)
		if err != nil {
			continue
		}
		for _, raw := range tree.Stmts {
			cf := raw.Stmt.GetCreateFunctionStmt()
			if cf == nil {
				continue
			}
			end := len(text)
			if raw.StmtLen > 0 {
				end = int(raw.StmtLocation + raw.StmtLen)
			}
			if err := pol.Plan(text[raw.StmtLocation:end]).Err; err == nil {
				continue
			} else if table, _ := refusal(err); table != "" {
				_, name := pgtree.FuncName(cf.Funcname)
				w[name] = table
			}
		}
	}
	return w
}

// triggerFinding reports a CREATE TRIGGER whose function writes a protected table.
func (w writerFuncs) triggerFinding(stmt *pg.Node) (finding, bool) {
	tr := stmt.GetCreateTrigStmt()
	if tr == nil {
		return finding{}, false
	}
	_, fn := pgtree.FuncName(tr.Funcname)
	table, ok := w[fn]
	if !ok {
		return finding{}, false
	}
	rel := sqlident.QuoteQualified(tr.Relation.GetRelname())
	if s := tr.Relation.GetSchemaname(); s != "" {
		rel = sqlident.QuoteQualified(s, tr.Relation.GetRelname())
	}
	var events []string
	for _, e := range []struct {
		bit  int32
		name string
	}{{1 << 2, "INSERT"}, {1 << 4, "UPDATE"}, {1 << 3, "DELETE"}, {1 << 5, "TRUNCATE"}} {
		if tr.Events&e.bit != 0 {
			events = append(events, e.name)
		}
	}
	return finding{Rule: rulecode.Trigger, Table: table,
		Message: "cannot be fenced: the trigger " + sqlident.Quote(tr.Trigname) + " on " + rel + " runs " + sqlident.Quote(fn) +
			"(), which writes the protected table " + table + ": every " + strings.Join(events, ", ") + " of " + rel +
			" then writes " + table + " where no epoch reaches (with the guard installed, the database rejects those writes). " +
			"Fix: write " + table + " with statements of its own under an epoch, not from a trigger"}, true
}
