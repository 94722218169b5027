package claim_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/claim"
)

// BenchmarkEpochSources: 8 workers claim and complete jobs, one epoch source
// at a time: what CounterEpoch's one row costs against a sequence, and what
// drawing above the timeline (and committing synchronously) costs against the
// epochs before timelines, each pair run side by side.
//
//	go test ./claim -run '^$' -bench EpochSources -benchtime 3000x -count 5
func BenchmarkEpochSources(b *testing.B) {
	for _, src := range []claim.EpochSource{claim.GlobalEpoch, claim.PerJobEpoch, claim.CounterEpoch} {
		for _, format := range []string{"timeline", "before_timelines"} {
			b.Run(src.String()+"/"+format, func(b *testing.B) {
				cfg := claim.JobsConfig{Epochs: src, RenewEvery: -1}
				j, err := claim.NewJobs(cfg)
				if format == "before_timelines" {
					j, err = claim.NewJobsBeforeTimelines(cfg)
				}
				if err != nil {
					b.Fatal(err)
				}
				benchClaims(b, j)
			})
		}
	}
}

func benchClaims(b *testing.B, j *claim.Jobs) {
	const workers = 8
	e := newEnv(b, j.Schema())
	e.exec(b, `INSERT INTO jobs SELECT FROM generate_series(1, $1)`, b.N)
	e.raw.SetMaxOpenConns(workers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				l, err := j.ClaimNext(ctx, e.raw)
				if errors.Is(err, claim.ErrNoJob) {
					return
				}
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Complete(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
}
