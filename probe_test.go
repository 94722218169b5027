package sqlfence

import (
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestProbeHostsOfDSN: the probe's hosts are the DSN's distinct hosts, in order, each
// with pgx's attempts on it (sslmode=prefer: TLS, then without); a single host is one
// however many attempts it has.
func TestProbeHostsOfDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn      string
		hosts    []string
		attempts []int
	}{
		{"postgres://u@h1:5432,h2:5433/db?sslmode=prefer", []string{"h1:5432", "h2:5433"}, []int{2, 2}},
		{"postgres://u@h1,h2,h1/db?sslmode=disable", []string{"h1:5432", "h2:5432"}, []int{2, 1}},
		{"postgres://u@h1/db?sslmode=prefer", []string{"h1:5432"}, []int{2}},
		{"host=/tmp port=5432 dbname=db", []string{"/tmp/.s.PGSQL.5432"}, []int{1}},
	} {
		cfg, err := pgx.ParseConfig(tc.dsn)
		if err != nil {
			t.Fatal(err)
		}
		var hosts []string
		var attempts []int
		for _, h := range dsnHosts(&cfg.Config) {
			hosts = append(hosts, h.addr)
			attempts = append(attempts, len(h.entries))
		}
		if !reflect.DeepEqual(hosts, tc.hosts) || !reflect.DeepEqual(attempts, tc.attempts) {
			t.Errorf("%s: hosts %v with %v attempts, want %v with %v", tc.dsn, hosts, attempts, tc.hosts, tc.attempts)
		}
	}
}
