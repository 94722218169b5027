package pgcatalog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// BenchmarkCatalogReadCold times the catalog read of a new connector on a new
// server connection (a backend whose catalog caches are cold), as engine.Resolve
// sends it — the version, then the rest as one statement (pgcatalog.Reads) — and,
// on another new connection in the same op, the same queries one by one, each
// timed: which of them cost the server what.
//
//	go test -run '^$' -bench CatalogReadCold -benchtime 20x -count 3 ./internal/pgcatalog
//
// together-ms is the version and the one statement; alone-ms the queries one by
// one (the version included); ms/<query> each query alone; connect-ms opening a
// connection, for scale. Which side goes first alternates.
func BenchmarkCatalogReadCold(b *testing.B) {
	dsn := pgtest.NewDB(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	setup, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := setup.Exec(ctx, togetherSchema); err != nil {
		b.Fatal(err)
	}
	setup.Close(ctx)
	var reads pgcatalog.Reads
	reads.Add(pgcatalog.FingerprintRead())
	reads.Add(pgcatalog.RelationsRead("", "inventory", "writer_epoch"))
	for _, r := range pgcatalog.SnapshotReads([]string{"writer_epoch"}, true) {
		reads.Add(r)
	}
	connect := func() (*pgx.Conn, time.Duration) {
		t0 := time.Now()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		return c, time.Since(t0)
	}
	var together, alone, conn time.Duration
	each := make([]time.Duration, reads.Len()+1)
	for n := range b.N {
		for side := range 2 {
			c, d := connect()
			conn += d
			q := pgcatalog.PgxQuery(c, pgx.QueryExecModeExec)
			if (side+n)%2 == 0 {
				t0 := time.Now()
				if _, err := pgcatalog.Version(ctx, q); err != nil {
					b.Fatal(err)
				}
				if _, err := reads.Run(ctx, q); err != nil {
					b.Fatal(err)
				}
				together += time.Since(t0)
			} else {
				t0 := time.Now()
				if _, err := pgcatalog.Version(ctx, q); err != nil {
					b.Fatal(err)
				}
				each[0] += time.Since(t0)
				for i := range reads.Len() {
					r := reads.At(i)
					t1 := time.Now()
					if _, err := q(ctx, r.SQL, r.Args...); err != nil {
						b.Fatal(err)
					}
					each[i+1] += time.Since(t1)
				}
				alone += time.Since(t0)
			}
			c.Close(ctx)
		}
	}
	nf := float64(b.N)
	b.ReportMetric(float64(together)/nf/1e6, "together-ms")
	b.ReportMetric(float64(alone)/nf/1e6, "alone-ms")
	b.ReportMetric(float64(conn)/nf/2/1e6, "connect-ms")
	b.ReportMetric(float64(each[0])/nf/1e6, "ms/version")
	for i := range reads.Len() {
		name := strings.NewReplacer(" ", "-", "'", "").Replace(reads.At(i).What)
		b.ReportMetric(float64(each[i+1])/nf/1e6, "ms/"+name)
	}
}
