package engine

import (
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// TestSynchronousCommit: every way a statement can turn synchronous_commit off or to
// local is refused (SF417), whatever the spelling; the durable values, DEFAULT and
// RESET pass. Each text is decided by analysis and again through an engine whose
// cache has seen a text of the same shape with a durable value.
func TestSynchronousCommit(t *testing.T) {
	plain := testPolicy(t)
	ddl := testPolicy(t)
	ddl.AllowDDL = true
	fn := func(oid uint32, name string, config ...string) pgcatalog.Function {
		return pgcatalog.Function{OID: oid, Schema: "public", Name: name, Kind: "f", Volatility: "v", Language: "sql",
			Definition: "CREATE FUNCTION public." + name + "() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$", Config: config}
	}
	catalog := testPolicy(t).withSnapshot(&pgcatalog.Snapshot{Functions: []pgcatalog.Function{
		fn(1, "fast", "synchronous_commit=off"),
		fn(2, "local_commit", "work_mem=64MB", "synchronous_commit=LOCAL"),
		fn(3, "durable", "synchronous_commit=remote_apply"),
		{OID: 4, Schema: "public", Name: "sneaky", Kind: "f", Volatility: "v", Language: "sql",
			Definition: "CREATE FUNCTION public.sneaky() RETURNS text LANGUAGE sql AS $$ SELECT set_config('synchronous_commit', 'off', false) $$"},
	}}, nil)
	const sf417 = rulecode.SynchronousCommit
	for _, c := range []struct {
		p    *Policy
		sql  string
		code string // "" passes
	}{
		// SET, SET SESSION, SET LOCAL, TO and =, keywords, strings, numbers, case.
		{plain, "SET synchronous_commit = off", sf417},
		{plain, "SET synchronous_commit TO off", sf417},
		{plain, "SET SESSION synchronous_commit = off", sf417},
		{plain, "SET LOCAL synchronous_commit = off", sf417},
		{plain, "SET synchronous_commit TO 'off'", sf417},
		{plain, "SET synchronous_commit = 'OFF'", sf417},
		{plain, "SET synchronous_commit = E'off'", sf417},
		{plain, "SET synchronous_commit = U&'\\006Ff\\0066'", sf417},
		{plain, "SET synchronous_commit = false", sf417},
		{plain, "SET synchronous_commit = 'False'", sf417},
		{plain, "SET synchronous_commit = no", sf417},
		{plain, "SET synchronous_commit = 0", sf417},
		{plain, "SET synchronous_commit = '0'", sf417},
		{plain, "SET synchronous_commit = local", sf417},
		{plain, "SET synchronous_commit = 'LOCAL'", sf417},
		{plain, "SET LOCAL synchronous_commit TO 'Local'", sf417},
		{plain, `SET "synchronous_commit" = off`, sf417},
		{plain, `SET "Synchronous_Commit" = off`, sf417}, // the server finds settings case-insensitively
		{plain, "SET SYNCHRONOUS_COMMIT = OFF", sf417},
		{plain, "SET synchronous_commit = -1", sf417},      // rejected by the server; refused here
		{plain, "SET synchronous_commit = 1.0", sf417},     // likewise
		{plain, "SET synchronous_commit = ' on'", sf417},   // likewise: not a value the server knows
		{plain, "SET synchronous_commit = on, off", sf417}, // a list: not one value
		{plain, "BEGIN; SET LOCAL synchronous_commit = off; COMMIT", sf417},
		{plain, "DO $$ BEGIN SET LOCAL synchronous_commit = off; END $$", sf417},
		{plain, "DO $$ BEGIN PERFORM set_config('synchronous_commit', 'off', true); END $$", sf417},
		// set_config in any statement, any position.
		{plain, "SELECT set_config('synchronous_commit', 'off', false)", sf417},
		{plain, "SELECT set_config('synchronous_commit', 'local', true)", sf417},
		{plain, "SELECT set_config('SYNCHRONOUS_COMMIT', 'Off', false)", sf417},
		{plain, "SELECT set_config('synchronous_commit'::text, 'off', false)", sf417},
		{plain, "SELECT pg_catalog.set_config('synchronous_commit', 'false', false)", sf417},
		{plain, "SELECT set_config('synchronous_commit', $1, false)", sf417},          // a value sqlfence cannot read
		{plain, "SELECT set_config('synchronous_commit', 'o' || 'ff', false)", sf417}, // likewise
		{plain, "SELECT set_config('synchronous_commit', 'off'::text, false)", sf417},
		{plain, "SELECT set_config('synchronous_commit', is_local => false, new_value => 'off')", sf417},
		{plain, "SELECT 1 FROM staging WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL", sf417},
		{plain, "WITH s AS (SELECT set_config('synchronous_commit', 'off', true)) SELECT * FROM s", sf417},
		{plain, "UPDATE staging SET n = set_config('synchronous_commit', 'off', true)", sf417},
		{plain, "SELECT set_config(setting_name => 'synchronous_commit', new_value => 'off', is_local => true)", rulecode.Setting},
		// Defaults and DDL: refused anyway.
		{plain, "ALTER ROLE app SET synchronous_commit = off", rulecode.NotAllowlisted},
		{ddl, "ALTER ROLE app SET synchronous_commit = off", rulecode.Defaults},
		{ddl, "ALTER DATABASE app SET synchronous_commit = local", rulecode.Defaults},
		{ddl, "ALTER ROLE app IN DATABASE app SET synchronous_commit = off", rulecode.Defaults},
		{ddl, "ALTER SYSTEM SET synchronous_commit = off", rulecode.Defaults},
		{ddl, "ALTER FUNCTION f() SET synchronous_commit = off", rulecode.CodeDDL},
		{ddl, "CREATE FUNCTION f() RETURNS int LANGUAGE sql SET synchronous_commit = off AS $$ SELECT 1 $$", sf417},
		{ddl, "CREATE PROCEDURE p() LANGUAGE sql SET synchronous_commit TO 'local' AS $$ SELECT 1 $$", sf417},
		{ddl, "CREATE FUNCTION f() RETURNS int LANGUAGE sql SET synchronous_commit = remote_apply AS $$ SELECT 1 $$", ""},
		// A routine whose SET clause the catalog shows.
		{catalog, "SELECT public.fast()", sf417},
		{catalog, "SELECT local_commit()", sf417},
		{catalog, "SELECT durable()", ""},
		{catalog, "SELECT sneaky()", sf417}, // its body's set_config, judged like a statement
		// pg_settings is set_config by another name: a write to a system relation.
		{plain, "UPDATE pg_settings SET setting = 'off' WHERE name = 'synchronous_commit'", rulecode.SystemRelation},
		// What stays allowed.
		{plain, "SET synchronous_commit = on", ""},
		{plain, "SET synchronous_commit = 'ON'", ""},
		{plain, "SET synchronous_commit = true", ""},
		{plain, "SET synchronous_commit = yes", ""},
		{plain, "SET synchronous_commit = 1", ""},
		{plain, "SET synchronous_commit = '1'", ""},
		{plain, "SET synchronous_commit = remote_apply", ""},
		{plain, "SET LOCAL synchronous_commit TO 'remote_write'", ""},
		{plain, "SET synchronous_commit TO DEFAULT", ""},
		{plain, "SET synchronous_commit = DEFAULT", ""},
		{plain, "RESET synchronous_commit", ""},
		{plain, "RESET ALL", ""},
		{plain, "SHOW synchronous_commit", ""},
		{plain, "SELECT current_setting('synchronous_commit')", ""},
		{plain, "SELECT set_config('synchronous_commit', 'remote_apply', true)", ""},
		{plain, "SELECT set_config('synchronous_commit', NULL, true)", sf417}, // set_config's reset: to a default no call judged for every session knows (defaults.go)
		{plain, "SELECT set_config('application_name', 'off', false)", ""},
		{plain, "SET application_name = off", ""},
	} {
		d := Analyze(c.p, c.sql)
		got := ""
		if d.refusal != nil {
			got = d.refusal.Code
		}
		if got != c.code || (c.code == "") != (d.act != ActRefuse) {
			t.Errorf("%s: act %v code %q (%v), want code %q", c.sql, d.act, got, d.refusal, c.code)
			continue
		}
		if got == sf417 && !strings.Contains(d.refusal.Error(), "synchronous_commit") {
			t.Errorf("%s: the message does not name the setting: %v", c.sql, d.refusal)
		}
	}
}

// TestSynchronousCommitByShape: a text of the same shape as a durable one that
// passed is decided on its own value, never by the cached plan.
func TestSynchronousCommitByShape(t *testing.T) {
	for _, pair := range [][2]string{
		{`SET synchronous_commit = 'on'`, `SET synchronous_commit = 'off'`},
		{`SET synchronous_commit = 1`, `SET synchronous_commit = 0`},
		{`SET LOCAL synchronous_commit TO 'remote_apply'`, `SET LOCAL synchronous_commit TO 'local'`},
		{`SELECT set_config('synchronous_commit', 'on', false)`, `SELECT set_config('synchronous_commit', 'off', false)`},
		{`SELECT set_config('application_name', 'off', false)`, `SELECT set_config('synchronous_commit', 'off', false)`},
		{`SELECT x FROM staging WHERE n = 'off' AND set_config('synchronous_commit', 'on', true) IS NOT NULL`,
			`SELECT x FROM staging WHERE n = 'on' AND set_config('synchronous_commit', 'off', true) IS NOT NULL`},
	} {
		e := New(testPolicy(t), 1000, 1<<20)
		for range 3 {
			if d := e.Decide(pair[0]); d.Act() == ActRefuse {
				t.Fatalf("%s: refused: %v", pair[0], d.Refusal())
			}
		}
		d := e.Decide(pair[1])
		if d.Act() != ActRefuse || d.Refusal().Code != rulecode.SynchronousCommit {
			t.Errorf("%s after %s: act %v (%v), want SF417", pair[1], pair[0], d.Act(), d.Refusal())
		}
	}
}
