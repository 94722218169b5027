package analyzer

import "testing"

// TestCompileNamed: the outputs are sqlx v1.4.0's, from sqlx.BindNamed(sqlx.DOLLAR, in,
// map), recorded once; "" with ok false where sqlx returns an error.
func TestCompileNamed(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"UPDATE t SET a = :a WHERE b = :b", "UPDATE t SET a = $1 WHERE b = $2", true},
		{"SELECT a::::int FROM t WHERE b = :b", "SELECT a::int FROM t WHERE b = $1", true},
		{"SELECT a::int FROM t", "SELECT a:int FROM t", true},
		{"SELECT :min::int", "", false},
		{"SELECT :min ::::int", "SELECT $1 ::int", true},
		{"x := 1", "x := 1", true},
		{"a : b", "a $1 b", true},
		{"ends with :", "ends with ", true},
		{"WHERE id = :id_", "WHERE id = $1_", true},
		{"WHERE id = :id.", "WHERE id = $1.", true},
		{"WHERE id = :a.b_c, :d", "WHERE id = $1, $2", true},
		{"SELECT 'at :noon', :x", "SELECT 'at $1', $2", true},
		{"SELECT :é, :x", "SELECT $1\xa9, $2", true},
		{"SELECT :x:=1", "", false},
		{"::a", ":a", true},
		{":::a", ":$1", true},
		{"SELECT :a,:b", "SELECT $1,$2", true},
		{":a", "$1", true},
		{"x", "x", true},
	} {
		got, ok := compileNamed(tc.in, bindDollar)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("compileNamed(%q) = %q, %v; sqlx gives %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if got, _ := compileNamed("UPDATE t SET a = :a WHERE b = :b", bindQuestion); got != "UPDATE t SET a = ? WHERE b = ?" {
		t.Errorf("sqlx.Named's bindvar: %q", got)
	}
}
