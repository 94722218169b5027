package pgxfence_test

// Performance of pgxfence against the same statements fenced by hand on raw
// pgxpool, interleaved statement by statement on the test helper's PostgreSQL:
//
//	go test -run '^$' -bench . -benchtime 2000x ./pgxfence
//
// fenced-update: one single-row UPDATE, 1 and 8 workers; batch-100: a batch of 100
// fenced UPDATEs; wrapper-ns/op is the difference per call (per batch for
// batch-100), what the wrapper costs over pgx at a cached decision.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/pgxfence"
)

const (
	benchSchema = `CREATE TABLE bench_items (id int PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO bench_items (id, quantity) SELECT g, 0 FROM generate_series(1, 128) g;`
	// Repeatable: a worker writes its row again and again under one epoch.
	benchPolicy = "version: 1\ncatalog_refresh: 1h\ntables:\n  - name: bench_items\n    mode: repeatable\n"
	benchUpdate = `UPDATE bench_items SET quantity = quantity + $2 WHERE id = $1`
	benchEpoch  = 7
)

func BenchmarkPool(b *testing.B) {
	f := newFixture(b)
	ctx := sqlfence.WithEpoch(context.Background(), benchEpoch)
	if _, err := f.raw.Exec(ctx, benchSchema); err != nil {
		b.Fatal(err)
	}
	p := policy(b, benchPolicy)
	hand := p.Plan(benchUpdate).Fenced // what the fence sends, written by hand on the raw side
	open := func() *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(f.dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.MaxConns = 8
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		return pool
	}
	raw := open()
	fenced, err := pgxfence.New(open(), p)
	if err != nil {
		b.Fatal(err)
	}
	exec := func(db interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}, sql string, args ...any) error {
		tag, err := db.Exec(ctx, sql, args...)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("%d rows affected, want 1", tag.RowsAffected())
		}
		return err
	}
	batch := func(db interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}, sql string, epoch bool) error {
		bt := &pgx.Batch{}
		for id := 1; id <= 100; id++ {
			if epoch {
				bt.Queue(sql, id, 1, int64(benchEpoch))
			} else {
				bt.Queue(sql, id, 1)
			}
		}
		br := db.SendBatch(ctx, bt)
		for range 100 {
			if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
				br.Close()
				return fmt.Errorf("batch item: %v, %v", tag, err)
			}
		}
		return br.Close()
	}
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("fenced-update/workers=%d", workers), func(b *testing.B) {
			interleave(b, workers,
				func(w int) error { return exec(fenced, benchUpdate, w+1, 1) },
				func(w int) error { return exec(raw, hand, w+1, 1, int64(benchEpoch)) })
		})
	}
	b.Run("batch-100/workers=1", func(b *testing.B) {
		interleave(b, 1,
			func(int) error { return batch(fenced, benchUpdate, false) },
			func(int) error { return batch(raw, hand, true) })
	})
}

// interleave runs side and raw alternately (each first every other iteration) on
// workers goroutines and reports both sides' mean time per call, their ratio and
// the difference.
func interleave(b *testing.B, workers int, side, raw func(worker int) error) {
	var wg sync.WaitGroup
	for w := range workers { // warm up: connections, prepared statements, decisions
		wg.Go(func() {
			for range 20 {
				if err := side(w); err != nil {
					b.Error(err)
					return
				}
				if err := raw(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	var (
		next   atomic.Int64
		failed atomic.Bool
		lat    = make([][2]time.Duration, b.N)
	)
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N) && !failed.Load(); i = next.Add(1) {
				first, second := side, raw
				if i%2 == 0 {
					first, second = raw, side
				}
				t0 := time.Now()
				e1 := first(w)
				t1 := time.Now()
				e2 := second(w)
				t2 := time.Now()
				if e1 != nil || e2 != nil {
					b.Errorf("iteration %d: %v / %v", i, e1, e2)
					failed.Store(true)
					return
				}
				if i%2 == 1 {
					lat[i-1] = [2]time.Duration{t1.Sub(t0), t2.Sub(t1)}
				} else {
					lat[i-1] = [2]time.Duration{t2.Sub(t1), t1.Sub(t0)}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if failed.Load() {
		return
	}
	var sum [2]time.Duration
	sides := [2][]time.Duration{make([]time.Duration, b.N), make([]time.Duration, b.N)}
	for i, l := range lat {
		sum[0] += l[0]
		sum[1] += l[1]
		sides[0][i], sides[1][i] = l[0], l[1]
	}
	n := float64(b.N)
	b.ReportMetric(float64(sum[0])/n, "pgxfence-ns/op")
	b.ReportMetric(float64(sum[1])/n, "raw-ns/op")
	b.ReportMetric(float64(sum[1])/float64(sum[0]), "throughput-ratio")
	slices.Sort(sides[0])
	slices.Sort(sides[1])
	b.ReportMetric(float64(sides[1][b.N/2])/float64(sides[0][b.N/2]), "median-ratio")
	b.ReportMetric(float64(sides[0][b.N/2]-sides[1][b.N/2]), "wrapper-ns/op")
}
