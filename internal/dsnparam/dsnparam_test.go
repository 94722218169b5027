package dsnparam

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct{ dsn, path, rest, err string }{
		{"postgres://u@h/db?sqlfence_policy=p.yaml&sslmode=disable", "p.yaml", "postgres://u@h/db?sslmode=disable", ""},
		{"host=h sqlfence_policy='a b.yaml' dbname=db", "a b.yaml", "host=h dbname=db", ""},
		// pgx's and libpq's own parameters, and the guard's setting, pass unchanged.
		{"postgres://u@h/db?application_name=sqlfence_worker&options=-c%20search_path%3Dx&target_session_attrs=read-write&sqlfence.fenced=on", "",
			"postgres://u@h/db?application_name=sqlfence_worker&options=-c%20search_path%3Dx&target_session_attrs=read-write&sqlfence.fenced=on", ""},
		{"host=h search_path=x sslmode=require", "", "host=h search_path=x sslmode=require", ""},
		// Near misses and other sqlfence_* names.
		{"postgres://u@h/db?sqlfence_polcy=p.yaml", "", "", `"sqlfence_polcy" (did you mean sqlfence_policy?)`},
		{"postgres://u@h/db?sqlfencepolicy=p.yaml", "", "", `"sqlfencepolicy" (did you mean sqlfence_policy?)`},
		{"postgres://u@h/db?Sqlfence_Policy=p.yaml", "", "", `"Sqlfence_Policy" (did you mean sqlfence_policy?)`},
		{"host=h sqlfence_mode=shadow", "", "", `"sqlfence_mode" (did you mean sqlfence_policy?)`},
		{"host=h sqlfence.fenced_x=on", "", "", `"sqlfence.fenced_x" (did you mean sqlfence.fenced?)`},
	} {
		path, rest, err := Split(c.dsn)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error with %s", c.dsn, err, c.err)
			}
		case err != nil || path != c.path || rest != c.rest:
			t.Errorf("%s: %q, %q, %v; want %q, %q", c.dsn, path, rest, err, c.path, c.rest)
		}
	}
}
