package analyzer

import "testing"

func TestNumberQuestionMarks(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"UPDATE t SET a = ? WHERE b = ?", "UPDATE t SET a = $1 WHERE b = $2"},
		{"SELECT '?', \"?\" FROM t WHERE a=? -- ?", "SELECT '?', \"?\" FROM t WHERE a=$1 -- ?"},
		{"SELECT data ?| array['a'], data ?& array['b'] FROM t WHERE id = ?", "SELECT data ?| array['a'], data ?& array['b'] FROM t WHERE id = $1"},
		{"UPDATE t SET a = ?0 WHERE b = ?1", "UPDATE t SET a = $1 WHERE b = $2"},
		{"DELETE FROM ?TableName WHERE id = ?", "DELETE FROM <hole> WHERE id = $1"},
	} {
		got := ""
		for _, p := range knownText(tc.in).numberQuestionMarks().parts {
			if p.hole {
				got += "<hole>"
			} else {
				got += p.s
			}
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}
