package sqlfence_test

// The search's session cases (search_test.go): what a decision assumes of the session
// — its pinned settings, that pgx reads its arguments as values — attacked where the
// server runs the statement. A setting gets a bad default from the database or the
// role, the connection sets the good value after connect (a pool's AfterConnect) or
// in its startup parameters, and a reset in a batch, a multi-statement text, a
// transaction or a statement of its own comes before a text that reads as a plain
// SELECT with the good value and as an unfenced write with the bad one; every exec
// mode. Or a query rewriter returns arguments that begin with pgx's options: another
// rewriter to an unfenced write, an exec mode, result formats.

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// srchPinned are the settings, each with its bad default, its good value and texts
// that change protected rows when the server reads them under the bad default.
var srchPinned = []struct {
	name, bad, good string
	flips           []string
}{
	{"standard_conforming_strings", "off", "on", []string{
		`WITH a AS (SELECT 'x\', ' AS s), u AS (UPDATE inventory SET quantity = 0 RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a`,
		`WITH a AS (SELECT 'x\', ' AS s), u AS (DELETE FROM inventory RETURNING 1) SELECT count(*) FROM u --') SELECT count(*) FROM a`,
		`SELECT 'a\' /*'; DELETE FROM inventory WHERE sku = $$a$$; --*/`,
	}},
	{"client_encoding", "SJIS", "UTF8", []string{
		`SELECT E'さ\'; DELETE FROM inventory WHERE sku = $$a$$; --'`,
	}},
	{"synchronous_commit", "off", "on", []string{
		`UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'a'`,
	}},
	{"session_replication_role", "replica", "origin", []string{
		`UPDATE inventory SET quantity = quantity + 1 WHERE sku = 'a'`,
	}},
}

// srchResets are the statements that may return a setting (%s) to its default, and
// some that look alike and do not.
var srchResets = []string{
	`RESET ALL`, `DISCARD ALL`, `RESET %s`, `SET %s TO DEFAULT`, `SET %s = DEFAULT`, `SET LOCAL %s TO DEFAULT`,
	`SET SESSION %s TO DEFAULT`, `reset all`, `RESET ROLE`, `RESET SESSION AUTHORIZATION`, `SET SESSION AUTHORIZATION DEFAULT`,
	`SELECT set_config('%s', NULL, false)`, `DISCARD PLANS`, `DEALLOCATE ALL`,
}

// srchUnfenced are writes a rewriter's nested rewriter turns a read into.
var srchUnfenced = []string{
	`UPDATE inventory SET quantity = 0`,
	`DELETE FROM inventory WHERE sku = 'a'`,
	`WITH u AS (UPDATE inventory SET quantity = 1 RETURNING 1) SELECT count(*) FROM u`,
	`UPDATE billing.invoices SET total = 0`,
}

var srchOptions = []string{"rw", "exec", "simple_protocol", "describe_exec", "cache_statement", "cache_describe", "formats", "formats_oid"}

// srchSessionCase derives session case n of the search seeded with seed.
func srchSessionCase(seed uint64, n int) *atkCase {
	r := rand.New(rand.NewPCG(seed^0x5e55105, uint64(n)))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	modes := slices.Sorted(maps.Keys(atkModes)) // sorted: a case replays from its seed
	c := &atkCase{file: "search", name: fmt.Sprintf("search-%d-%d", seed, n), class: "text-reading", policy: "default", open: "connector",
		mode: pick(modes)}
	if r.IntN(4) == 0 {
		// A rewriter whose returned arguments begin with pgx's options.
		c.class = "fence-meaning"
		var opts []string
		if r.IntN(5) < 3 {
			opts = append(opts, "rw") // the nested rewriter is what turns the read into a write
		}
		for range r.IntN(3) {
			opts = append(opts, pick(srchOptions))
		}
		kind := "exec"
		if r.IntN(2) == 0 {
			kind = "query"
		}
		text := pick([]string{`SELECT $1::int`, `SELECT $1::text`, `SELECT 1 WHERE $1::text IS NOT NULL`})
		var arg any = int64(1)
		if strings.Contains(text, "text") {
			arg = "x'); DELETE FROM inventory; --"
		}
		c.steps = append(c.steps, &atkStep{kind: kind, sql: text, rewrite: true, rwargs: opts, rewriteTo: pick(srchUnfenced), args: []any{arg}})
		return c
	}
	// standard_conforming_strings is the setting whose reset shows on the data: the
	// others' harms (commits acknowledged early, the guard's triggers off) do not.
	set := srchPinned[0]
	if r.IntN(5) < 2 {
		set = srchPinned[1+r.IntN(len(srchPinned)-1)]
	}
	if r.IntN(2) == 0 {
		c.setup = fmt.Sprintf("ALTER DATABASE ${db} SET %s = %s;", set.name, set.bad)
	} else {
		c.setup = fmt.Sprintf("ALTER ROLE ${user} IN DATABASE ${db} SET %s = %s;", set.name, set.bad)
	}
	switch r.IntN(10) {
	case 0, 1: // in the startup parameters: a reset returns to the good value
		c.dsn = append(c.dsn, set.name+"="+set.good)
	case 2: // nothing: the session starts with the bad value
	default:
		c.afterConnect = append(c.afterConnect, fmt.Sprintf("SET %s = %s", set.name, set.good))
	}
	reset := srchResets[r.IntN(7)] // the resets, mostly; now and then what looks like one
	if r.IntN(10) < 3 {
		reset = pick(srchResets)
	}
	reset = strings.ReplaceAll(reset, "%s", set.name)
	flip := pick(set.flips)
	add := func(kind, sql string) { c.steps = append(c.steps, &atkStep{kind: kind, sql: sql}) }
	if r.IntN(4) == 0 {
		add("reconnect", "")
	}
	switch r.IntN(8) {
	case 0, 1, 2, 3: // a batch (pgx) or a multi-statement text (database/sql)
		stmts := []string{reset, flip}
		if r.IntN(2) == 0 {
			stmts = append([]string{`SELECT 1`}, stmts...)
		}
		if r.IntN(3) == 0 {
			stmts = append(stmts, pick(srchFenced))
		}
		add("batch", strings.Join(stmts, "\n;;\n"))
	case 4, 5: // one text
		add("exec", reset+"; "+flip)
	case 6: // statement by statement
		add("exec", reset)
		add("exec", flip)
	case 7: // in a transaction
		add("exec", "BEGIN")
		add("exec", reset)
		add("exec", flip)
		add("exec", "COMMIT")
	}
	return c
}
