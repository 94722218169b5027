package sqlfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// BenchmarkRefreshSteady is catalog_refresh's cost in steady state: a warm connector
// (every statement decided once) runs the statements again, alternating with raw pgx
// statement by statement, with catalog_refresh: 1s (the route where the guard's
// event triggers cannot be installed) and with the refresh effectively off (1h: what
// a connector with the guard's catalog version does per statement, two atomic loads).
// catalogue is the 300 statements of BenchmarkColdPools (reads, fenced writes,
// unprotected writes) over and over; inlists the fenced UPDATE with `id IN ($2, …)`,
// lengths 1 to 200, with parameters. Run it for several periods:
//
//	go test -run '^$' -bench RefreshSteady -benchtime 6000x -count 3 .
//
// misses is how many statements were decided again during the timed run: 0 when
// every period found the catalog unchanged and kept the decisions; fingerprints and
// full-reads how many periods read the fingerprint, and how many the whole catalog
// after the first read.
func BenchmarkRefreshSteady(b *testing.B) {
	dsn, _, p := benchDatabase(b)
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	type stmt struct {
		text, raw     string
		args, rawArgs []any
		read          bool
	}
	var catalogue, inlists []stmt
	queries, kinds := coldCatalogue()
	for i, q := range queries {
		s := stmt{text: q, raw: q, args: []any{1 + i%64}, read: kinds[i] == coldRead}
		s.rawArgs = s.args
		if kinds[i] == coldFenced {
			s.raw = p.Plan(q).Fenced
			s.rawArgs = []any{s.args[0], int64(benchEpoch)}
		}
		catalogue = append(catalogue, s)
	}
	for n := 1; n <= 200; n++ {
		parts := make([]string, n)
		args := []any{1}
		for k := range parts {
			parts[k] = "$" + strconv.Itoa(k+2)
			args = append(args, 1+k%64+1000*(k/64))
		}
		q := "UPDATE bench_items SET quantity = quantity + $1 WHERE id IN (" + strings.Join(parts, ", ") + ")"
		pl := p.Plan(q)
		if pl.Fenced == "" {
			b.Fatalf("not fenced: %s", q)
		}
		inlists = append(inlists, stmt{text: q, raw: pl.Fenced, args: args, rawArgs: append(slices.Clone(args), int64(benchEpoch))})
	}
	exec := func(db *sql.DB, q string, args []any, read bool) error {
		if read {
			var a, e int64
			return db.QueryRowContext(ctx, q, args...).Scan(&a, &e)
		}
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	for _, w := range []struct {
		name  string
		stmts []stmt
		warm  int
	}{{"catalogue", catalogue, 300}, {"inlists", inlists, 2000}} {
		for _, refresh := range []string{"1s", "1h"} {
			b.Run(w.name+"/refresh="+refresh, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "policy.yaml")
				if err := os.WriteFile(path, []byte(strings.Replace(benchPolicy, "catalog_refresh: 1h", "catalog_refresh: "+refresh, 1)), 0o644); err != nil {
					b.Fatal(err)
				}
				connector, err := sqlfence.Driver{}.OpenConnector(withParam(dsn, "sqlfence_policy", path))
				if err != nil {
					b.Fatal(err)
				}
				fenced := sql.OpenDB(connector)
				defer fenced.Close()
				raw, err := sql.Open("pgx", dsn)
				if err != nil {
					b.Fatal(err)
				}
				defer raw.Close()
				for _, db := range []*sql.DB{fenced, raw} {
					db.SetMaxOpenConns(1)
					db.SetMaxIdleConns(1)
				}
				for i := range w.warm {
					s := w.stmts[i%len(w.stmts)]
					if err := exec(fenced, s.text, s.args, s.read); err != nil {
						b.Fatal(err)
					}
					if err := exec(raw, s.raw, s.rawArgs, s.read); err != nil {
						b.Fatal(err)
					}
				}
				before, _ := sqlfence.CacheStatsOf(connector)
				var i, j atomic.Int64
				alternate(b, 1, "sqlfence",
					func(int) error {
						s := w.stmts[int(i.Add(1)-1)%len(w.stmts)]
						return exec(fenced, s.text, s.args, s.read)
					},
					func(int) error {
						s := w.stmts[int(j.Add(1)-1)%len(w.stmts)]
						return exec(raw, s.raw, s.rawArgs, s.read)
					})
				after, _ := sqlfence.CacheStatsOf(connector)
				b.ReportMetric(float64(after.Misses-before.Misses), "misses")
				checks, reads, _ := sqlfence.RefreshCounters(connector)
				b.ReportMetric(float64(checks), "fingerprints")
				b.ReportMetric(float64(reads-1), "full-reads")
				if after.Misses != before.Misses {
					b.Logf("%s: %d statements decided again in steady state", fmt.Sprint(w.name, "/", refresh), after.Misses-before.Misses)
				}
			})
		}
	}
}
