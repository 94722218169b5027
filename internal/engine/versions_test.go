package engine

import (
	"bufio"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
	"os"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// serverKeywords reads testdata/keywords/<major>.txt: pg_get_keywords() of that
// PostgreSQL (word, tab, catcode), as TestServerKeywords in the root package checks
// against the servers it runs.
func serverKeywords(t *testing.T, major string) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/keywords/" + major + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		w, c, ok := strings.Cut(s.Text(), "\t")
		if !ok {
			t.Fatalf("%s.txt: %q", major, s.Text())
		}
		out[w] = c
	}
	return out
}

// TestGrammarKeywords: grammarKeywords is PostgreSQL's own keyword history. Every
// keyword of PostgreSQL 17 is one of the parser's, of the same category (so 17's
// list is the parser's); and for 15 and 16, a word of the parser's is absent exactly
// where the table says it was not yet a keyword, unreserved exactly where it says it
// could still name a function, and of the parser's category otherwise — with no word
// of the older list missing from the parser's.
func TestGrammarKeywords(t *testing.T) {
	cat := map[pg.KeywordKind]string{pg.KeywordKind_UNRESERVED_KEYWORD: "U", pg.KeywordKind_COL_NAME_KEYWORD: "C",
		pg.KeywordKind_TYPE_FUNC_NAME_KEYWORD: "T", pg.KeywordKind_RESERVED_KEYWORD: "R"}
	parser := serverKeywords(t, "17")
	for w, c := range parser {
		r, err := pgquery.Scan(w)
		if err != nil || len(r.Tokens) != 1 || cat[r.Tokens[0].KeywordKind] != c {
			t.Errorf("%s: PostgreSQL 17 says %s, the parser scans %v (%v)", w, c, r, err)
		}
	}
	for w := range grammarKeywords {
		if parser[w] == "" {
			t.Errorf("%s is in grammarKeywords but no keyword of the parser", w)
		}
	}
	for _, v := range []struct {
		major string
		num   int
	}{{"15", 150000}, {"16", 160000}} {
		old := serverKeywords(t, v.major)
		for w := range old {
			if parser[w] == "" {
				t.Errorf("%s: a keyword of PostgreSQL %s is none of the parser's", w, v.major)
			}
		}
		for w, c := range parser {
			k, listed := grammarKeywords[w]
			var want string
			switch {
			case !listed:
				want = c
			case v.num < k.keyword:
				want = ""
			case k.notFunc != 0 && v.num < k.notFunc:
				want = "U"
			default:
				want = c
			}
			if old[w] != want {
				t.Errorf("%s: PostgreSQL %s has it as %q, grammarKeywords says %q", w, v.major, old[w], want)
			}
		}
	}
}

// TestOlderReadings: on an older server, a text holding a newer keyword is decided
// as that server reads it. json_object(5) is a call of whatever json_object the
// catalog has there — judged as the call (a routine writing a protected table is
// refused) — not the pg_catalog function the parser names; constructs the older
// grammar does not have are refused (SF706); words whose quoting changes nothing
// (a column named path, format(…)) keep the parser's decision on every server.
func TestOlderReadings(t *testing.T) {
	plain := testPolicy(t)
	// The policy names json_object among the routines that write protected tables,
	// as resolve: catalog finds a migration's public.json_object(int) that does.
	p := (&Policy{Source: plain.Source, EpochColumn: plain.EpochColumn, Mode: plain.Mode, Stale: plain.Stale, Enforce: plain.Enforce,
		Tables: plain.Tables, Functions: []QualifiedName{{Schema: "public", Name: "json_object"}}, Claims: plain.Claims}).Index()
	for _, c := range []struct {
		sql            string
		pg15, pg16     string // the code of the decision there: "" passes, "rewrite", or a rule code
		same15, same16 bool   // the decision there is the parser's
	}{
		{"SELECT json_object(5)", rulecode.ListedFunction, "", false, true},
		{"SELECT JSON_OBJECT('a': 1)", rulecode.ServerVersion, "", false, true},
		{"SELECT x IS JSON FROM t", rulecode.ServerVersion, "", false, true},
		{"SELECT json('{}')", rulecode.UnjudgedCall, rulecode.UnjudgedCall, false, false},
		{"SELECT merge_action()", rulecode.UnjudgedCall, rulecode.UnjudgedCall, false, false},
		{"SELECT path, source, format('%s', target) FROM t", "", "", true, true},
		{"SELECT '{}'::json", "", "", false, true},
		{"SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a int PATH '$'))", rulecode.ServerVersion, rulecode.ServerVersion, false, false},
	} {
		toks, err := pgtree.ScanTokens(c.sql, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := analyzeShaped(p, c.sql, toks, nil, false)
		for _, s := range []struct {
			server int
			want   string
			same   bool
		}{{150010, c.pg15, c.same15}, {160004, c.pg16, c.same16}} {
			od := d.OnServer(s.server)
			if (od == d) != s.same {
				t.Errorf("%s on %d: the parser's decision %v, want %v", c.sql, s.server, od == d, s.same)
			}
			got := ""
			if od.act == ActRefuse {
				got = od.refusal.Code
			}
			if got != s.want {
				t.Errorf("%s on %d: %q (%v), want %q", c.sql, s.server, got, od.refusal, s.want)
			}
		}
		if od := d.OnServer(170000); od != d {
			t.Errorf("%s on 17: not the parser's decision", c.sql)
		}
	}
}
