package claim_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// BenchmarkContended: many jobs, few hot rows, several workers, global epochs.
// Each job claims, decrements one of 4 hot rows in a transaction with its
// completion, and commits; a fenced job is released and claimed again. Under
// stale: row a newer claim of another job fences an older valid one, so jobs are
// claimed more than once; under stale: claim each job is claimed once.
//
//	go test ./claim -run '^$' -bench Contended -benchtime 2000x
func BenchmarkContended(b *testing.B) {
	for _, mode := range []struct{ name, policy string }{{"stale=row", testPolicy}, {"stale=claim", staleClaimPolicy}} {
		b.Run(mode.name, func(b *testing.B) {
			const workers, hot = 8, 4
			j := newJobs(b, claim.JobsConfig{RenewEvery: -1, Returning: []string{"sku"}})
			e := newEnv(b, j.Schema(), `ALTER TABLE jobs ADD COLUMN sku text NOT NULL DEFAULT 'h0'`)
			for i := range hot {
				e.exec(b, `INSERT INTO inventory (sku, quantity) VALUES ($1, 0) ON CONFLICT DO NOTHING`, fmt.Sprintf("h%d", i))
			}
			e.exec(b, `INSERT INTO jobs (sku) SELECT 'h' || (g % $2) FROM generate_series(1, $1) g`, b.N, hot)
			fenced := e.fencedWith(b, mode.policy)
			fenced.SetMaxOpenConns(2 * workers)
			e.raw.SetMaxOpenConns(2 * workers)
			var claims, done, fencedN atomic.Int64
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						var sku string
						l, err := j.ClaimNext(ctx, e.raw, &sku)
						if errors.Is(err, claim.ErrNoJob) {
							if done.Load() == int64(b.N) {
								return
							}
							time.Sleep(time.Millisecond) // the last jobs are held or being released
							continue
						}
						if err != nil {
							b.Error(err)
							return
						}
						claims.Add(1)
						hctx := l.Context()
						tx, err := fenced.BeginTx(hctx, nil)
						if err == nil {
							_, err = tx.ExecContext(hctx, `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, sku)
							if err == nil {
								err = l.CompleteIn(ctx, tx)
							}
							if err == nil {
								err = tx.Commit()
							} else {
								tx.Rollback()
							}
						}
						switch {
						case err == nil:
							done.Add(1)
							l.Stop()
						case errors.Is(err, sqlfence.ErrFenced):
							fencedN.Add(1)
							if err := l.Release(ctx, 0); err != nil && !errors.Is(err, sqlfence.ErrFenced) {
								b.Error(err)
							}
						default:
							b.Error(err)
							l.Stop()
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if done.Load() != int64(b.N) {
				b.Fatalf("%d of %d jobs done", done.Load(), b.N)
			}
			if got := e.query(b, `SELECT sum(quantity) FROM inventory WHERE sku LIKE 'h%'`); got != fmt.Sprint(-b.N) {
				b.Fatalf("hot rows sum %s, want %d: an update was lost or doubled", got, -b.N)
			}
			b.ReportMetric(float64(claims.Load())/float64(b.N), "claims/job")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(fencedN.Load())/float64(b.N), "fenced/job")
		})
	}
}
