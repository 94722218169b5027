package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/outbox"
)

// BenchmarkRelay: one relay delivers b.N messages over HTTP to a loopback
// receiver that answers at once, with 1 and 4 concurrent sends.
//
//	go test ./outbox -run '^$' -bench Relay -benchtime 2000x
func BenchmarkRelay(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e := newEnv(b, 30*time.Second)
			e.exec(b, `INSERT INTO sqlfence_outbox (key, topic, payload, job_table, job_id, step, epoch)
				SELECT 'k' || g, 't', '\x00'::bytea, 'jobs', g::text, 's', 1 FROM generate_series(1, $1) g`, b.N)
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rctx, stop := context.WithCancel(ctx)
			r := &outbox.Relay{DB: e.raw, Outbox: e.box, Send: (&outbox.HTTP{URL: srv.URL}).Send, Workers: workers,
				Poll: time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
			b.ResetTimer()
			start := time.Now()
			done := make(chan error)
			go func() { done <- r.Run(rctx) }()
			for e.query(b, `SELECT count(*) FROM sqlfence_outbox WHERE delivered_at IS NULL`) != "0" {
				time.Sleep(5 * time.Millisecond)
			}
			took := time.Since(start)
			stop()
			<-done
			b.ReportMetric(float64(b.N)/took.Seconds(), "msgs/s")
		})
	}
}
