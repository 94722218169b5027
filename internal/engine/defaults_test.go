package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// TestResets: which pinned settings a text returns to the session's default, and
// InSession's judgement of them on a session whose defaults are known.
func TestResets(t *testing.T) {
	if !slices.Equal(PinnedSettings(), pgcatalog.ResetSettings) {
		t.Fatalf("the connectors read the defaults of %v, the decisions rest on %v", pgcatalog.ResetSettings, PinnedSettings())
	}
	p := testPolicy(t)
	good := map[string]string{"standard_conforming_strings": "on", "client_encoding": "UTF8", "synchronous_commit": "on", "session_replication_role": "origin"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		sql      string
		resets   Pinned
		defaults map[string]string
		code     string // "" passes
	}{
		{"RESET ALL", PinAll, good, ""},
		{"RESET ALL", PinAll, with("standard_conforming_strings", "off"), rulecode.Setting},
		{"reset all", PinAll, with("client_encoding", "SJIS"), rulecode.Setting},
		{"DISCARD ALL", PinAll, with("synchronous_commit", "off"), rulecode.SynchronousCommit},
		{"DISCARD ALL", PinAll, with("session_replication_role", "replica"), rulecode.Setting},
		{"DISCARD ALL", PinAll, with("session_replication_role", ""), rulecode.Setting}, // not read: unknown
		{"DISCARD PLANS", 0, with("standard_conforming_strings", "off"), ""},
		{"DEALLOCATE ALL", 0, with("standard_conforming_strings", "off"), ""},
		{"RESET search_path", 0, with("standard_conforming_strings", "off"), ""},
		{"RESET standard_conforming_strings", PinStandardStrings, with("standard_conforming_strings", "off"), rulecode.Setting},
		{"RESET standard_conforming_strings", PinStandardStrings, with("synchronous_commit", "off"), ""},
		{"SET standard_conforming_strings TO DEFAULT", PinStandardStrings, with("standard_conforming_strings", "off"), rulecode.Setting},
		{"SET LOCAL client_encoding = DEFAULT", PinClientEncoding, with("client_encoding", "LATIN1"), rulecode.Setting},
		{"SELECT 1; RESET synchronous_commit", PinSynchronousCommit, with("synchronous_commit", "local"), rulecode.SynchronousCommit},
		{"SET synchronous_commit TO DEFAULT", PinSynchronousCommit, with("synchronous_commit", "remote_apply"), ""},
		{"SET standard_conforming_strings = on", 0, with("standard_conforming_strings", "off"), ""},
	} {
		d := Analyze(p, c.sql)
		if d.Act() == ActRefuse {
			t.Errorf("%s: refused without a session: %v", c.sql, d.Refusal())
			continue
		}
		if d.Resets() != c.resets {
			t.Errorf("%s: resets %b, want %b", c.sql, d.Resets(), c.resets)
		}
		if d.InSession(nil) != d {
			t.Errorf("%s: judged without defaults", c.sql)
		}
		got := d.InSession(NewDefaults(c.defaults))
		code := ""
		if got.Act() == ActRefuse {
			code = got.Refusal().Code
			if msg := got.Refusal().Error(); !strings.Contains(msg, "default") || !strings.Contains(msg, "ALTER ROLE") {
				t.Errorf("%s: the message names neither the default nor its fix: %s", c.sql, msg)
			}
		}
		if code != c.code {
			t.Errorf("%s on %v: code %q (%v), want %q", c.sql, c.defaults, code, got.Refusal(), c.code)
		}
	}
}

// TestBodyResets: a routine body or DO block that resets a pinned setting is
// refused: the reset outlives the call, and a body is judged once for every session.
func TestBodyResets(t *testing.T) {
	p := testPolicy(t)
	p.AllowDDL = true
	for _, q := range []string{
		`DO $$ BEGIN RESET ALL; END $$`,
		`DO $$ BEGIN RESET standard_conforming_strings; END $$`,
		`DO $$ BEGIN SET synchronous_commit TO DEFAULT; END $$`,
		`CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RESET ALL; END $$`,
		`CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ RESET ALL $$`,
		`SELECT set_config('synchronous_commit', NULL, false)`,
	} {
		d := Analyze(p, q)
		if d.Act() != ActRefuse {
			t.Errorf("%s: passed", q)
		}
	}
	for _, q := range []string{
		`DO $$ BEGIN RESET search_path; END $$`,
		`CREATE FUNCTION f() RETURNS void LANGUAGE sql SET synchronous_commit TO DEFAULT AS $$ SELECT 1 $$`,
	} {
		if d := Analyze(p, q); d.Act() == ActRefuse {
			t.Errorf("%s: %v", q, d.Refusal())
		}
	}
}
