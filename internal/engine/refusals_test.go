package engine

import (
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// Issue 21's false refusals and the claim protocol's counters, decided without a
// database: what passes, what is refused with which code, and that a counter write is
// a claim (the claim helpers' own, refused for everyone else at Bind).
func TestRefusalsAndEpochCounters(t *testing.T) {
	ext := func(oid uint32, schema, name, extension, lang, vol string) pgcatalog.Function {
		return pgcatalog.Function{OID: oid, Schema: schema, Name: name, Kind: "f", Volatility: vol, Language: lang, Extension: extension}
	}
	raw := &pgcatalog.Snapshot{
		Functions: []pgcatalog.Function{
			ext(1, "public", "gen_salt", "pgcrypto", "c", "v"),
			ext(2, "public", "crypt", "pgcrypto", "c", "i"),
			ext(3, "public", "uuid_generate_v4", "uuid-ossp", "c", "v"),
			ext(4, "public", "similarity", "pg_trgm", "c", "i"),
			ext(5, "evil", "gen_salt", "", "c", "v"),                         // a look-alike in another schema
			ext(6, "public", "gen_random_bytes", "pgcrypto", "plpgsql", "v"), // replaced: still a member, another body
			ext(7, "public", "set_limit", "pg_trgm", "c", "v"),               // a member not on the reviewed list
			ext(8, "public", "writer", "", "c", "v"),
		},
		Builtins: map[string]byte{"lower": 'i', "count": 'i', "split_part": 'i'},
		MatViews: []pgcatalog.MatView{
			{OID: 20, Schema: "public", Name: "mv_ok", Query: " SELECT lower(x) AS x, count(*) AS n FROM t GROUP BY 1;",
				Indexes: []string{"CREATE UNIQUE INDEX mv_ok_x ON public.mv_ok USING btree (x)"}},
			{OID: 21, Schema: "public", Name: "mv_calls", Query: " SELECT writer() AS w;"},
			{OID: 22, Schema: "public", Name: "mv_index", Query: " SELECT 1 AS x;",
				Indexes: []string{"CREATE INDEX mv_index_x ON public.mv_index USING btree (writer())"}},
		},
	}
	plain := testPolicy(t)
	catalog := testPolicy(t).withSnapshot(raw, nil)
	ddl := testPolicy(t)
	ddl.AllowDDL = true
	safeOverride := testPolicy(t)
	safeOverride.SafeFunctions = []QualifiedName{{Name: "override"}, {Name: "active_override"}, {Schema: "sqlfence", Name: "guard_reject"}}
	for _, c := range []struct {
		p    *Policy
		sql  string
		act  Action
		code string
	}{
		{plain, "SET jit_above_cost = 100000", ActPass, ""},
		{plain, "SET max_parallel_workers = 2", ActPass, ""},
		{plain, "SET constraint_exclusion = partition", ActPass, ""},
		{plain, "RESET ROLE", ActPass, ""},
		{plain, "RESET SESSION AUTHORIZATION", ActPass, ""},
		{plain, "SET ROLE admin", ActRefuse, rulecode.Setting},
		{plain, "SET SESSION AUTHORIZATION admin", ActRefuse, rulecode.Setting},
		{plain, "SELECT make_interval(days := 1)", ActPass, ""},

		// Extension functions: with the catalog, when every candidate is a reviewed member.
		{plain, "SELECT crypt('a', gen_salt('bf'))", ActRefuse, rulecode.UnjudgedCall},
		{catalog, "SELECT crypt('a', 'b'), public.uuid_generate_v4(), similarity('a', 'b')", ActPass, ""},
		{catalog, "SELECT public.gen_salt('bf')", ActPass, ""},
		{catalog, "SELECT gen_salt('bf')", ActRefuse, rulecode.UnreadableRoutine},      // evil.gen_salt may be first
		{catalog, "SELECT evil.gen_salt('bf')", ActRefuse, rulecode.UnreadableRoutine}, // judged as any C function
		{catalog, "SELECT gen_random_bytes(8)", ActRefuse, rulecode.UnreadableRoutine},
		{catalog, "SELECT set_limit(0.5)", ActRefuse, rulecode.UnreadableRoutine},

		// REFRESH MATERIALIZED VIEW: its query and indexes judged from the catalog.
		{plain, "REFRESH MATERIALIZED VIEW mv_ok", ActRefuse, rulecode.UnjudgedCall},
		{catalog, "REFRESH MATERIALIZED VIEW mv_ok", ActPass, ""},
		{catalog, "REFRESH MATERIALIZED VIEW CONCURRENTLY public.mv_ok", ActPass, ""},
		{catalog, "REFRESH MATERIALIZED VIEW mv_calls", ActRefuse, rulecode.UnreadableRoutine},
		{catalog, "REFRESH MATERIALIZED VIEW mv_index", ActRefuse, rulecode.UnreadableRoutine},
		{catalog, "REFRESH MATERIALIZED VIEW other.mv_ok", ActRefuse, rulecode.UnjudgedCall},

		// The epoch sequence: nextval only raises it; setval of it, or of what sqlfence
		// cannot name, is refused; DDL on it, under ddl: allow too.
		{plain, "SELECT nextval('sqlfence_epoch')", ActPass, ""},
		{plain, "SELECT setval('users_id_seq', 10)", ActPass, ""},
		{plain, "SELECT setval(pg_get_serial_sequence('users', 'id'), 10)", ActPass, ""},
		{plain, "SELECT setval('sqlfence_epoch', 1)", ActRefuse, rulecode.ClaimWrite},
		{plain, "SELECT pg_catalog.setval('public.\"sqlfence_epoch\"'::regclass, 1, false)", ActRefuse, rulecode.ClaimWrite},
		{plain, "SELECT setval('PUBLIC.SQLFENCE_EPOCH', 1)", ActRefuse, rulecode.ClaimWrite},
		{plain, "SELECT setval($1, 1)", ActRefuse, rulecode.ClaimWrite},
		{plain, "SELECT setval(pg_get_serial_sequence('sqlfence_epoch_counter', 'value'), 1)", ActRefuse, rulecode.ClaimWrite},
		{plain, "SELECT 1 FROM t WHERE setval('sqlfence_epoch', 1) > 0", ActRefuse, rulecode.ClaimWrite},
		{plain, "DO $$ BEGIN PERFORM setval('sqlfence_epoch', 1); END $$", ActRefuse, rulecode.ClaimWrite},
		{ddl, "ALTER SEQUENCE sqlfence_epoch RESTART WITH 1", ActRefuse, rulecode.ClaimWrite},
		{ddl, "ALTER SEQUENCE public.sqlfence_epoch RENAME TO old_epoch", ActRefuse, rulecode.ClaimWrite},
		{ddl, "DROP SEQUENCE sqlfence_epoch", ActRefuse, rulecode.ClaimWrite},
		{ddl, "CREATE TEMP SEQUENCE sqlfence_epoch", ActRefuse, rulecode.ClaimWrite},
		{ddl, "ALTER TABLE sqlfence_epoch_counter DISABLE TRIGGER ALL", ActRefuse, rulecode.ClaimWrite},
		{ddl, "DROP TABLE IF EXISTS app.sqlfence_epoch_counter", ActRefuse, rulecode.ClaimWrite},
		{ddl, "CREATE SEQUENCE users_id_seq", ActPass, ""},

		// The counter table: reading it passes; writing it is a claim helper's.
		{plain, "SELECT value FROM sqlfence_epoch_counter", ActPass, ""},
		{plain, "COPY sqlfence_epoch_counter TO STDOUT", ActPass, ""},
		{plain, "UPDATE sqlfence_epoch_counter SET value = 1", ActClaim, ""},
		{plain, "DELETE FROM app.sqlfence_epoch_counter", ActClaim, ""},
		{plain, "TRUNCATE sqlfence_epoch_counter", ActClaim, ""},
		{plain, "INSERT INTO sqlfence_epoch_counter (value) VALUES (1)", ActClaim, ""},
		{plain, "WITH c AS (UPDATE sqlfence_epoch_counter SET value = 0 RETURNING value) SELECT * FROM c", ActClaim, ""},
		{plain, "DO $$ BEGIN UPDATE sqlfence_epoch_counter SET value = 1; END $$", ActRefuse, rulecode.ClaimWrite},

		// The guard's settings and routines.
		{plain, "SELECT set_config('sqlfence.override', 'x', true)", ActRefuse, rulecode.Setting},
		{plain, "SET LOCAL sqlfence.override_xact = '1'", ActRefuse, rulecode.Setting},
		{plain, "SELECT set_config(setting_name => 'sqlfence.fenced', new_value => 'on', is_local => true)", ActRefuse, rulecode.Setting},
		{safeOverride, "SELECT override('restore inventory after INC-1')", ActRefuse, rulecode.Setting},
		{safeOverride, "SELECT sqlfence.active_override()", ActRefuse, rulecode.Setting},
		{safeOverride, "SELECT guard_reject('a', 'b', 'c', false)", ActRefuse, rulecode.Setting},
		{safeOverride, "SELECT sqlfence.guard_reject('a', 'b', 'c', false)", ActPass, ""}, // named qualified: the operator's choice
	} {
		d := Analyze(c.p, c.sql)
		got := ""
		if d.refusal != nil {
			got = d.refusal.Code
		}
		if d.act != c.act || got != c.code {
			t.Errorf("%s: act %v code %q (%v), want act %v code %q", c.sql, d.act, got, d.refusal, c.act, c.code)
		}
	}

	// A counter write outside the helpers is refused at Bind, and the message says so;
	// a claim helper's passes.
	e := New(testPolicy(t), 0, 0)
	q := "UPDATE sqlfence_epoch_counter SET value = 1"
	d := Analyze(testPolicy(t), q)
	if _, err := e.Bind(d, q, Session{Epoch: 7, HasEpoch: true}, 0); err == nil || err.Code != rulecode.ClaimWrite ||
		err.Reason != "the statement writes the epoch counter sqlfence_epoch_counter outside sqlfence's claim helpers: a counter moved back or reset hands out epochs already used, and a stale execution writes again" {
		t.Errorf("counter write at Bind: %v", err)
	}
	if _, err := e.Bind(d, q, Session{ClaimHelper: true}, 0); err != nil {
		t.Errorf("a claim helper's counter write: %v", err)
	}
}
