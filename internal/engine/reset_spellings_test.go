package engine

import (
	"testing"
)

// TestResetSpellings is the adversarial review of issue 33's resets: other ways of
// returning a pinned setting to a default — quoted or upper-case names, SET NAMES,
// set_config with NULL, FROM CURRENT, a routine's SET clause or body, ALTER … RESET,
// role switches — are either recorded as the reset they are (and judged on the
// session's defaults) or refused without a session.
func TestResetSpellings(t *testing.T) {
	p := testPolicy(t)
	bad := NewDefaults(map[string]string{"standard_conforming_strings": "off", "client_encoding": "SJIS", "synchronous_commit": "off", "session_replication_role": "replica"})
	// Recorded as resets: refused on a session whose defaults are bad.
	for _, c := range []struct {
		sql    string
		resets Pinned
	}{
		{`SET NAMES DEFAULT`, PinClientEncoding},
		{`SET NAMES`, PinClientEncoding},
		{`SET SESSION standard_conforming_strings TO DEFAULT`, PinStandardStrings},
		{`SET SESSION client_encoding = DEFAULT`, PinClientEncoding},
		{`RESET "Synchronous_Commit"`, PinSynchronousCommit},
		{`SET "SYNCHRONOUS_COMMIT" TO DEFAULT`, PinSynchronousCommit},
		{`SET LOCAL synchronous_commit TO DEFAULT`, PinSynchronousCommit},
		{`BEGIN; SAVEPOINT a; RESET ALL; ROLLBACK TO SAVEPOINT a; COMMIT`, PinAll},
		{`SELECT 1; DISCARD ALL`, PinAll},
	} {
		d := Analyze(p, c.sql)
		if d.Act() == ActRefuse {
			continue // refused outright is as good
		}
		if d.Resets()&c.resets != c.resets {
			t.Errorf("%s: resets %b, want %b", c.sql, d.Resets(), c.resets)
		}
		if got := d.InSession(bad); got.Act() != ActRefuse {
			t.Errorf("%s: passes on a session whose defaults are bad", c.sql)
		}
	}
	// Refused without a session: sqlfence cannot judge them on the session's defaults.
	for _, q := range []string{
		`RESET "STANDARD_CONFORMING_STRINGS"`,
		`SET "Standard_Conforming_Strings" TO DEFAULT`,
		`RESET session_replication_role`,
		`SET session_replication_role TO DEFAULT`,
		`SET standard_conforming_strings FROM CURRENT`,
		`SET client_encoding FROM CURRENT`,
		`SELECT set_config('standard_conforming_strings', NULL, false)`,
		`SELECT set_config('client_encoding', NULL, false)`,
		`SELECT set_config('session_replication_role', NULL, false)`,
		`SELECT set_config('synchronous_commit', NULL, false)`,
		`SELECT set_config('synchronous_commit', NULL::text, true)`,
		`SELECT pg_catalog.set_config('standard_conforming_strings', NULL, false)`,
		`SELECT set_config(name, reset_val, false) FROM pg_settings WHERE name = 'standard_conforming_strings'`,
		`SELECT set_config('standard_conforming_strings', reset_val, false) FROM pg_settings WHERE name = 'standard_conforming_strings'`,
		`UPDATE pg_settings SET setting = reset_val WHERE name = 'standard_conforming_strings'`,
		`CREATE FUNCTION f() RETURNS int LANGUAGE sql SET standard_conforming_strings FROM CURRENT AS 'SELECT 1'`,
		`CREATE FUNCTION f() RETURNS int LANGUAGE sql SET session_replication_role = replica AS 'SELECT 1'`,
		`CREATE FUNCTION f() RETURNS int LANGUAGE sql SET synchronous_commit = off AS 'SELECT 1'`,
		`CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'RESET ALL'`,
		`CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$SELECT set_config('standard_conforming_strings', NULL, false)$$`,
		`CREATE PROCEDURE p() LANGUAGE plpgsql AS $$BEGIN RESET ALL; END$$`,
		`DO $$BEGIN DISCARD ALL; END$$`,
		`DO $$BEGIN SET standard_conforming_strings TO DEFAULT; END$$`,
		`ALTER FUNCTION f() RESET ALL`,
		`ALTER FUNCTION f() SET standard_conforming_strings TO DEFAULT`,
		`ALTER SYSTEM RESET ALL`,
		`ALTER SYSTEM SET standard_conforming_strings = off`,
		`ALTER ROLE CURRENT_USER SET standard_conforming_strings = off`,
		`ALTER ROLE CURRENT_USER IN DATABASE d SET client_encoding = 'SJIS'`,
		`ALTER ROLE ALL RESET ALL`,
		`ALTER DATABASE d SET session_replication_role = replica`,
		`SET ROLE other`,
		`SET SESSION AUTHORIZATION other`,
		`SET LOCAL ROLE other`,
	} {
		if d := Analyze(p, q); d.Act() != ActRefuse {
			t.Errorf("%s: not refused (resets %b)", q, d.Resets())
		}
	}
}
